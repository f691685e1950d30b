"""Downloading, verifying and safely extracting dataset archives: nothing on disk is lost and
nothing half-done is trusted. A download is renamed from ``<file>.part`` only when every
announced byte arrived; an archive is used only if its MD5 matches; extraction refuses absolute
paths, ``..``, links and special files before writing anything, and goes to ``.<folder>.partial``,
renamed into place after a completion marker; a dataset folder that lacks files is reported,
never overwritten.
"""
from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import os
import shutil
import stat
import tarfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tqdm.auto import tqdm

from ..command_line import argument

COMPLETE_MARKER = ".ib_tutorial-complete"
CHUNK = 1 << 20


class DatasetNotFoundError(FileNotFoundError):
    """The data is not on disk (or is incomplete) and was not asked to be downloaded."""


class ChecksumError(RuntimeError):
    """A file's MD5 differs from the published one."""


class ArchiveError(RuntimeError):
    """An archive is truncated, corrupt, unsafe or lacks the expected folder."""


@dataclass(frozen=True)
class RemoteArchive:
    """A published archive: its file name, MD5 and the URLs to try in order."""

    filename: str
    md5: str
    urls: tuple[str, ...]


def md5_of(path: str | os.PathLike) -> str:
    """Hex MD5 digest of a file."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "md5").hexdigest()


def verify_md5(path: Path, expected: str) -> None:
    """Raise :class:`ChecksumError` naming ``path`` and both digests when they differ."""
    actual = md5_of(path)
    if actual != expected:
        raise ChecksumError(f"Checksum mismatch for {path}: MD5 is {actual}, expected {expected}. "
                            "The file was not used and has been left in place; it is truncated, corrupt or a "
                            f"different version. Delete it and call again with {argument('download')}.")


def fetch(archive: RemoteArchive, destination: Path) -> None:
    """Download ``archive`` to ``destination`` (via ``<destination>.part``, then a rename),
    trying each URL in turn. ``file://`` URLs work too."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".part")
    failures = []
    for url in archive.urls:
        try:
            with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as file:
                length = response.headers.get("Content-Length")
                total = int(length) if length else None
                received = 0
                with tqdm(total=total, unit="B", unit_scale=True, desc=archive.filename) as bar:
                    while chunk := response.read(CHUNK):
                        file.write(chunk)
                        received += len(chunk)
                        bar.update(len(chunk))
            # urllib ends a response whose connection closed early as if it were complete.
            if total is not None and received != total:
                raise OSError(f"the download stopped after {received:,} of {total:,} bytes")
            os.replace(partial, destination)
            return
        # HTTPException: e.g. IncompleteRead, when a chunked response is cut short.
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            failures.append(f"{url}: {error}")
    partial.unlink(missing_ok=True)  # our own incomplete download, never a user's file
    raise ArchiveError(f"Could not download {archive.filename}; tried\n  " + "\n  ".join(failures)
                       + f"\nDownload it by hand to {destination} and call again.")


def _check_members(names_and_kinds: Sequence[tuple[str, bool]], archive_path: Path) -> None:
    """Raise :class:`ArchiveError` for the first ``(name, is link or special file)`` member
    that may not be extracted."""
    for name, special in names_and_kinds:
        path = PurePosixPath(name.replace("\\", "/"))
        if path.is_absolute() or (path.parts and path.parts[0].endswith(":")):
            problem = "is an absolute path"
        elif ".." in path.parts:
            problem = "has a '..' component that would land outside the target folder"
        elif special:
            problem = "is a link or special file"
        else:
            continue
        raise ArchiveError(f"Refusing to extract {archive_path}: member {name!r} {problem}. "
                           "Nothing was extracted. The archive is not the published one; delete it.")


