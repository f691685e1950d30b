"""Committed results in compact form: a record stored xz-compressed under its own name, and
the one reader that takes either form.

The files :func:`compactable` names, most of the repository's bytes, are stored as the xz
stream of their text under the same name (about a quarter of the size), so paths and globs
stay. ``python -m ib_tutorial.compact FOLDER...`` converts, ``--expand`` writes them back byte
for byte; ``xz -dcf FILE`` prints either form.
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import sys
from pathlib import Path

from .files import atomic_write

#: The first bytes of every xz stream (never the first bytes of JSON text).
XZ_MAGIC = b"\xfd7zXZ\x00"
#: Folders whose JSON records are stored compact, and the log stored compact wherever it is.
COMPACT_FOLDERS = ("profiles", "pruning", "measurement")
COMPACT_NAMES = ("metrics.jsonl",)
# xz's default preset, with a dictionary of 1 MiB (a record is at most a few hundred kB): as
# small as its strongest preset on these files, and a reader allocates 1 MiB, not 64.
_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 6, "dict_size": 2**20}]


def read_text(path: str | os.PathLike) -> str:
    """The text of ``path``, plain or compact."""
    data = Path(path).read_bytes()
    return (lzma.decompress(data) if data.startswith(XZ_MAGIC) else data).decode()


def read_json(path: str | os.PathLike):
    """The JSON data of ``path``, plain or compact."""
    return json.loads(read_text(path))


def is_compact(path: str | os.PathLike) -> bool:
    with open(path, "rb") as file:
        return file.read(len(XZ_MAGIC)) == XZ_MAGIC


def compactable(folder: str | os.PathLike) -> list[Path]:
    """The files under ``folder`` that are stored compact: ``metrics.jsonl``, and the
    ``.json`` files below a folder named in :data:`COMPACT_FOLDERS`."""
    folder = Path(folder)
    return sorted(path for path in folder.rglob("*") if path.is_file() and (
        path.name in COMPACT_NAMES
        or (path.suffix == ".json" and set(path.relative_to(folder).parts[:-1]) & set(COMPACT_FOLDERS))))


def compact_folder(folder: str | os.PathLike, expand: bool = False) -> tuple[int, int, int]:
    """Store every :func:`compactable` file under ``folder`` compact, each stream checked to
    read back as the text (or, with ``expand``, plain); return (files, bytes before, bytes after)."""
    paths = compactable(folder)
    before = sum(path.stat().st_size for path in paths)
    for path in paths:
        if is_compact(path) != expand:
            continue  # already in the form asked for
        if expand:
            data = read_text(path).encode()
        else:
            text = path.read_bytes()
            data = lzma.compress(text, filters=_FILTERS)
            if lzma.decompress(data) != text:
                raise RuntimeError(f"{path}: its xz stream does not read back as the file; the file is unchanged")
        atomic_write(path, lambda file: file.write(data))
    return len(paths), before, sum(path.stat().st_size for path in paths)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ib_tutorial.compact", description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders of results, e.g. results/")
    parser.add_argument("--expand", action="store_true", help="write the files back as plain text")
    args = parser.parse_args(argv)
    for folder in args.folders:
        if not folder.is_dir():
            parser.error(f"{folder} is not a folder")
        files, before, after = compact_folder(folder, expand=args.expand)
        print(f"{folder}: {files} files, {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
