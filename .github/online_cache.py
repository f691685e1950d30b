"""What the online book build caches between runs: the data sets' archives and the published
ViTs' weight files, nothing extracted and no run folder (the package extracts an archive it
finds, after checking its MD5, and profiles are made afresh).

    python .github/online_cache.py plan      # paths=..., and base=: a digest of the archives'
                                             # MD5s and the models' hub ids
    python .github/online_cache.py present   # key=<base>-<digest of what is on disk now>

Both print GitHub step outputs. The workflow restores the newest entry under ``base`` and,
after the downloads, saves under ``present``'s key only when what is on disk differs from
what was restored, so that a download that failed once is saved by the next run that
succeeds, instead of being missing from the cache for as long as its ``base`` holds.
"""
import hashlib
import sys
from pathlib import Path

from huggingface_hub.constants import HF_HUB_CACHE
from timm.models import get_pretrained_cfg
from torchvision.datasets import CIFAR100, DTD

from ib_tutorial.data import tiny_imagenet, uc_merced
from ib_tutorial.models import PUBLISHED_VIT_SMALL
from ib_tutorial.files import data_root


def archives() -> dict[Path, str]:
    """Each archive of the online build, where its loader looks for it, and its MD5."""
    root = data_root()
    return {
        root / CIFAR100.filename: CIFAR100.tgz_md5,
        root / tiny_imagenet.ARCHIVE.filename: tiny_imagenet.ARCHIVE.md5,
        root / uc_merced.ARCHIVE.filename: uc_merced.ARCHIVE.md5,
        root / "dtd" / Path(DTD._URL).name: DTD._MD5,
    }


def digest(lines) -> str:
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()[:16]


def weight_folders() -> list[Path]:
    """The hub cache's folder of each published model (``models--<owner>--<name>``)."""
    hub_ids = [get_pretrained_cfg(model).hf_hub_id for model in PUBLISHED_VIT_SMALL]
    return [Path(HF_HUB_CACHE) / ("models--" + hub_id.replace("/", "--")) for hub_id in hub_ids]


def base() -> str:
    hub_ids = [folder.name for folder in weight_folders()]
    return "online-" + digest([f"{path.name} {md5}" for path, md5 in archives().items()] + hub_ids)


def present() -> str:
    """The archives on disk and the weight files in the hub cache, named by their checksums
    (the hub names each file's blob by its SHA-256)."""
    found = [path.name for path in archives() if path.is_file()]
    found += [blob.name for folder in weight_folders() for blob in (folder / "blobs").glob("*") if blob.is_file()]
    return f"{base()}-{digest(found)}"


if __name__ == "__main__":
    if sys.argv[1:] == ["plan"]:
        paths = [*map(str, archives()), *map(str, weight_folders())]
        print("paths<<END\n" + "\n".join(paths) + "\nEND")
        print(f"base={base()}")
    elif sys.argv[1:] == ["present"]:
        print(f"key={present()}")
    else:
        sys.exit(__doc__)
