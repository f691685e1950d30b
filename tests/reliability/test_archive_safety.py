"""Untrusted archives and damaged downloads, built for real on disk: nothing lands
outside the target folder, nothing half-extracted or half-downloaded is left under a
final name, and a file that is not the published one is refused with its digests."""
import http.server
import io
import re
import stat
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest
import torchvision
from archive_builders import (
    cifar100_tar,
    dtd_tar,
    eurosat_zip,
    served,
    snapshot,
    tiny_imagenet_zip,
    uc_merced_zip,
)

from ib_tutorial.data import (
    ArchiveError,
    ChecksumError,
    get_dataset,
    tiny_imagenet,
    torchvision_sets,
    uc_merced,
)
from ib_tutorial.data.archives import RemoteArchive, extract, md5_of

GOOD = [("top/a.txt", "file", b"first"), ("top/b.txt", "file", b"second")]
TAR_TYPES = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE, "chardev": tarfile.CHRTYPE}


def write_tar_entries(path: Path, entries, base: Path | None = None) -> Path:
    """A ``.tar.gz`` of ``base``'s members (if given), then ``entries``: ``(name, kind,
    payload)`` with kind ``file`` (payload: bytes) or a link (payload: its target) or a
    FIFO or character device (no payload)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    copied = []
    if base is not None:
        with tarfile.open(base) as source:
            copied = [(m, source.extractfile(m).read() if m.isfile() else None) for m in source.getmembers()]
    with tarfile.open(path, "w:gz") as archive:
        for member, data in copied:
            archive.addfile(member, None if data is None else io.BytesIO(data))
        for name, kind, payload in entries:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(payload)
                archive.addfile(info, io.BytesIO(payload))
                continue
            info.type = TAR_TYPES[kind]
            info.linkname = payload if kind in ("symlink", "hardlink") else ""
            archive.addfile(info)
    return path


def write_zip_entries(path: Path, entries, mode: str = "w") -> Path:
    """A zip of ``entries`` (see :func:`write_tar_entries`; kinds ``file`` and ``symlink``),
    or, with ``mode="a"``, those entries appended to an existing zip."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, mode) as archive:
        for name, kind, payload in entries:
            info = zipfile.ZipInfo(name)
            if kind == "symlink":  # how Info-ZIP stores a Unix symlink: mode bits in the top 16 bits
                info.create_system = 3
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                payload = payload.encode()
            archive.writestr(info, payload)
    return path


