"""Bad input gets a clear error, and nothing on disk is lost."""
import re
import zipfile
from pathlib import Path

import pytest
import torchvision
from archive_builders import (
    cifar100_tar,
    image_bytes,
    served,
    snapshot,
    tiny_imagenet_zip,
    uc_merced_zip,
    write_tar,
    write_zip,
)

from ib_tutorial.data import (
    DATASETS,
    ArchiveError,
    ChecksumError,
    DatasetNotFoundError,
    get_dataset,
    tiny_imagenet,
    uc_merced,
)
from ib_tutorial.data.archives import COMPLETE_MARKER, RemoteArchive, extract, md5_of


@pytest.fixture
def tiny_archive(tmp_path):
    return tiny_imagenet_zip(tmp_path / "server" / "tiny-imagenet-200.zip")


@pytest.mark.parametrize(
    "name, layout_line",
    [
        ("tiny-imagenet", "val/val_annotations.txt"),
        ("uc-merced", "Images/<class>/<class>NN.tif"),
        ("cifar100", "<root>/cifar-100-python/"),
        ("dtd", "labels/{train,val,test}<1..10>.txt"),
        ("eurosat", "<root>/eurosat/2750/<class>/"),
    ],
)
def test_missing_data_names_the_layout_and_the_download_flag(tmp_path, name, layout_line):
    (tmp_path / "unrelated.txt").write_text("keep me")
    before = snapshot(tmp_path)
    split = DATASETS[name].splits[0]
    with pytest.raises(DatasetNotFoundError) as error:
        get_dataset(name, split, root=tmp_path)
    message = str(error.value)
    assert layout_line in message and "download=True" in message and str(tmp_path) in message
    assert snapshot(tmp_path) == before


def test_an_incomplete_folder_is_reported_and_left_alone(tmp_path):
    folder = tmp_path / "tiny-imagenet-200"
    folder.mkdir()
    (folder / "wnids.txt").write_text("n01641577\n")
    before = snapshot(tmp_path)
    with pytest.raises(DatasetNotFoundError, match=r"exists but is incomplete \(missing: words.txt, train, val/images"):
        get_dataset("tiny-imagenet", "train", root=tmp_path, download=True)
    assert snapshot(tmp_path) == before


def test_a_checksum_mismatch_names_the_file_and_both_digests_and_keeps_it(tmp_path, tiny_archive, monkeypatch):
    monkeypatch.setattr(tiny_imagenet, "ARCHIVE", served(tiny_archive))
    root = tmp_path / "data"
    root.mkdir()
    bad = root / "tiny-imagenet-200.zip"
    bad.write_bytes(b"not the archive")
    before = snapshot(tmp_path)
    with pytest.raises(ChecksumError) as error:
        get_dataset("tiny-imagenet", "train", root=root, download=True)
    message = str(error.value)
    assert str(bad) in message and md5_of(bad) in message and tiny_imagenet.ARCHIVE.md5 in message
    assert snapshot(tmp_path) == before  # not used, not deleted, nothing extracted


def test_a_download_with_the_wrong_digest_is_kept_and_not_used(tmp_path, tiny_archive, monkeypatch):
    wrong = "0" * 32
    monkeypatch.setattr(tiny_imagenet, "ARCHIVE", RemoteArchive(tiny_archive.name, wrong, (tiny_archive.as_uri(),)))
    root = tmp_path / "data"
    with pytest.raises(ChecksumError, match=f"MD5 is {md5_of(tiny_archive)}, expected {wrong}"):
        get_dataset("tiny-imagenet", "train", root=root, download=True)
    assert sorted(p.name for p in root.iterdir()) == ["tiny-imagenet-200.zip"]
    assert md5_of(root / "tiny-imagenet-200.zip") == md5_of(tiny_archive)


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_zip_is_a_clear_error_and_is_kept(tmp_path, tiny_archive, monkeypatch, damage):
    data = tiny_archive.read_bytes()
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:  # flip bytes inside the first member's data (after its 30-byte local header): its CRC no longer matches
        first = zipfile.ZipFile(tiny_archive).infolist()[0]
        offset = first.header_offset + 30 + len(first.filename) + len(first.extra) + 2
        data = data[:offset] + bytes(b ^ 0xFF for b in data[offset:offset + 4]) + data[offset + 4:]
    root = tmp_path / "data"
    root.mkdir()
    (root / tiny_archive.name).write_bytes(data)
    # The published digest matches the damaged file, as when the source itself is damaged.
    monkeypatch.setattr(tiny_imagenet, "ARCHIVE", RemoteArchive(tiny_archive.name, md5_of(root / tiny_archive.name), ()))
    before = snapshot(tmp_path)
    with pytest.raises(ArchiveError, match=re.escape(f"{root / tiny_archive.name} is truncated or corrupt")):
        get_dataset("tiny-imagenet", "train", root=root)
    assert snapshot(tmp_path) == before


def test_a_truncated_tar_gz_is_a_clear_error_and_is_kept(tmp_path, monkeypatch):
    archive, built = cifar100_tar(tmp_path / "server" / "cifar-100-python.tar.gz", train=200)
    root = tmp_path / "data"
    root.mkdir()
    truncated = root / archive.name
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    for name, value in built["attributes"].items():
        monkeypatch.setattr(torchvision.datasets.CIFAR100, name, value)
    monkeypatch.setattr(torchvision.datasets.CIFAR100, "tgz_md5", md5_of(truncated))
    before = snapshot(tmp_path)
    with pytest.raises(ArchiveError, match="is truncated or corrupt"):
        get_dataset("cifar100", "train", root=root)
    assert snapshot(tmp_path) == before


