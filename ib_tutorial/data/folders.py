"""Labelled image files on disk, and a deterministic stratified split of class folders.

Every real dataset of the book ends as an :class:`ImageFiles`: a list of
``(path, label)`` pairs read as RGB PIL images. Datasets that publish no split
(UC Merced, EuroSAT, a DTD folder without its ``labels/``) are split here, class by
class, reproducibly from a recorded seed.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from PIL import Image

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp"}
STRATIFIED_SPLITS = ("train", "test")


class ImageFiles(torch.utils.data.Dataset):
    """``(PIL RGB image, label)`` pairs from image files.

    Grayscale, palette and CMYK files are converted to RGB, so every item has three
    channels. ``fix_image`` (optional) is applied before ``transform``, e.g. a
    dataset's policy for images of an unexpected size.

    Attributes:
        samples: list of ``(path, label)``.
        classes: class names, indexed by label.
        targets: the label of every item.
        info: how the list was made (e.g. the split seed and fraction, a size policy).
    """

    def __init__(
        self,
        samples: list[tuple[Path, int]],
        classes: list[str],
        transform: Callable | None = None,
        fix_image: Callable[[Image.Image], Image.Image] | None = None,
        info: dict | None = None,
    ) -> None:
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
        try:
            with Image.open(path) as file:
                image = file.convert("RGB")
        except OSError as error:
            raise OSError(f"Cannot read image {path}: {error}. Delete the dataset folder and download it again.") from error
        if self.fix_image is not None:
            image = self.fix_image(image)
        return (image if self.transform is None else self.transform(image)), label


def class_folders(images: Path) -> dict[str, list[Path]]:
    """Image files per class under ``images/<class>/``; classes and files sorted by name."""
    classes = sorted(path for path in images.iterdir() if path.is_dir())
    return {
        folder.name: sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        for folder in classes
    }


def stratified_split(
    files_by_class: dict[str, list[Path]], split: str, train_fraction: float = 0.8, seed: int = 0
) -> list[tuple[Path, int]]:
    r"""The ``split`` (``"train"`` or ``"test"``) part of every class, as ``(path, label)``.

    Class :math:`c` (label = its position in ``files_by_class``) with :math:`n_c` files
    is shuffled by a generator seeded with ``(seed, c)``; its first
    :math:`\mathrm{round}(\text{train\_fraction}\cdot n_c)` files are train, the rest
    test. So the split is deterministic, balanced per class, the two parts are
    disjoint and cover every file, and adding a class does not move the others.
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
