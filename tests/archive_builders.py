"""Tiny archives in the real on-disk layouts of the published datasets, for the tests,
and a snapshot of a folder to show that a refused operation changed nothing on disk."""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

from ib_tutorial.data.archives import RemoteArchive, md5_of


def image_bytes(colour, size=(64, 64), mode="RGB", fmt="JPEG") -> bytes:
    buffer = io.BytesIO()
    fill = colour if mode == "RGB" else colour[0]
    Image.new(mode, size, fill).save(buffer, format=fmt)
    return buffer.getvalue()


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    """A zip of ``members``, the same bytes whenever it is built: each entry carries a fixed
    time, not the clock's, so a test that builds an archive twice gets one checksum."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return path


def write_tar(path: Path, members: dict[str, bytes], symlinks: dict[str, str] | None = None) -> Path:
    """A ``.tar.gz`` of ``members`` and ``symlinks``, the same bytes whenever it is built (the
    gzip header's time is fixed, as :func:`write_zip`'s entries' are)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(path, "wb", mtime=0) as packed, tarfile.open(fileobj=packed, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    return path


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: relative path -> MD5 of a file, "dir", the target of
    a link (not followed), or "special" (a FIFO or device is never opened)."""
    def describe(path: Path) -> str:
        if path.is_symlink():
            return f"link to {os.readlink(path)}"
        if path.is_dir():
            return "dir"
        return hashlib.md5(path.read_bytes()).hexdigest() if path.is_file() else "special"

    return {str(path.relative_to(folder)): describe(path) for path in sorted(folder.rglob("*"))}


def served(path: Path) -> RemoteArchive:
    """The archive at ``path`` as a download: a file:// URL and its true MD5."""
    return RemoteArchive(path.name, md5_of(path), (path.resolve().as_uri(),))


# --- Tiny ImageNet -------------------------------------------------------------------
TINY_WNIDS = ["n09246464", "n01641577", "n07749582"]  # deliberately not sorted
TINY_WORDS = {
    "n01641577": "bullfrog, Rana catesbeiana",
    "n07749582": "lemon",
    "n09246464": "cliff, drop, drop-off",
    "n02124075": "Egyptian cat",  # words.txt lists all of ImageNet, not just the 200
}
TINY_VAL = [("val_0.JPEG", "n07749582"), ("val_1.JPEG", "n09246464"), ("val_2.JPEG", "n01641577"),
            ("val_3.JPEG", "n09246464"), ("val_4.JPEG", "n07749582"), ("val_5.JPEG", "n01641577")]
TINY_GRAYSCALE = "tiny-imagenet-200/train/n01641577/images/n01641577_1.JPEG"


def tiny_imagenet_zip(path: Path, train_per_class: int = 3) -> Path:
    top = "tiny-imagenet-200"
    members = {
        f"{top}/wnids.txt": "".join(f"{wnid}\n" for wnid in TINY_WNIDS).encode(),
        f"{top}/words.txt": "".join(f"{wnid}\t{words}\n" for wnid, words in TINY_WORDS.items()).encode(),
        f"{top}/test/images/test_0.JPEG": image_bytes((0, 0, 0)),
    }
    for label, wnid in enumerate(TINY_WNIDS):
        boxes = []
        for n in range(train_per_class):
            name = f"{top}/train/{wnid}/images/{wnid}_{n}.JPEG"
            grey = name == TINY_GRAYSCALE
            members[name] = image_bytes((40 * label, 100, 200), mode="L" if grey else "RGB")
            boxes.append(f"{wnid}_{n}.JPEG\t0\t0\t63\t63\n")
        members[f"{top}/train/{wnid}/{wnid}_boxes.txt"] = "".join(boxes).encode()
    for name, wnid in TINY_VAL:
        members[f"{top}/val/images/{name}"] = image_bytes((200, 40 * TINY_WNIDS.index(wnid), 0))
    members[f"{top}/val/val_annotations.txt"] = "".join(f"{name}\t{wnid}\t1\t2\t60\t61\n" for name, wnid in TINY_VAL).encode()
    return write_zip(path, members)


# --- UC Merced -----------------------------------------------------------------------
UC_CLASSES = ["agricultural", "beach", "forest"]
UC_ODD = ("beach", 3, (256, 253))  # class, index, size of the one image that is not 256 x 256


def uc_merced_zip(path: Path, per_class: int = 5) -> Path:
    members = {}
    for label, name in enumerate(UC_CLASSES):
        for n in range(per_class):
            size = UC_ODD[2] if (name, n) == UC_ODD[:2] else (256, 256)
            members[f"UCMerced_LandUse/Images/{name}/{name}{n:02d}.tif"] = image_bytes((80 * label, 10 * n, 0), size, fmt="TIFF")
    return write_zip(path, members)


# --- CIFAR-100 -----------------------------------------------------------------------
CIFAR_FINE_NAMES = [f"fine{k}" for k in range(100)]


class Python2Pickler(pickle._Pickler):
    """Writes ``bytes`` as Python 2 ``str`` (SHORT_BINSTRING / BINSTRING opcodes), as in
    the published CIFAR pickles, which Python 3 must read with ``encoding="latin1"``."""

    def save_python2_str(self, obj: bytes) -> None:
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    dispatch = {**pickle._Pickler.dispatch, bytes: save_python2_str}


def python2_pickle(content) -> bytes:
    buffer = io.BytesIO()
    Python2Pickler(buffer, protocol=2).dump(content)
    return buffer.getvalue()


def cifar100_tar(path: Path, train: int = 12, test: int = 5, seed: int = 0) -> tuple[Path, dict]:
    """A ``cifar-100-python.tar.gz`` with pickles as the real one; returns it and the
    torchvision class attributes that describe it."""
    rng = np.random.default_rng(seed)
    batches = {}
    for split, count in (("train", train), ("test", test)):
        batches[split] = {
            b"batch_label": split.encode(),
            b"filenames": [f"{split}_{i}.png".encode() for i in range(count)],
            b"fine_labels": rng.integers(0, 100, count).tolist(),
            b"coarse_labels": rng.integers(0, 20, count).tolist(),
            b"data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
        }
    meta = {b"fine_label_names": [n.encode() for n in CIFAR_FINE_NAMES],
            b"coarse_label_names": [f"coarse{k}".encode() for k in range(20)]}
    files = {name: python2_pickle(content) for name, content in (("train", batches["train"]), ("test", batches["test"]), ("meta", meta))}
    write_tar(path, {f"cifar-100-python/{name}": data for name, data in files.items()})
    digest = {name: hashlib.md5(data).hexdigest() for name, data in files.items()}
    attributes = {
        "url": path.resolve().as_uri(),
        "filename": path.name,
        "tgz_md5": md5_of(path),
        "train_list": [["train", digest["train"]]],
        "test_list": [["test", digest["test"]]],
        "meta": {"filename": "meta", "key": "fine_label_names", "md5": digest["meta"]},
    }
    return path, {"batches": batches, "attributes": attributes}


# --- EuroSAT and DTD -----------------------------------------------------------------
EUROSAT_CLASSES = ["AnnualCrop", "Forest", "River"]
DTD_CLASSES = ["banded", "dotted", "striped"]


def eurosat_zip(path: Path, per_class: int = 10) -> Path:
    members = {f"2750/{name}/{name}_{n + 1}.jpg": image_bytes((60 * label, 0, 9 * n))
               for label, name in enumerate(EUROSAT_CLASSES) for n in range(per_class)}
    return write_zip(path, members)


def dtd_tar(path: Path, per_class: int = 6) -> tuple[Path, dict[str, list[str]]]:
    """A ``dtd-r1.0.1.tar.gz`` with ``images/`` and partition-1 ``labels/``; returns it and
    the split lists written to the labels files."""
    members, splits = {}, {"train": [], "val": [], "test": []}
    for name in DTD_CLASSES:
        for n in range(per_class):
            relative = f"{name}/{name}_{n:04d}.jpg"
            members[f"dtd/images/{relative}"] = image_bytes((0, 40 * n, 200), (300, 320))
            splits[("train", "train", "val", "val", "test", "test")[n % 6]].append(relative)
    for split, lines in splits.items():
        members[f"dtd/labels/{split}1.txt"] = "".join(f"{line}\n" for line in lines).encode()
    return write_tar(path, members), splits


# --- a data root ----------------------------------------------------------------------
def real_subsets_root(folder: Path, seed: int = 0) -> Path:
    """A data root like ``../shared/data/real``: Tiny ImageNet (the layout of
    :func:`tiny_imagenet_zip`) and ``dtd/images/`` (of :func:`dtd_tar`), every image
    replaced by seeded noise of its size and mode, so that no two images are alike (the
    profiles' TwoNN refuses duplicate points)."""
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(tiny_imagenet_zip(folder / "tiny.zip", train_per_class=8)) as archive:
        archive.extractall(folder)
    with tarfile.open(dtd_tar(folder / "dtd.tar.gz")[0]) as archive:
        archive.extractall(folder, filter="data")
    (folder / "tiny.zip").unlink()
    (folder / "dtd.tar.gz").unlink()
    rng = np.random.default_rng(seed)
    for path in sorted(folder.rglob("*")):
        if path.suffix.lower() in (".jpeg", ".jpg"):
            with Image.open(path) as image:
                mode, (width, height) = image.mode, image.size
            Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).convert(mode).save(path, "JPEG")
    return folder