def test_a_changed_cifar_file_names_the_file_and_both_digests(tmp_path, monkeypatch):
    archive, built = cifar100_tar(tmp_path / "server" / "cifar-100-python.tar.gz")
    for name, value in built["attributes"].items():
        monkeypatch.setattr(torchvision.datasets.CIFAR100, name, value)
    root = tmp_path / "data"
    get_dataset("cifar100", "test", root=root, download=True)
    meta = root / "cifar-100-python" / "meta"
    meta.write_bytes(meta.read_bytes() + b"\0")
    before = snapshot(tmp_path)
    with pytest.raises(ChecksumError) as error:
        get_dataset("cifar100", "test", root=root)
    assert str(meta) in str(error.value) and md5_of(meta) in str(error.value)
    assert built["attributes"]["meta"]["md5"] in str(error.value)
    assert snapshot(tmp_path) == before


def test_a_half_finished_extraction_is_detected_and_redone(tmp_path, monkeypatch):
    archive = uc_merced_zip(tmp_path / "server" / "UCMerced_LandUse.zip")
    monkeypatch.setattr(uc_merced, "ARCHIVE", served(archive))
    root = tmp_path / "data"

    calls = {"n": 0}
    real_extract = zipfile.ZipFile.extract

    def interrupted(self, member, path=None, pwd=None):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt  # the user stops the extraction half-way
        return real_extract(self, member, path, pwd)

    monkeypatch.setattr(zipfile.ZipFile, "extract", interrupted)
    with pytest.raises(KeyboardInterrupt):
        get_dataset("uc-merced", "train", root=root, download=True)
    staging = root / ".UCMerced_LandUse.partial"
    assert staging.is_dir() and not (root / "UCMerced_LandUse").exists()
    (staging / "UCMerced_LandUse" / "Images" / "stale.txt").write_text("left over")

    monkeypatch.setattr(zipfile.ZipFile, "extract", real_extract)
    train = get_dataset("uc-merced", "train", root=root)  # the archive is there: no download needed
    assert len(train) == 12
    assert not staging.exists()
    folder = root / "UCMerced_LandUse"
    assert (folder / COMPLETE_MARKER).exists()
    assert not list(folder.rglob("stale.txt"))
    assert sum(1 for _ in (folder / "Images").rglob("*.tif")) == 15


@pytest.mark.parametrize(
    "kind, member",
    [("zip", "../escaped.txt"), ("zip", "/tmp/absolute.txt"), ("zip", "top/../../escaped.txt"),
     ("tar", "../escaped.txt"), ("tar", "/tmp/absolute.txt"), ("tar-symlink", "top/link")],
)
def test_members_that_would_land_outside_are_refused(tmp_path, kind, member):
    server = tmp_path / "server"
    members = {"top/ok.txt": b"fine", member: b"evil"} if kind != "tar-symlink" else {"top/ok.txt": b"fine"}
    if kind == "zip":
        archive = write_zip(server / "bad.zip", members)
    else:
        archive = write_tar(server / "bad.tar.gz", members, {member: "../../outside"} if kind == "tar-symlink" else None)
    into = tmp_path / "data" / "inner"
    into.mkdir(parents=True)
    before = snapshot(tmp_path)
    with pytest.raises(ArchiveError, match=re.escape(f"member {member!r}")):
        extract(archive, into, "top", md5_of(archive))
    assert snapshot(tmp_path) == before
    assert not Path("/tmp/absolute.txt").exists()


def test_an_archive_without_the_expected_folder_is_refused(tmp_path):
    archive = write_zip(tmp_path / "other.zip", {"something/else.jpg": image_bytes((0, 0, 0))})
    into = tmp_path / "data"
    into.mkdir()
    with pytest.raises(ArchiveError, match=r"does not contain the folder 'UCMerced_LandUse' \(found: something\)"):
        extract(archive, into, "UCMerced_LandUse", md5_of(archive))
    assert list(into.iterdir()) == []


def test_a_failed_download_says_what_was_tried_and_leaves_nothing(tmp_path, monkeypatch):
    missing = (tmp_path / "nowhere" / "tiny-imagenet-200.zip").as_uri()
    monkeypatch.setattr(tiny_imagenet, "ARCHIVE", RemoteArchive("tiny-imagenet-200.zip", "0" * 32, (missing,)))
    root = tmp_path / "data"
    with pytest.raises(ArchiveError, match=re.escape(missing)):
        get_dataset("tiny-imagenet", "train", root=root, download=True)
    assert list(root.iterdir()) == []


def test_unknown_names_splits_and_options_list_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="Known datasets: cifar100, tiny-imagenet, uc-merced, dtd, eurosat, synthetic"):
        get_dataset("cifar-100", "train")
    with pytest.raises(ValueError, match="offers: train, val. Its test images have no published labels"):
        get_dataset("tiny-imagenet", "test", root=tmp_path)
    with pytest.raises(ValueError, match="takes: train_fraction, split_seed, size_policy"):
        get_dataset("uc-merced", "train", root=tmp_path, seed=3)
    assert list(tmp_path.iterdir()) == []
