"""Named subsets of the real datasets: the table of them, building and checking their folders,
and what a run records of its data.

The book's real-image runs train on two subsets small enough for a CPU (:data:`SUBSETS`):
``tin20``, 20 of the 200 Tiny ImageNet classes with every original file, and ``dtd6``, 6 of the
47 DTD classes downscaled. A dataset option names one (``get_dataset("dtd", "train",
subset="dtd6")``, or the spec ``dtd:subset=dtd6``). ``tin20`` also reads a full Tiny ImageNet
download; ``dtd6`` is built once into a data root of its own::

    ib-tutorial subset build dtd6 --source ~/.cache/ib_tutorial --out ~/subsets

:func:`build_subset` writes a folder all or nothing; :func:`check_subset` compares its
:func:`folder_digest` with the committed runs'; :func:`main` is ``ib-tutorial subset``;
:func:`subset_record` is what a run records of its data.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import shutil
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from PIL import Image
from tqdm.auto import tqdm

from .archives import DatasetNotFoundError
from .folders import (DTD_LAYOUT, TINY_IMAGENET_FOLDER, TINY_IMAGENET_LAYOUT, TINY_IMAGENET_REQUIRED, UNREADABLE,
                      CorruptImageError, class_folders, read_classes)

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

    ``content_sha256`` and ``content_files`` are the :func:`folder_digest` and file
    count of the folder the committed runs used; ``train_files_sha256``, the
    :func:`training_file_digest` of its training split, recognises a run given the folder
    without ``subset=``.
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
        if missing := [name for name in self.classes if name not in available]:
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


def folder_digest(folder: Path, progress: bool = False) -> str:
    """SHA-256 (hex) of every file under ``folder`` and its path: the digest of the lines
    ``<sha256 of the file>  <path relative to folder>`` sorted by path, as
    ``cd folder && find . -type f -printf '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum`` prints it."""
    files = sorted((path.relative_to(folder).as_posix(), path) for path in folder.rglob("*") if path.is_file())
    lines = []
    for relative, path in tqdm(files, desc=f"digest {folder.name}", unit="file", disable=not progress):
        with open(path, "rb") as file:
            lines.append(f"{hashlib.file_digest(file, 'sha256').hexdigest()}  {relative}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


@dataclass(frozen=True)
class Plan:
    """What a subset folder holds: text files (relative path -> bytes) and files made from the
    source's (source file, relative path)."""

    texts: dict[str, bytes]
    files: list[tuple[Path, str]]


@dataclass(frozen=True)
class Built:
    """A subset's folder as :func:`build_subset` wrote it or :func:`check_subset` found it,
    and whether its :func:`folder_digest` is the one the subset records."""

    folder: Path
    files: int
    content_sha256: str
    matches: bool


def _source_folder(candidates: Sequence[Path], required: str, dataset: str, layout: str) -> Path:
    """The first candidate holding ``required``; else :class:`~ib_tutorial.data.DatasetNotFoundError` naming where it looked."""
    for folder in candidates:
        if (folder / required).exists():
            return folder
    looked = ", ".join(str(folder / required) for folder in candidates)
    raise DatasetNotFoundError(
        f"No full {dataset} download under the source (looked for {looked}). Expected layout:\n{layout}\n"
        f"Download it with get_dataset({dataset!r}, 'train', root=<source>, download=True) "
        "and pass that root as --source.")


def plan_tiny_imagenet(subset: Subset, source_root: Path) -> Plan:
    """The subset's ``tiny-imagenet-200/``: its classes' lines of ``wnids.txt``, ``words.txt`` and
    ``val/val_annotations.txt``, their ``train/<wnid>/`` files and val images, from
    ``<source_root>/tiny-imagenet-200`` or ``source_root``."""
    layout = TINY_IMAGENET_LAYOUT.replace("<root>", str(source_root))
    source = _source_folder([source_root / TINY_IMAGENET_FOLDER, source_root], "wnids.txt", "tiny-imagenet", layout)
    missing = [name for name in TINY_IMAGENET_REQUIRED if not (source / name).exists()]
    if missing:
        raise DatasetNotFoundError(f"Tiny ImageNet at {source} lacks {', '.join(missing)}. Expected layout:\n{layout}")
    listed, _ = read_classes(source)
    subset.keep(listed, source, "Pass the full Tiny ImageNet download (200 classes) as --source.")
    words = {line.split(b"\t")[0]: line for line in (source / "words.txt").read_bytes().splitlines(keepends=True)}
    texts = {
        "wnids.txt": "".join(f"{wnid}\n" for wnid in subset.classes).encode(),
        "words.txt": b"".join(words[wnid.encode()].rstrip(b"\n") + b"\n" for wnid in subset.classes),
    }
    files = [(path, path.relative_to(source).as_posix())
             for wnid in subset.classes for path in sorted((source / "train" / wnid).rglob("*")) if path.is_file()]
    wanted = {wnid.encode() for wnid in subset.classes}
    annotations = [line for line in (source / "val" / "val_annotations.txt").read_bytes().splitlines(keepends=True)
                   if line.split(b"\t")[1:2] and line.split(b"\t")[1] in wanted]
    texts["val/val_annotations.txt"] = b"".join(annotations)
    val = [(source / "val" / "images" / name, f"val/images/{name}")
           for name in (line.split(b"\t")[0].decode() for line in annotations)]
    absent = [str(path) for path, _ in val if not path.is_file()]
    if absent:
        raise DatasetNotFoundError(f"{len(absent)} annotated val images of the subset's classes are missing from "
                                   f"{source}, e.g. {absent[0]}. Extract the Tiny ImageNet archive again.")
    return Plan(texts, files + val)


def plan_dtd(subset: Subset, source_root: Path) -> Plan:
    """The subset's ``dtd/images/<class>/``: every image of its classes, named as in the
    source, the ``dtd/`` folder holding ``images/`` at ``<source_root>/dtd/dtd`` (where
    ``get_dataset("dtd", download=True)`` puts it), ``<source_root>/dtd`` or ``source_root``."""
    layout = DTD_LAYOUT.replace("<root>", str(source_root))
    source = _source_folder([source_root / "dtd" / "dtd", source_root / "dtd", source_root], "images", "dtd", layout)
    files_by_class = class_folders(source / "images")
    subset.keep(list(files_by_class), source / "images", "Pass the full DTD download (47 classes) as --source.")
    return Plan({}, [(path, f"images/{name}/{path.name}") for name in subset.classes for path in files_by_class[name]])


PLANS: dict[str, Callable[[Subset, Path], Plan]] = {"tiny-imagenet": plan_tiny_imagenet, "dtd": plan_dtd}


def build_subset(name: str, source_root: str | os.PathLike, target_root: str | os.PathLike,
                 progress: bool = True) -> Built:
    """Write subset ``name`` from the full download under ``source_root`` to its folder under
    the data root ``target_root``, copied byte for byte or through its :class:`Downscale`, all or
    nothing (via ``.<folder>.partial``). Warns when the result's :func:`folder_digest` is not the
    recorded one; ``FileExistsError`` when the target folder exists (it is never overwritten)."""
    subset = named_subset(name)
    source_root, target_root = Path(source_root).expanduser(), Path(target_root).expanduser()
    target = target_root / subset.folder
    refusal = (f"{target} exists; a subset is never built over an existing folder. "
               "Move it away, or pass another --out (a data root the subset's folder is made in).")
    if target.exists():
        raise FileExistsError(refusal)
    plan = PLANS[subset.dataset](subset, source_root)
    write = subset.downscale.write if subset.downscale else shutil.copyfile
    staging = target_root / f".{subset.folder}.partial"
    if staging.exists():
        shutil.rmtree(staging)  # an interrupted build of ours: redo it, do not trust it
    staging.mkdir(parents=True)
    try:
        for relative, data in plan.texts.items():
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            (staging / relative).write_bytes(data)
        for source, relative in tqdm(plan.files, desc=f"build {name}", unit="file", disable=not progress):
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            write(source, staging / relative)
        digest = folder_digest(staging, progress)
        if target.exists():  # made meanwhile: a rename would replace an empty folder
            raise FileExistsError(refusal)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    built = Built(target, len(plan.texts) + len(plan.files), digest, digest == subset.content_sha256)
    if not built.matches:
        warnings.warn(f"{target} is not the folder the committed runs used: {built.files:,} files with content "
                      f"digest {digest}, where that folder has {subset.content_files:,} with "
                      f"{subset.content_sha256}. The source is not the complete published {subset.dataset}"
                      + (", or this Pillow encodes JPEG differently" if subset.downscale else "")
                      + "; results on it may differ from the committed ones.", stacklevel=2)
    return built


def check_subset(name: str, root: str | os.PathLike, progress: bool = True) -> Built:
    """Whether subset ``name``'s folder under the data root ``root`` holds the files the
    committed runs used, byte for byte (its :func:`folder_digest` against the recorded one)."""
    subset = named_subset(name)
    folder = Path(root).expanduser() / subset.folder
    if not folder.is_dir():
        raise DatasetNotFoundError(f"No folder {folder} to check. Build it: " + BUILD_COMMAND.format(name=name))
    digest = folder_digest(folder, progress)
    files = sum(1 for path in folder.rglob("*") if path.is_file())
    return Built(folder, files, digest, digest == subset.content_sha256)


def training_file_digest(paths: Iterable[str | os.PathLike], root: str | os.PathLike | None = None) -> str:
    """SHA-256 (hex) of the sorted paths relative to ``root`` (as given when ``None``), written
    with ``/``, each followed by a newline, in UTF-8: independent of the machine and the order, so
    a full Tiny ImageNet read as ``tin20`` and the built ``tin20`` folder give the same digest."""
    relative = sorted(PurePath(os.path.relpath(path, root) if root is not None else path).as_posix() for path in paths)
    return hashlib.sha256("".join(f"{path}\n" for path in relative).encode()).hexdigest()


@dataclass(frozen=True)
class SubsetRecord:
    """What a run trained on, for its ``config.json``: the ``subset=`` option, the class names
    and the identifiers the files are filed under (Tiny ImageNet's wnids) in label order, the
    training split's size and the :func:`training_file_digest` of its files relative to the
    dataset's folder (``None`` for a dataset not read from files)."""

    subset: str | None
    classes: tuple[str, ...]
    class_ids: tuple[str, ...]
    train_files: int
    train_files_sha256: str | None

    @property
    def named(self) -> str | None:
        """The named subset the run trained on: :attr:`subset` where the run was given it, else
        the subset whose training files have this record's digest (a run pointed at the
        subset's folder without ``subset=``), else ``None``."""
        if self.subset is not None or self.train_files_sha256 is None:
            return self.subset
        return next((name for name, table in SUBSETS.items() if table.train_files_sha256 == self.train_files_sha256),
                    None)

    def to_dict(self) -> dict:
        return {key: list(value) if isinstance(value, tuple) else value
                for key, value in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> SubsetRecord:
        return cls(data["subset"], tuple(data["classes"]), tuple(data["class_ids"]),
                   data["train_files"], data["train_files_sha256"])


def subset_record(dataset) -> SubsetRecord:
    """The :class:`SubsetRecord` of a training split made by :func:`~ib_tutorial.data.get_dataset`:
    its files (after ``skip_corrupt``) relative to its ``info["folder"]``, else to their common parent."""
    info = getattr(dataset, "info", {})
    classes = tuple(dataset.classes)
    digest = None
    if (samples := getattr(dataset, "samples", None)) is not None:
        paths = [path for path, _ in samples]
        root = info.get("folder") or os.path.commonpath([Path(path).parent for path in paths])
        digest = training_file_digest(paths, root)
    return SubsetRecord(info.get("subset"), classes, tuple(info.get("wnids", classes)), len(dataset), digest)


def main(argv: Sequence[str] | None = None, prog: str = "python -m ib_tutorial.data.subsets") -> None:
    """``ib-tutorial subset list``, ``... build NAME --source DIR --out DIR`` and ``... check
    NAME --root DIR`` (also ``python -m ib_tutorial.data.subsets ...``)."""
    parser = argparse.ArgumentParser(prog=prog,
                                     description="The named subsets of the real datasets, and building their folders.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the named subsets and their classes")
    build = commands.add_parser("build", help="write a subset's folder from the full download")
    build.add_argument("name", choices=SUBSETS, help="the subset")
    build.add_argument("--source", required=True, help="data root (or dataset folder) holding the full download")
    build.add_argument("--out", required=True,
                       help="data root to make the subset's folder in; not the source's (its full DTD is <root>/dtd)")
    check = commands.add_parser("check", help="compare a subset's folder with the one the committed runs used")
    check.add_argument("name", choices=SUBSETS, help="the subset")
    check.add_argument("--root", required=True, help="data root holding the subset's folder")
    for command in (build, check):
        command.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    if args.command == "list":
        for subset in SUBSETS.values():
            print(f"{subset.name}: {subset.dataset}:subset={subset.name}, folder {subset.folder}/ - "
                  f"{subset.description}\n  classes: {' '.join(subset.classes)}")
        return
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            progress = not args.no_progress
            built = (build_subset(args.name, args.source, args.out, progress) if args.command == "build"
                     else check_subset(args.name, args.root, progress))
    except (DatasetNotFoundError, FileExistsError, CorruptImageError) as error:
        raise SystemExit(f"error: {error}") from None
    for warning in caught:
        print(f"warning: {warning.message}")
    verdict = "identical to" if built.matches else "DIFFERENT from"
    print(f"{built.folder}: {built.files:,} files, content sha256 {built.content_sha256}, "
          f"{verdict} the folder the committed runs used.")
    if args.command == "check" and not built.matches:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