def _extract_all(archive_path: Path, into: Path) -> None:
    """Check every member, then extract them all into ``into`` (zip by suffix, else tar)."""
    if archive_path.suffix.lower() == ".zip":
        with zipfile.ZipFile(archive_path) as archive:
            members = archive.infolist()
            # Unix mode bits live in the top 16 bits of external_attr.
            _check_members([(m.filename, stat.S_ISLNK(m.external_attr >> 16)) for m in members], archive_path)
            for member in tqdm(members, desc=f"extracting {archive_path.name}", unit="file"):
                archive.extract(member, into)
        return
    # Python >= 3.11.4 has extraction filters; the checks above already refuse what
    # the "data" filter would, so older versions are safe too.
    options = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    with tarfile.open(archive_path) as archive:
        members = archive.getmembers()
        _check_members([(m.name, not (m.isfile() or m.isdir())) for m in members], archive_path)
        for member in tqdm(members, desc=f"extracting {archive_path.name}", unit="file"):
            archive.extract(member, into, set_attrs=False, **options)


def extract(archive_path: Path, into: Path, folder: str, md5: str) -> Path:
    """Extract ``archive_path`` and move its top folder ``folder`` to ``into / folder``,
    all or nothing (see the module docstring). Returns the extracted folder."""
    target = into / folder
    staging = into / f".{folder}.partial"
    if staging.exists():
        shutil.rmtree(staging)  # an interrupted extraction of ours: redo it, do not trust it
    staging.mkdir(parents=True)
    try:
        _extract_all(archive_path, staging)
        if not (staging / folder).is_dir():
            found = ", ".join(sorted(p.name for p in staging.iterdir())) or "nothing"
            raise ArchiveError(f"{archive_path} does not contain the folder {folder!r} (found: {found}).")
    except (zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile, EOFError, zlib.error) as error:
        shutil.rmtree(staging)
        raise ArchiveError(f"{archive_path} is truncated or corrupt ({type(error).__name__}: {error}). "
                           f"It was left in place; delete it and call again with {argument('download')}.") from error
    except ArchiveError:
        shutil.rmtree(staging)
        raise
    marker = {"archive": archive_path.name, "md5": md5}
    (staging / folder / COMPLETE_MARKER).write_text(json.dumps(marker) + "\n")  # written last
    os.replace(staging / folder, target)
    shutil.rmtree(staging)
    return target


def prepare(archive: RemoteArchive, into: Path, folder: str, required: Sequence[str], download: bool, dataset: str,
            layout: str) -> Path:
    """Make ``into / folder`` hold the extracted archive and return it.

    A folder holding every path in ``required`` is used as it is (it may have been placed by
    hand); else the archive ``into / archive.filename`` is used if present, downloaded if
    ``download``, verified and extracted. :class:`DatasetNotFoundError`, showing ``layout``,
    when nothing is on disk without ``download`` or the folder is incomplete (it is left alone).
    """
    target = into / folder
    if target.is_dir():
        missing = [name for name in required if not (target / name).exists()]
        if not missing:
            return target
        raise DatasetNotFoundError(f"{dataset}: {target} exists but is incomplete (missing: {', '.join(missing)}); "
                                   f"it was left alone.\nExpected layout:\n{layout}\n"
                                   f"Complete it, or move it away and call again with {argument('download')}.")
    archive_path = into / archive.filename
    if not archive_path.exists():
        if not download:
            raise DatasetNotFoundError(
                f"{dataset} is not under {into}.\nExpected layout:\n{layout}\n"
                f"Call again with {argument('download')} to fetch {archive.filename} from {archive.urls[0]}, "
                f"or put that archive at {archive_path}, or pass {argument('root', '<folder holding the layout>')}.")
        fetch(archive, archive_path)
    verify_md5(archive_path, archive.md5)
    extract(archive_path, into, folder, archive.md5)
    if missing := [name for name in required if not (target / name).exists()]:
        raise ArchiveError(f"{archive_path} extracted to {target} but lacks: {', '.join(missing)}.")
    return target
