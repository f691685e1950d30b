"""Tiny ImageNet (Stanford CS231n): 200 classes, 64 x 64 px, 100,000 train and 10,000 val.

Moderately object-centric: ImageNet photographs of one object class each, cropped and
downsampled. The test split has no published labels, so only ``train`` and ``val`` are offered.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

from ..files import data_root
from .archives import DatasetNotFoundError, RemoteArchive, prepare
from .folders import TINY_IMAGENET_FOLDER, TINY_IMAGENET_LAYOUT, TINY_IMAGENET_REQUIRED, ImageFiles, read_classes
from .subsets import named_subset

ARCHIVE = RemoteArchive(filename="tiny-imagenet-200.zip",
                        md5="90528d7ca1a48142e341f4ef8d21d0de",
                        urls=("http://cs231n.stanford.edu/tiny-imagenet-200.zip",))
OFFICIAL_CLASSES = 200


def train_samples(folder: Path, wnids: list[str]) -> list[tuple[Path, int]]:
    """Every ``train/<wnid>/images/*.JPEG``, labelled by the wnid's position."""
    samples = []
    for label, wnid in enumerate(wnids):
        images = folder / "train" / wnid / "images"
        if not images.is_dir():
            raise DatasetNotFoundError(f"Tiny ImageNet: missing {images}. Expected layout:\n{TINY_IMAGENET_LAYOUT}")
        samples.extend((path, label) for path in sorted(images.glob("*.JPEG")))
    return samples


def val_samples(folder: Path, wnids: list[str], other_classes: bool = False) -> list[tuple[Path, int]]:
    """The images named in ``val/val_annotations.txt``, labelled by their wnid; one of a class not
    in ``wnids`` is an error, or left out when ``other_classes`` (``wnids`` is a subset)."""
    label_of = {wnid: label for label, wnid in enumerate(wnids)}
    annotations = folder / "val" / "val_annotations.txt"
    samples = []
    for number, line in enumerate(annotations.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        name, wnid = line.split("\t")[:2]
        if wnid not in label_of:
            if other_classes:
                continue
            raise DatasetNotFoundError(f"{annotations}, line {number}: {wnid} is not in wnids.txt.")
        samples.append((folder / "val" / "images" / name, label_of[wnid]))
    if missing := [str(path) for path, _ in samples if not path.exists()]:
        raise DatasetNotFoundError(f"{len(missing)} annotated val images are missing, e.g. {missing[0]}.")
    return samples


def load(split: str, root=None, download: bool = False, transform: Callable | None = None, *,
         skip_corrupt: bool = False, subset: str | None = None) -> ImageFiles:
    """Tiny ImageNet ``train`` or ``val``; ``subset`` (e.g. ``"tin20"``) keeps that subset's
    classes, in its order, of a full download or of a built subset folder alike."""
    folder = prepare(ARCHIVE, data_root(root), TINY_IMAGENET_FOLDER, TINY_IMAGENET_REQUIRED, download, "Tiny ImageNet",
                     TINY_IMAGENET_LAYOUT)
    wnids, names = read_classes(folder)
    if subset is not None:
        keep = named_subset(subset, "tiny-imagenet").keep(
            wnids, folder / "wnids.txt", f"Point root at the full Tiny ImageNet download or at a built {subset!r} folder.")
        wnids, names = [wnids[i] for i in keep], [names[i] for i in keep]
    elif len(wnids) != OFFICIAL_CLASSES:
        warnings.warn(f"{folder / 'wnids.txt'} lists {len(wnids)} classes, not the official {OFFICIAL_CLASSES}: "
                      f"this is a {'subset' if len(wnids) < OFFICIAL_CLASSES else 'superset'} of Tiny ImageNet, "
                      "and accuracies on it are not comparable with published ones.",
                      stacklevel=3)
    samples = train_samples(folder, wnids) if split == "train" else val_samples(folder, wnids, subset is not None)
    info = {"wnids": wnids, "folder": str(folder), "num_classes": len(wnids), "subset": subset}
    return ImageFiles(samples, names, transform, info=info, skip_corrupt=skip_corrupt)
