"""``ib-tutorial subset {list,build,check}``: the named subsets listed, a subset's folder
built from the full download, a built folder checked against the committed runs' one."""
from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence

from .archives import DatasetNotFoundError
from .folders import CorruptImageError
from .subset_build import build_subset, check_subset
from .subset_table import SUBSETS


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
