"""The named subsets, ``SUBSETS``: which classes of which dataset each keeps, the folder it lies
in, and how its images are made; :func:`named_subset` looks one up for the loaders (``subset=``)
and for :mod:`ib_tutorial.data.subsets`, which writes a subset's folder.
"""
from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from .archives import DatasetNotFoundError
from .folders import TINY_IMAGENET_FOLDER, UNREADABLE, CorruptImageError, class_folders

BUILD_COMMAND = ("ib-tutorial subset build {name} "
                 "--source <folder holding the full download> --out <data root>")


@dataclass(frozen=True)
class Downscale:
    r"""Shrink an image so that its longer side is at most ``longer_side`` pixels.

    A :math:`w \times h` image with :math:`s = \text{longer\_side} / \max(w, h) < 1` becomes
    :math:`\mathrm{round}(s w) \times \mathrm{round}(s h)`, resampled with ``resample`` (a
    :class:`PIL.Image.Resampling` name) in its own mode, saved as baseline JPEG at ``quality``
    with Pillow's other defaults; an image within the bound is copied unchanged.
    """

    longer_side: int = 256
    resample: str = "bicubic"
    quality: int = 90

    def size(self, width: int, height: int) -> tuple[int, int]:
        scale = self.longer_side / max(width, height)
        if scale >= 1:
            return width, height
        return max(1, round(width * scale)), max(1, round(height * scale))

    def holds(self, path: Path) -> bool:
        """Whether the image at ``path`` is within the bound (an unreadable file counts as
        within: reading it raises, or ``skip_corrupt`` leaves it out)."""
        try:
            with Image.open(path) as image:
                return max(image.size) <= self.longer_side
        except UNREADABLE:
            return True

    def write(self, source: Path, target: Path) -> None:
        """Write ``source`` to ``target``, downscaled when larger than the bound;
        :class:`CorruptImageError` naming ``source`` when it cannot be decoded."""
        try:
            with Image.open(source) as image:
                size = self.size(*image.size)
                resized = None if size == image.size else image.resize(size, Image.Resampling[self.resample.upper()])
        except UNREADABLE as error:
            raise CorruptImageError(f"Cannot read {source} ({type(error).__name__}: {error}): the download is "
                                    "damaged. Delete the dataset's folder, download it again, and build again.") from error
        if resized is None:
            shutil.copyfile(source, target)
        else:
            resized.save(target, "JPEG", quality=self.quality)


@dataclass(frozen=True)
class Subset:
    """A named subset of a dataset: the classes it keeps and how its folder is made.

    ``content_sha256`` and ``content_files`` are the :func:`~ib_tutorial.data.subsets.folder_digest`
    and file count of the folder the committed runs used; ``train_files_sha256``, the
    :func:`~ib_tutorial.data.subsets.training_file_digest` of its training split, recognises a run
    given the folder without ``subset=``.
    """

    name: str  # what subset= takes
    dataset: str
    classes: tuple[str, ...]  # class identifiers in label order: Tiny ImageNet wnids, DTD folders
    folder: str  # under a data root, the one the dataset's loader reads
    description: str
    content_sha256: str
    content_files: int
    train_files_sha256: str
    downscale: Downscale | None = None  # None copies the files byte for byte

    def keep(self, available: Sequence[str], where: Path, fix: str) -> list[int]:
        """The positions in ``available`` (the classes found at ``where``) of this subset's
        classes; :class:`~ib_tutorial.data.DatasetNotFoundError` naming the missing ones and ``fix``."""
        missing = [name for name in self.classes if name not in available]
        if missing:
            raise DatasetNotFoundError(
                f"Subset {self.name!r} of {self.dataset}: {where} lacks {len(missing)} of its "
                f"{len(self.classes)} classes ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}); "
                f"it has {len(available)}. {fix}")
        return [list(available).index(name) for name in self.classes]

    def built_classes(self, images: Path) -> dict[str, list[Path]]:
        """The image files of each of this subset's classes in a built subset's ``images/<class>/``;
        :class:`~ib_tutorial.data.DatasetNotFoundError`, giving the build command, when ``images`` is
        missing, lacks a class, or holds an image larger than :class:`Downscale` allows."""
        build = "Build the subset's folder once from the full download: " + BUILD_COMMAND.format(name=self.name)
        if not images.is_dir():
            raise DatasetNotFoundError(f"Subset {self.name!r} of {self.dataset}: no folder {images}. {build}")
        available = class_folders(images)
        self.keep(list(available), images, build)
        files = {name: available[name] for name in self.classes}
        if oversized := [path for name in self.classes for path in files[name]
                         if self.downscale is not None and not self.downscale.holds(path)]:
            raise DatasetNotFoundError(
                f"Subset {self.name!r}: {len(oversized)} images under {images} are larger than its "
                f"{self.downscale.longer_side} px, e.g. {oversized[0]}: that is the full-size {self.dataset}, "
                f"not the subset's downscaled images. {build}")
        return files


SUBSETS: dict[str, Subset] = {
    subset.name: subset for subset in (
        Subset(
            "tin20", "tiny-imagenet",
            ("n02124075", "n04067472", "n04540053", "n04099969", "n07749582",
             "n01641577", "n02802426", "n09246464", "n07920052", "n03970156",
             "n01698640", "n02074367", "n02268443", "n02699494", "n02917067",
             "n03255030", "n03763968", "n04070727", "n04398044", "n07615774"),
            TINY_IMAGENET_FOLDER,
            "Tiny ImageNet, 20 classes: 10,000 train and 1,000 val images, the original 64 px files",
            "c4ebd05ca00afe0dbbac3288175a3dc0a104bf588b59aa846458c79390d062b0", 11_023,
            "e51079725fc7bd20e9c029eb0062619c5f54e1935b634d89c04f520f2681558a",
        ),
        Subset(
            "dtd6", "dtd",
            ("banded", "blotchy", "braided", "bubbly", "bumpy", "chequered"),
            "dtd",
            "DTD, 6 classes x 120 images, downscaled to a longer side of at most 256 px (bicubic, JPEG 90)",
            "37b30691266d246f17e823ab5aff6d937b8280d0400a9820a10d2ec35165928b", 720,
            "fb52ced24bbe22ef0fb65dbd7644c4ca4b4b8226f3412bbe86c0495bf5bd3f50",
            Downscale(longer_side=256, resample="bicubic", quality=90),
        ),
    )
}


def named_subset(name: str, dataset: str | None = None) -> Subset:
    """The subset called ``name`` (of ``dataset``, when given); ``ValueError`` naming the known ones."""
    known = [s.name for s in SUBSETS.values() if dataset in (None, s.dataset)]
    if name not in known:
        of = f" of {dataset}" if dataset else ""
        raise ValueError(f"Unknown subset {name!r}{of}; known: {', '.join(known) or 'none'}.")
    return SUBSETS[name]
