"""Building a named subset's folder from the full download, and checking one.

:func:`build_subset` writes the folder in the layout its loader reads, all or nothing;
:func:`check_subset` compares its :func:`folder_digest` with the one
:mod:`ib_tutorial.data.subset_table` records for the committed runs' folder.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from .archives import DatasetNotFoundError
from .folders import class_folders
from .layouts import DTD_LAYOUT, TINY_IMAGENET_FOLDER, TINY_IMAGENET_LAYOUT, TINY_IMAGENET_REQUIRED
from .subset_table import BUILD_COMMAND, Subset, named_subset
from .tiny_imagenet import read_classes


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
    """What a subset folder holds: text files written here (relative path -> bytes) and
    files made from the source's (source file, relative path)."""

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


def _line_of(lines: dict[bytes, bytes], wnid: str) -> bytes:
    line = lines[wnid.encode()]
    return line if line.endswith(b"\n") else line + b"\n"


def plan_tiny_imagenet(subset: Subset, source_root: Path) -> Plan:
    """The subset's ``tiny-imagenet-200/``: its classes' ``wnids.txt`` and ``words.txt`` lines,
    every file under their ``train/<wnid>/``, and their val images with their
    ``val/val_annotations.txt`` lines, in the source's order (``<source_root>/tiny-imagenet-200``
    or ``source_root``)."""
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
        "words.txt": b"".join(_line_of(words, wnid) for wnid in subset.classes),
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
    """Write subset ``name`` from the full download under ``source_root`` to its folder
    under the data root ``target_root``, in the layout its loader reads.

    Files are copied byte for byte, or through the subset's
    :class:`~ib_tutorial.data.subset_table.Downscale`, into ``.<folder>.partial`` (one left by
    an interrupted build is removed first), renamed into place when complete. Warns when the
    result's :func:`folder_digest` is not the recorded one.

    Raises:
        FileExistsError: the target folder exists (it is never overwritten).
        ib_tutorial.data.DatasetNotFoundError: no full download under ``source_root``, or it lacks a
            class or file of the subset.
        ValueError: an unknown subset name.
    """
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
    committed runs used, byte for byte (its :func:`folder_digest` against the recorded one).

    Raises:
        ib_tutorial.data.DatasetNotFoundError: there is no such folder; the message gives the build command.
    """
    subset = named_subset(name)
    folder = Path(root).expanduser() / subset.folder
    if not folder.is_dir():
        raise DatasetNotFoundError(f"No folder {folder} to check. Build it: " + BUILD_COMMAND.format(name=name))
    digest = folder_digest(folder, progress)
    files = sum(1 for path in folder.rglob("*") if path.is_file())
    return Built(folder, files, digest, digest == subset.content_sha256)
