"""Image folders on disk: the layouts and class list of the datasets named subsets are made of
(here, so that the loaders and :mod:`ib_tutorial.data.subsets` share them without importing each
other), labelled image files, and stratified splits.

Every real dataset ends as an :class:`ImageFiles` of ``(path, label)`` pairs read as RGB;
datasets that publish no split are split here, class by class, from a recorded seed. An
unreadable file raises :class:`CorruptImageError`, naming the file and the fixes; with
``skip_corrupt=True`` every file of the split is decoded once (PIL's ``verify()`` passes a JPEG
cut in half), after the split, and those that fail are left out with one warning.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..command_line import argument
from .archives import DatasetNotFoundError

TINY_IMAGENET_FOLDER = "tiny-imagenet-200"
TINY_IMAGENET_REQUIRED = ("wnids.txt", "words.txt", "train", "val/images", "val/val_annotations.txt")
TINY_IMAGENET_LAYOUT = """  <root>/tiny-imagenet-200/
      wnids.txt                      one WordNet id per line: the class order
      words.txt                      <wnid><TAB><names>
      train/<wnid>/images/*.JPEG     500 per class
      val/images/val_<n>.JPEG        all 10,000 in one folder
      val/val_annotations.txt        <file><TAB><wnid><TAB><box>"""

DTD_LAYOUT = """  <root>/dtd/dtd/
      images/<class>/<class>_NNNN.jpg
      labels/{train,val,test}<1..10>.txt    the ten official partitions
  (a folder with images/ but no labels/: pass folder=<that folder> for a stratified split)"""
DTD_FOLDER_LAYOUT = """  <folder>/images/<class>/*.jpg      (labels/ not needed)"""

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp"}
STRATIFIED_SPLITS = ("train", "test")
# What PIL raises for a file it cannot decode; a corrupt header may claim an enormous
# size, which PIL refuses with DecompressionBombError (not an OSError).
UNREADABLE = (OSError, Image.DecompressionBombError)
CORRUPT_SHOWN = 5  # paths the skip warning names before "..."


def read_classes(folder: Path) -> tuple[list[str], list[str]]:
    """The WordNet ids in ``wnids.txt`` order, and each one's first name in ``words.txt``."""
    wnids = [line.strip() for line in (folder / "wnids.txt").read_text().splitlines() if line.strip()]
    names = {}
    for line in (folder / "words.txt").read_text().splitlines():
        wnid, _, words = line.partition("\t")
        names[wnid] = words.split(",")[0].strip()
    if missing := [wnid for wnid in wnids if wnid not in names]:
        raise DatasetNotFoundError(f"{folder / 'words.txt'} has no names for: {', '.join(missing[:5])}.")
    return wnids, [names[wnid] for wnid in wnids]


class CorruptImageError(OSError):
    """An image file PIL cannot decode: truncated, empty, or not an image."""


def read_rgb(path: Path) -> Image.Image:
    """The image at ``path`` as RGB, or :class:`CorruptImageError` naming the file and the fixes."""
    try:
        with Image.open(path) as file:
            return file.convert("RGB")
    except UNREADABLE as error:
        raise CorruptImageError(
            f"Cannot read image {path} ({type(error).__name__}: {error}). Delete or replace that file "
            f"(for a downloaded dataset: remove its folder and call again with {argument('download')}), "
            "or pass skip_corrupt=True to get_dataset to leave unreadable files out."
        ) from error


def unreadable_files(paths: Sequence[Path]) -> list[Path]:
    """The files among ``paths`` that PIL cannot decode completely."""
    bad = []
    for path in paths:
        try:
            with Image.open(path) as file:
                file.load()
        except UNREADABLE:
            bad.append(path)
    return bad


class ImageFiles(torch.utils.data.Dataset):
    """``(PIL RGB image, label)`` pairs from the files of ``samples``, ``(path, label)``.

    ``fix_image`` (e.g. a dataset's policy for images of an unexpected size) is applied before
    ``transform``; ``corrupt_files`` holds the files ``skip_corrupt`` left out; ``info`` says how
    the list was made (e.g. the split seed and fraction, a size policy).
    """

    def __init__(self, samples: list[tuple[Path, int]], classes: list[str], transform: Callable | None = None,
                 fix_image: Callable[[Image.Image], Image.Image] | None = None, info: dict | None = None,
                 skip_corrupt: bool = False) -> None:
        self.corrupt_files = unreadable_files([path for path, _ in samples]) if skip_corrupt else []
        if self.corrupt_files:
            skipped = set(self.corrupt_files)
            samples = [(path, label) for path, label in samples if path not in skipped]
            shown = ", ".join(str(path) for path in self.corrupt_files[:CORRUPT_SHOWN])
            more = ", ..." if len(self.corrupt_files) > CORRUPT_SHOWN else ""
            warnings.warn(
                f"skip_corrupt=True: left out {len(self.corrupt_files)} unreadable image file(s), "
                f"keeping {len(samples)}: {shown}{more} (all in the dataset's corrupt_files). "
                "Delete or re-download them to use the whole dataset.",
                stacklevel=4,  # ImageFiles <- dataset loader <- get_dataset <- its caller
            )
        self.samples = samples
        self.classes = classes
        self.transform = transform
        self.fix_image = fix_image
        self.info = info or {}

    @property
    def targets(self) -> list[int]:
        return [label for _, label in self.samples]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        path, label = self.samples[index]
        image = read_rgb(path)
        if self.fix_image is not None:
            image = self.fix_image(image)
        return (image if self.transform is None else self.transform(image)), label


def class_folders(images: Path) -> dict[str, list[Path]]:
    """Image files per class under ``images/<class>/``; classes and files sorted by name."""
    classes = sorted(path for path in images.iterdir() if path.is_dir())
    return {folder.name: sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            for folder in classes}


def stratified_split(files_by_class: dict[str, list[Path]], split: str, train_fraction: float = 0.8,
                     seed: int = 0) -> list[tuple[Path, int]]:
    r"""The ``split`` (``"train"`` or ``"test"``) part of every class, as ``(path, label)``.

    Class :math:`c` (label = its position in ``files_by_class``) is shuffled by a generator
    seeded with ``(seed, c)``; its first :math:`\mathrm{round}(\text{train\_fraction}\cdot n_c)`
    files are train, the rest test, so adding a class does not move the others.
    """
    if split not in STRATIFIED_SPLITS:
        raise ValueError(f"Unknown split {split!r}; a stratified split offers: {', '.join(STRATIFIED_SPLITS)}.")
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must lie strictly between 0 and 1, got {train_fraction}.")
    samples = []
    for label, files in enumerate(files_by_class.values()):
        order = np.random.default_rng([seed, label]).permutation(len(files))
        cut = round(train_fraction * len(files))
        chosen = order[:cut] if split == "train" else order[cut:]
        samples.extend((files[i], label) for i in sorted(chosen))
    return samples