@pytest.fixture
def victim(tmp_path):
    """A file outside the data root that a malicious archive tries to reach."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text("precious")
    return path


def hostile_entries(case: str, victim: Path) -> tuple[list, str]:
    """The entries a hostile archive adds after the good ones, and the member that must be named."""
    outside, relative = str(victim.parent), "../../outside/victim.txt"  # from <root>/.top.partial/
    cases = {
        "dotdot": [(relative, "file", b"evil")],
        "absolute": [(str(victim), "file", b"evil")],
        "backslashes": [(relative.replace("/", "\\"), "file", b"evil")],
        "drive letter": [("C:\\outside\\victim.txt", "file", b"evil")],
        "symlink out, then a file through it": [("top/link", "symlink", outside), ("top/link/victim.txt", "file", b"evil")],
        "relative symlink out, then a file through it": [("top/link", "symlink", "../../outside"),
                                                         ("top/link/victim.txt", "file", b"evil")],
        "hardlink to an absolute path, then a write to it": [("top/hard", "hardlink", str(victim)),
                                                            ("top/hard", "file", b"evil")],
        "hardlink through ..": [("top/hard", "hardlink", relative)],
        "hardlink inside the archive": [("top/hard", "hardlink", "top/a.txt")],
        "fifo": [("top/pipe", "fifo", None)],
        "character device": [("top/device", "chardev", None)],
    }
    return cases[case], cases[case][0][0]


ZIP_CASES = ["dotdot", "absolute", "backslashes", "drive letter", "symlink out, then a file through it"]
TAR_CASES = ["dotdot", "absolute", "symlink out, then a file through it", "relative symlink out, then a file through it",
             "hardlink to an absolute path, then a write to it", "hardlink through ..", "hardlink inside the archive",
             "fifo", "character device"]


@pytest.mark.parametrize("kind, case", [("zip", c) for c in ZIP_CASES] + [("tar", c) for c in TAR_CASES])
def test_a_hostile_member_is_refused_by_name_and_nothing_is_written(tmp_path, victim, kind, case):
    entries, named = hostile_entries(case, victim)
    write = write_zip_entries if kind == "zip" else write_tar_entries
    archive = write(tmp_path / "server" / f"hostile.{'zip' if kind == 'zip' else 'tar.gz'}", GOOD + entries)
    root = tmp_path / "root"
    root.mkdir()
    before = snapshot(tmp_path)
    with pytest.raises(ArchiveError, match=re.escape(f"member {named!r}")) as error:
        extract(archive, root, "top", md5_of(archive))
    assert "Nothing was extracted" in str(error.value) and str(archive) in str(error.value)
    assert snapshot(tmp_path) == before  # no target, no staging folder, victim untouched
    assert victim.read_text() == "precious"


def test_the_same_members_without_the_hostile_one_extract(tmp_path):
    """The hostile-member test fails for the member, not for the archive around it."""
    for archive in (write_zip_entries(tmp_path / "ok.zip", GOOD), write_tar_entries(tmp_path / "ok.tar.gz", GOOD)):
        root = tmp_path / archive.name.replace(".", "_")
        root.mkdir()
        target = extract(archive, root, "top", md5_of(archive))
        assert (target / "a.txt").read_bytes() == b"first" and (target / "b.txt").read_bytes() == b"second"
        assert sorted(p.name for p in root.iterdir()) == ["top"]


# Each publishes a hostile archive whose published digest matches it: the MD5 check
# cannot save us here. Returns the member that must be named.
def hostile_uc_merced(monkeypatch, server: Path, victim: Path) -> str:
    entries, named = hostile_entries("dotdot", victim)
    archive = write_zip_entries(uc_merced_zip(server / "UCMerced_LandUse.zip"), entries, mode="a")
    monkeypatch.setattr(uc_merced, "ARCHIVE", served(archive))
    return named


def hostile_dtd(monkeypatch, server: Path, victim: Path) -> str:
    entries, named = hostile_entries("symlink out, then a file through it", victim)
    base, _ = dtd_tar(server / "base" / "dtd-r1.0.1.tar.gz")
    archive = write_tar_entries(server / "dtd-r1.0.1.tar.gz", entries, base=base)
    monkeypatch.setattr(torchvision.datasets.DTD, "_URL", archive.as_uri())
    monkeypatch.setattr(torchvision.datasets.DTD, "_MD5", md5_of(archive))
    return named


@pytest.mark.parametrize("name, publish, lands", [
    ("uc-merced", hostile_uc_merced, "UCMerced_LandUse.zip"),
    ("dtd", hostile_dtd, "dtd/dtd-r1.0.1.tar.gz"),
])
def test_a_hostile_download_is_refused_and_leaves_only_the_archive(tmp_path, victim, monkeypatch, name, publish, lands):
    named = publish(monkeypatch, tmp_path / "server", victim)
    root = tmp_path / "data"
    with pytest.raises(ArchiveError, match=re.escape(f"member {named!r}")):
        get_dataset(name, "train", root=root, download=True)
    files = {path for path, kind in snapshot(root).items() if kind != "dir"}
    assert files == {lands}  # the download, kept for inspection; no dataset folder, no staging folder
    assert victim.read_text() == "precious" and sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]


# --- integrity of downloads --------------------------------------------------------------
def publish_tiny_imagenet(monkeypatch, server: Path, url=None, md5=None) -> Path:
    archive = tiny_imagenet_zip(server / "tiny-imagenet-200.zip")
    monkeypatch.setattr(tiny_imagenet, "ARCHIVE", RemoteArchive(archive.name, md5 or md5_of(archive), (url or archive.as_uri(),)))
    return archive


def publish_uc_merced(monkeypatch, server: Path, url=None, md5=None) -> Path:
    archive = uc_merced_zip(server / "UCMerced_LandUse.zip")
    monkeypatch.setattr(uc_merced, "ARCHIVE", RemoteArchive(archive.name, md5 or md5_of(archive), (url or archive.as_uri(),)))
    return archive


def publish_eurosat(monkeypatch, server: Path, url=None, md5=None) -> Path:
    archive = eurosat_zip(server / "EuroSAT.zip")
    monkeypatch.setattr(torchvision_sets, "EUROSAT_ARCHIVE",
                        RemoteArchive(archive.name, md5 or md5_of(archive), (url or archive.as_uri(),)))
    return archive


def publish_dtd(monkeypatch, server: Path, url=None, md5=None) -> Path:
    archive, _ = dtd_tar(server / "dtd-r1.0.1.tar.gz")
    monkeypatch.setattr(torchvision.datasets.DTD, "_URL", url or archive.as_uri())
    monkeypatch.setattr(torchvision.datasets.DTD, "_MD5", md5 or md5_of(archive))
    return archive


def publish_cifar100(monkeypatch, server: Path, url=None, md5=None) -> Path:
    archive, built = cifar100_tar(server / "cifar-100-python.tar.gz")
    for attribute, value in built["attributes"].items():
        monkeypatch.setattr(torchvision.datasets.CIFAR100, attribute, value)
    monkeypatch.setattr(torchvision.datasets.CIFAR100, "url", url or archive.as_uri())
    monkeypatch.setattr(torchvision.datasets.CIFAR100, "tgz_md5", md5 or md5_of(archive))
    return archive


PUBLISHED = {  # dataset -> (how the tests publish it, where its download lands under the root, a split)
    "tiny-imagenet": (publish_tiny_imagenet, "tiny-imagenet-200.zip", "train"),
    "uc-merced": (publish_uc_merced, "UCMerced_LandUse.zip", "train"),
    "eurosat": (publish_eurosat, "eurosat/EuroSAT.zip", "train"),
    "dtd": (publish_dtd, "dtd/dtd-r1.0.1.tar.gz", "train"),
    "cifar100": (publish_cifar100, "cifar-100-python.tar.gz", "test"),
}


def one_byte_flipped(archive: Path, into: Path) -> Path:
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF
    into.mkdir(parents=True, exist_ok=True)
    (into / archive.name).write_bytes(bytes(data))
    return into / archive.name


@pytest.mark.filterwarnings("ignore:.*not the official 200")
@pytest.mark.parametrize("name", PUBLISHED)
def test_a_corrupted_download_is_refused_and_earlier_files_stay(tmp_path, monkeypatch, name):
    publish, lands, split = PUBLISHED[name]
    good = publish(monkeypatch, tmp_path / "server")
    bad = one_byte_flipped(good, tmp_path / "broken-mirror")
    publish(monkeypatch, tmp_path / "server", url=bad.as_uri(), md5=md5_of(good))
    root = tmp_path / "data"
    (root / "earlier-dataset").mkdir(parents=True)
    (root / "earlier-dataset" / "image.jpg").write_bytes(b"already here")
    (root / "notes.txt").write_text("keep me")
    before = snapshot(root)

    with pytest.raises(ChecksumError) as error:
        get_dataset(name, split, root=root, download=True)
    message = str(error.value)
    assert str(root / lands) in message and md5_of(bad) in message and md5_of(good) in message
    assert "Delete it and call again with download=True" in message
    after = snapshot(root)
    assert {key: after[key] for key in before} == before
    assert {key for key, kind in after.items() if key not in before and kind != "dir"} == {lands}  # nothing extracted
    assert after[lands] == md5_of(bad)  # kept for inspection, never trusted

    (root / lands).unlink()  # the fix the message names
    publish(monkeypatch, tmp_path / "server")
    assert len(get_dataset(name, split, root=root, download=True)) > 0


class CutShort(http.server.BaseHTTPRequestHandler):
    """Serves half of ``body`` and closes the connection: announced by Content-Length,
    or as a chunk that never ends."""

    protocol_version = "HTTP/1.1"
    body = b""
    chunked = False

    def do_GET(self):
        half = self.body[: len(self.body) // 2]
        self.send_response(200)
        if self.chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(f"{len(self.body):x}\r\n".encode() + half)
        else:
            self.send_header("Content-Length", str(len(self.body)))
            self.end_headers()
            self.wfile.write(half)
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def cut_short_server():
    servers = []

    def start(body: bytes, chunked: bool) -> str:
        handler = type("Handler", (CutShort,), {"body": body, "chunked": chunked})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/tiny-imagenet-200.zip"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.filterwarnings("ignore:.*not the official 200")
@pytest.mark.parametrize("chunked, says", [(False, "stopped after"), (True, "IncompleteRead")])
def test_a_download_cut_short_is_dropped_and_the_next_url_tried(tmp_path, monkeypatch, cut_short_server, chunked, says):
    archive = tiny_imagenet_zip(tmp_path / "server" / "tiny-imagenet-200.zip")
    url = cut_short_server(archive.read_bytes(), chunked)
    root = tmp_path / "data"
    monkeypatch.setattr(tiny_imagenet, "ARCHIVE", RemoteArchive(archive.name, md5_of(archive), (url,)))
    with pytest.raises(ArchiveError, match=rf"Could not download tiny-imagenet-200.zip; tried\n  {re.escape(url)}: .*{says}"):
        get_dataset("tiny-imagenet", "train", root=root, download=True)
    assert list(root.iterdir()) == []  # neither the .part file nor a short archive under the final name

    monkeypatch.setattr(tiny_imagenet, "ARCHIVE", RemoteArchive(archive.name, md5_of(archive), (url, archive.as_uri())))
    assert len(get_dataset("tiny-imagenet", "train", root=root, download=True)) == 9
    assert md5_of(root / archive.name) == md5_of(archive)
