"""Unreadable image files inside a dataset, for every dataset read from image files:
a clear error naming the file, in the main process even from DataLoader workers; with
``skip_corrupt=True`` they are left out, counted and named, and the split is unchanged."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torchvision
from archive_builders import (
    DTD_CLASSES,
    dtd_tar,
    eurosat_zip,
    image_bytes,
    served,
    tiny_imagenet_zip,
    uc_merced_zip,
)
from PIL import Image
from shared_data import DTD_SAMPLE, TINY_SAMPLE, needs

from ib_tutorial.data import (
    CorruptImageError,
    check_dataset_options,
    get_dataset,
    tiny_imagenet,
    torchvision_sets,
    uc_merced,
)
from ib_tutorial.data.folders import CORRUPT_SHOWN
from ib_tutorial.data.spec import parse_spec

REPOSITORY = Path(__file__).resolve().parents[2]
FOLDER_DATASETS = ("tiny-imagenet", "uc-merced", "dtd", "eurosat")

pytestmark = pytest.mark.filterwarnings("ignore:.*not the official 200")  # the builders' Tiny ImageNet is a subset


def texture_folder(base: Path, per_class: int = 5) -> Path:
    """A folder of ``images/<class>/*.jpg``, as the DTD ``folder`` option and any generic folder."""
    for label, name in enumerate(DTD_CLASSES):
        (base / "images" / name).mkdir(parents=True)
        for n in range(per_class):
            (base / "images" / name / f"{name}_{n:04d}.jpg").write_bytes(image_bytes((80 * label, 30 * n, 0), (48, 40)))
    return base


def tiny_imagenet_layout(tmp_path, monkeypatch):
    monkeypatch.setattr(tiny_imagenet, "ARCHIVE", served(tiny_imagenet_zip(tmp_path / "server" / "tiny-imagenet-200.zip")))
    return lambda split, **options: get_dataset("tiny-imagenet", split, root=tmp_path / "data", download=True, **options)


def uc_merced_layout(tmp_path, monkeypatch):
    monkeypatch.setattr(uc_merced, "ARCHIVE", served(uc_merced_zip(tmp_path / "server" / "UCMerced_LandUse.zip")))
    return lambda split, **options: get_dataset("uc-merced", split, root=tmp_path / "data", download=True, **options)


def dtd_partition_layout(tmp_path, monkeypatch):
    archive, _ = dtd_tar(tmp_path / "server" / "dtd-r1.0.1.tar.gz")
    monkeypatch.setattr(torchvision.datasets.DTD, "_URL", archive.as_uri())
    monkeypatch.setattr(torchvision.datasets.DTD, "_MD5", served(archive).md5)
    return lambda split, **options: get_dataset("dtd", split, root=tmp_path / "data", download=True, **options)


def dtd_folder_layout(tmp_path, monkeypatch):
    folder = texture_folder(tmp_path / "textures")
    return lambda split, **options: get_dataset("dtd", split, folder=folder, **options)


def eurosat_layout(tmp_path, monkeypatch):
    monkeypatch.setattr(torchvision_sets, "EUROSAT_ARCHIVE", served(eurosat_zip(tmp_path / "server" / "EuroSAT.zip")))
    return lambda split, **options: get_dataset("eurosat", split, root=tmp_path / "data", download=True, **options)


LAYOUTS = {  # layout -> (how to make it, the split to damage, another split of the same files)
    "tiny-imagenet train": (tiny_imagenet_layout, "train", "val"),
    "tiny-imagenet val": (tiny_imagenet_layout, "val", "train"),
    "uc-merced": (uc_merced_layout, "train", "test"),
    "dtd partition": (dtd_partition_layout, "train", "test"),
    "dtd folder": (dtd_folder_layout, "train", "test"),
    "eurosat": (eurosat_layout, "train", "test"),
}

DAMAGE = {
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
    "zero bytes": lambda path: path.write_bytes(b""),
    "text with an image name": lambda path: path.write_text("<html><body>404 Not Found</body></html>\n"),
}


def damage(samples) -> dict[Path, str]:
    """Damage the first, a middle and the last file of ``samples``, one way each."""
    paths = [samples[0][0], samples[len(samples) // 2][0], samples[-1][0]]
    for path, how in zip(paths, DAMAGE.values()):
        how(path)
    return dict(zip(paths, DAMAGE))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_unreadable_image_is_an_error_naming_the_file_and_the_fixes(tmp_path, monkeypatch, layout):
    make, split, _ = LAYOUTS[layout]
    load = make(tmp_path, monkeypatch)
    bad = damage(load(split).samples)
    dataset = load(split)
    for index, (path, _) in enumerate(dataset.samples):
        if path not in bad:
            assert dataset[index][0].mode == "RGB"
            continue
        with pytest.raises(CorruptImageError) as error:
            dataset[index]
        message = str(error.value)
        assert str(path) in message, bad[path]
        assert "skip_corrupt=True" in message and "download=True" in message
        assert isinstance(error.value, OSError)  # what code catching PIL's errors already expects


@pytest.mark.parametrize("layout", LAYOUTS)
def test_skip_corrupt_leaves_them_out_counts_them_and_keeps_the_split(tmp_path, monkeypatch, layout):
    make, split, other = LAYOUTS[layout]
    load = make(tmp_path, monkeypatch)
    clean, clean_other = load(split), load(other)
    bad = damage(clean.samples)

    with pytest.warns(UserWarning, match="skip_corrupt=True: left out 3 unreadable image file") as caught:
        skipping = load(split, skip_corrupt=True)
    warning = next(w for w in caught if "left out" in str(w.message))
    assert all(str(path) in str(warning.message) for path in bad)
    assert f"keeping {len(clean) - 3}" in str(warning.message)
    assert warning.filename == __file__  # points at the line that asked for the dataset

    assert skipping.corrupt_files == [path for path, _ in clean.samples if path in bad]
    assert skipping.samples == [sample for sample in clean.samples if sample[0] not in bad]
    assert skipping.classes == clean.classes
    assert all(image.mode == "RGB" for image, _ in skipping)
    # Files are left out after the split: the other split holds exactly the files it held before.
    assert load(other, skip_corrupt=True).samples == clean_other.samples


def test_without_damage_skip_corrupt_changes_nothing_and_says_nothing(tmp_path, monkeypatch, recwarn):
    load = dtd_folder_layout(tmp_path, monkeypatch)
    assert load("train", skip_corrupt=True).samples == load("train").samples
    assert load("train", skip_corrupt=True).corrupt_files == []
    assert not [w for w in recwarn if "left out" in str(w.message)]


def test_the_warning_names_the_first_few_and_the_count_of_many(tmp_path):
    folder = texture_folder(tmp_path / "textures")
    clean = get_dataset("dtd", "train", folder=folder)
    for path, _ in clean.samples[:8]:
        path.write_bytes(b"")
    with pytest.warns(UserWarning, match=rf"left out 8 unreadable image file\(s\), keeping {len(clean) - 8}") as caught:
        skipping = get_dataset("dtd", "train", folder=folder, skip_corrupt=True)
    message = str(next(w for w in caught if "left out" in str(w.message)).message)
    named = [path for path, _ in clean.samples[:8] if str(path) in message]
    assert named == [path for path, _ in clean.samples[:CORRUPT_SHOWN]] and ", ..." in message
    assert len(skipping.corrupt_files) == 8


def test_skip_corrupt_is_an_option_of_every_dataset_read_from_image_files():
    for name in FOLDER_DATASETS:
        check_dataset_options(name, {"skip_corrupt": True})
    assert parse_spec("dtd:folder=dtd,skip_corrupt=True") == ("dtd", {"folder": "dtd", "skip_corrupt": True})
    for name, split in (("cifar100", "train"), ("synthetic-objects", "train")):
        with pytest.raises(ValueError, match=r"does not take option\(s\) skip_corrupt"):
            get_dataset(name, split, skip_corrupt=True)


DATALOADER_SCRIPT = """
import sys
import torch
from torchvision.transforms import PILToTensor
from ib_tutorial.data import get_dataset

folder = sys.argv[1]
skipping = get_dataset("dtd", "train", folder=folder, transform=PILToTensor(), skip_corrupt=True)
seen = sum(len(labels) for _, labels in torch.utils.data.DataLoader(skipping, batch_size=2, num_workers=2))
print(f"skipping: {seen} of {len(skipping)} images", flush=True)
for _ in torch.utils.data.DataLoader(get_dataset("dtd", "train", folder=folder, transform=PILToTensor()),
                                     batch_size=2, num_workers=2):
    pass
"""


def test_a_dataloader_worker_passes_the_error_to_the_main_process(tmp_path):
    """In a child process with a time limit, so that a hang fails the test instead of the run."""
    folder = texture_folder(tmp_path / "textures")
    bad = get_dataset("dtd", "train", folder=folder).samples[5][0]
    bad.write_text("not an image\n")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPOSITORY), os.environ.get("PYTHONPATH", "")])}
    try:
        child = subprocess.run([sys.executable, "-c", DATALOADER_SCRIPT, str(folder)], cwd=REPOSITORY, env=environment,
                               capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("a DataLoader with 2 workers hung on an unreadable image instead of raising")
    assert "skipping: 11 of 11 images" in child.stdout, child.stderr
    assert child.returncode != 0
    assert "CorruptImageError" in child.stderr and "DataLoader worker" in child.stderr
    assert f"Cannot read image {bad}" in child.stderr and "skip_corrupt=True" in child.stderr


# --- the real samples ----------------------------------------------------------------
needs_samples = needs(TINY_SAMPLE, DTD_SAMPLE)


@needs_samples
def test_the_real_samples_decode_completely(tmp_path):
    (tmp_path / "tiny-imagenet-200").symlink_to(TINY_SAMPLE, target_is_directory=True)
    sizes = {}
    for name, split, options in (("tiny-imagenet", "train", {"root": tmp_path}), ("tiny-imagenet", "val", {"root": tmp_path}),
                                 ("dtd", "train", {"folder": DTD_SAMPLE}), ("dtd", "test", {"folder": DTD_SAMPLE})):
        dataset = get_dataset(name, split, skip_corrupt=True, **options)
        assert dataset.corrupt_files == []
        sizes[name, split] = len(dataset)
    assert sizes[("tiny-imagenet", "train")] == 400 and sizes[("tiny-imagenet", "val")] == 100
    assert sizes[("dtd", "train")] + sizes[("dtd", "test")] == 80


@needs_samples
def test_a_real_jpeg_cut_short_passes_verify_but_not_the_check(tmp_path):
    """Why the check decodes: PIL's verify() reads a JPEG's headers only."""
    images = tmp_path / "textures" / "images"
    for original in sorted((DTD_SAMPLE / "images").glob("*/*.jpg")):
        (images / original.parent.name).mkdir(parents=True, exist_ok=True)
        (images / original.parent.name / original.name).symlink_to(original)
    cut = sorted(images.glob("*/*.jpg"))[0]
    data = cut.read_bytes()
    cut.unlink()
    cut.write_bytes(data[: len(data) * 6 // 10])
    with Image.open(cut) as file:
        file.verify()  # passes

    split = next(s for s in ("train", "test") if cut in {p for p, _ in get_dataset("dtd", s, folder=images.parent).samples})
    dataset = get_dataset("dtd", split, folder=images.parent)
    with pytest.raises(CorruptImageError, match="truncated"):
        dataset[[p for p, _ in dataset.samples].index(cut)]
    with pytest.warns(UserWarning, match="left out 1 unreadable"):
        skipping = get_dataset("dtd", split, folder=images.parent, skip_corrupt=True)
    assert skipping.corrupt_files == [cut] and len(skipping) == len(dataset) - 1
