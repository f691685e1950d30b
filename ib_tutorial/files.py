"""Files on disk: where data and results live (never inside the repository by default), and
writing them whole: every file is written beside its destination and then renamed, so that an
interruption or a full disk never leaves half of one under its final name.
"""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
from pathlib import Path


DATA_ENV_VAR = "IB_TUTORIAL_DATA"


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data folder: ``root`` if given, else ``$IB_TUTORIAL_DATA``, else ``~/.cache/ib_tutorial``."""
    if root is not None:
        return Path(root).expanduser()
    return Path(os.environ.get(DATA_ENV_VAR, "~/.cache/ib_tutorial")).expanduser()


def display_path(path: str | os.PathLike) -> str:
    """``path`` with the home folder as ``~``, so a built page does not carry the builder's home."""
    path, home = Path(path), Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def repository_root() -> Path:
    """The folder that holds the package: the repository's root in a checkout, else
    ``site-packages`` (:func:`in_repository` tells which)."""
    return Path(__file__).resolve().parents[1]


def in_repository() -> bool:
    """Whether the package runs from a checkout (the book's ``_toc.yml`` lies beside it), where
    the committed results and benchmark records are."""
    return (repository_root() / "_toc.yml").exists()


def stored_results(name: str = "") -> Path:
    """``results/<name>`` of the repository the package was loaded from (absent for an
    installed package: check ``.exists()``)."""
    return repository_root() / "results" / name


def stored_benchmark(name: str) -> Path:
    """``benchmarks/results/<name>``, as :func:`stored_results`."""
    return repository_root() / "benchmarks" / "results" / name


class DiskFullError(OSError):
    """No space was left to write a file; the file it was to replace is unchanged."""


def atomic_write(path: Path, write) -> None:
    """Call ``write(file_object)`` on a temporary file beside ``path``, then rename it to
    ``path``; :class:`DiskFullError` where the disk fills up."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)  # mkstemp makes files private; use the usual mode
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        raise _disk_full(error, path) from error


def atomic_folder(path: Path, fill) -> None:
    """Call ``fill(folder)`` on a new temporary folder beside ``path``, then put it in place of
    ``path``, whose content is removed only once the new one is complete; :class:`DiskFullError`
    where the disk fills up."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        fill(temporary)
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            path.rename(old)
            temporary.rename(path)
            shutil.rmtree(old)
        else:
            temporary.rename(path)
    except BaseException as error:
        shutil.rmtree(temporary, ignore_errors=True)
        raise _disk_full(error, path) from error


def _disk_full(error: BaseException, path: Path) -> BaseException:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC and not isinstance(error, DiskFullError):
        return DiskFullError(errno.ENOSPC, f"No space left on the device to write {path}; it is unchanged. "
                                           "Free some space (or choose a folder on another disk) and run the command again.")
    return error


# An indented JSON array of numbers only. The line breaks it must have are outside every
# string (JSON escapes them inside one), so a string that looks like an array is left alone.
_NUMBER_ARRAY = re.compile(r"\[\n\s*(-?[0-9][-+0-9.eE]*(?:,\n\s*-?[0-9][-+0-9.eE]*)*)\n\s*\]")


def json_text(data) -> str:
    """``data`` as indented JSON with every array of numbers on one line (a profile's bootstrap
    replicates take a line each, not a line a number)."""
    return _NUMBER_ARRAY.sub(lambda match: "[" + " ".join(match.group(1).split()) + "]", json.dumps(data, indent=2)) + "\n"


def write_json_atomic(path: str | os.PathLike, data) -> None:
    """Write ``data`` as :func:`json_text` through :func:`atomic_write`."""
    atomic_write(Path(path), lambda f: f.write(json_text(data).encode()))
