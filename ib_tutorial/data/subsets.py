"""Named subsets of the real datasets: which classes, which files, and how to build them.

The book's real-image runs train on two subsets small enough for a CPU: ``tin20``, 20 of the
200 Tiny ImageNet classes with every original file (500 train and 50 val each), and ``dtd6``,
6 of the 47 DTD classes (120 images each) downscaled to a longer side of at most 256 px
(bicubic, JPEG quality 90). A dataset option names one (``get_dataset("dtd", "train",
subset="dtd6")``, or the spec ``dtd:subset=dtd6``). ``tin20`` also reads a full Tiny ImageNet
download; ``dtd6`` is built once into a data root of its own::

    ib-tutorial subset build dtd6 --source ~/.cache/ib_tutorial --out ~/subsets

The table is :mod:`ib_tutorial.data.subset_table`; :func:`~ib_tutorial.data.subset_build.build_subset`
writes a folder all or nothing and checks its
:func:`~ib_tutorial.data.subset_build.folder_digest` against the committed runs'. The command is
:func:`main` (``ib-tutorial subset``); :func:`subset_record` is what a run records of its data.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from .archives import DatasetNotFoundError
from .folders import CorruptImageError
from .subset_build import build_subset, check_subset
from .subset_table import SUBSETS


def training_file_digest(paths: Iterable[str | os.PathLike], root: str | os.PathLike | None = None) -> str:
    """SHA-256 (hex) of a list of files, independent of the machine and of the order given:
    of the sorted paths relative to ``root`` (as given when ``None``), written with ``/``, each
    followed by a newline, in UTF-8. A full Tiny ImageNet read as ``tin20`` and the built
    ``tin20`` folder give the same digest.
    """
    relative = sorted(PurePath(os.path.relpath(path, root) if root is not None else path).as_posix() for path in paths)
    return hashlib.sha256("".join(f"{path}\n" for path in relative).encode()).hexdigest()


@dataclass(frozen=True)
class SubsetRecord:
    """What a run trained on, for its ``config.json``.

    Attributes:
        subset: the named subset (``subset=`` option), or ``None``.
        classes, class_ids: the class names and the identifiers the files are filed under
            (Tiny ImageNet's wnids), in label order.
        train_files: how many items the training split has.
        train_files_sha256: :func:`training_file_digest` of its files relative to the
            dataset's folder; ``None`` for a dataset not read from files.
    """

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
        """JSON-ready data: :func:`dataclasses.asdict`, tuples as lists."""
        return {key: list(value) if isinstance(value, tuple) else value
                for key, value in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> SubsetRecord:
        """The record :meth:`to_dict` wrote."""
        return cls(data["subset"], tuple(data["classes"]), tuple(data["class_ids"]),
                   data["train_files"], data["train_files_sha256"])


def subset_record(dataset) -> SubsetRecord:
    """The :class:`SubsetRecord` of a training split made by :func:`~ib_tutorial.data.get_dataset`.

    The files are those the split serves (after ``skip_corrupt``), taken relative to the
    dataset's ``info["folder"]`` where it has one, else to their common parent folder."""
    info = getattr(dataset, "info", {})
    classes = tuple(dataset.classes)
    samples = getattr(dataset, "samples", None)
    digest = None
    if samples is not None:
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
