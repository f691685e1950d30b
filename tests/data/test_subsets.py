"""Named subsets: building their folders from archives in the published layouts (byte for
byte, downscaled, all or nothing), reading them and full downloads through ``subset=``,
the records a run stores, and, where ../shared/data is present, the committed data itself."""
import dataclasses
import hashlib
import tarfile
import warnings
import zipfile
from pathlib import Path

import pytest
from archive_builders import TINY_VAL, TINY_WORDS, dtd_tar, image_bytes, snapshot, tiny_imagenet_zip
from PIL import Image
from shared_data import DTD_SAMPLE, REAL, TINY_SAMPLE, needs

from ib_tutorial.data import CorruptImageError, DatasetNotFoundError, get_dataset, held_out_split, subsets
from ib_tutorial.data.spec import parse_spec
from ib_tutorial.data.subsets import Built, build_subset, check_subset, folder_digest
from ib_tutorial.data.subsets import SUBSETS, Downscale, Subset
from ib_tutorial.data.subsets import SubsetRecord, subset_record, training_file_digest

UNRECORDED = "0" * 64

# Two of the three classes of tiny_imagenet_zip, in another order than its wnids.txt.
TINY2 = Subset("tiny2", "tiny-imagenet", ("n07749582", "n09246464"), "tiny-imagenet-200",
               "test subset", UNRECORDED, 0, UNRECORDED)
DTD2 = Subset("dtd2", "dtd", ("striped", "banded"), "dtd", "test subset", UNRECORDED, 0, UNRECORDED,
              Downscale(256, "bicubic", 90))
GREY_DTD = "striped/striped_0001.jpg"  # written grayscale into the source


@pytest.fixture
def tiny_source(tmp_path, monkeypatch) -> Path:
    """A data root holding the extracted ``tiny-imagenet-200`` of :func:`tiny_imagenet_zip`."""
    monkeypatch.setitem(SUBSETS, TINY2.name, TINY2)
    root = tmp_path / "source"
    with zipfile.ZipFile(tiny_imagenet_zip(tmp_path / "tiny.zip")) as archive:
        archive.extractall(root)
    return root


@pytest.fixture
def dtd_source(tmp_path, monkeypatch) -> Path:
    """A data root holding DTD as ``get_dataset("dtd", download=True)`` leaves it (``dtd/dtd/images``),
    300 x 320 px images, one of them grayscale."""
    monkeypatch.setitem(SUBSETS, DTD2.name, DTD2)
    root = tmp_path / "source"
    with tarfile.open(dtd_tar(tmp_path / "dtd.tar.gz")[0]) as archive:
        archive.extractall(root / "dtd", filter="data")
    (root / "dtd" / "dtd" / "images" / GREY_DTD).write_bytes(image_bytes((90, 0, 0), (300, 320), mode="L"))
    return root


def build_unrecorded(name: str, source: Path, target: Path) -> Built:
    """Build a subset whose recorded digest no folder has: it warns."""
    with pytest.warns(UserWarning, match="is not the folder the committed runs used"):
        return build_subset(name, source, target, progress=False)


def files_under(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())


# --- Tiny ImageNet ----------------------------------------------------------------------------
def test_tiny_imagenet_subset_is_the_original_files_of_its_classes_in_its_order(tiny_source, tmp_path):
    built = build_unrecorded("tiny2", tiny_source, tmp_path / "out")
    source, folder = tiny_source / "tiny-imagenet-200", tmp_path / "out" / "tiny-imagenet-200"
    assert built.folder == folder and not built.matches
    assert (folder / "wnids.txt").read_text() == "n07749582\nn09246464\n"
    assert (folder / "words.txt").read_text() == "".join(f"{w}\t{TINY_WORDS[w]}\n" for w in TINY2.classes)
    kept = [(name, wnid) for name, wnid in TINY_VAL if wnid in TINY2.classes]
    assert (folder / "val" / "val_annotations.txt").read_text() == "".join(
        f"{name}\t{wnid}\t1\t2\t60\t61\n" for name, wnid in kept)  # the source's lines, in its order
    train = [f"train/{w}/{name}" for w in TINY2.classes
             for name in (f"{w}_boxes.txt", *(f"images/{w}_{n}.JPEG" for n in range(3)))]
    val = [f"val/images/{name}" for name, _ in kept]
    expected = sorted(["wnids.txt", "words.txt", "val/val_annotations.txt", *train, *val])
    assert files_under(folder) == expected and built.files == len(expected)  # no test/, no other class
    for relative in train + val:
        assert (folder / relative).read_bytes() == (source / relative).read_bytes()
    assert built.content_sha256 == folder_digest(folder)
    assert not list((tmp_path / "out").glob(".*"))


def test_a_build_that_reproduces_the_recorded_folder_says_so_without_warning(tiny_source, tmp_path, monkeypatch):
    first = build_unrecorded("tiny2", tiny_source, tmp_path / "first")
    monkeypatch.setitem(SUBSETS, "tiny2", dataclasses.replace(TINY2, content_sha256=first.content_sha256))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = build_subset("tiny2", tiny_source / "tiny-imagenet-200", tmp_path / "again", progress=False)
    assert again.matches and again.content_sha256 == first.content_sha256


def test_a_full_download_restricted_to_a_subset_is_the_built_subset(tiny_source, tmp_path):
    build_unrecorded("tiny2", tiny_source, tmp_path / "out")
    for split in ("train", "val"):
        full = get_dataset("tiny-imagenet", split, root=tiny_source, subset="tiny2")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a named subset is no surprise: no class-count warning
            built = get_dataset("tiny-imagenet", split, root=tmp_path / "out", subset="tiny2")
        assert full.classes == built.classes == ["lemon", "cliff"]
        assert full.info["wnids"] == list(TINY2.classes) and full.info["subset"] == "tiny2"
        assert [(p.relative_to(tiny_source), y) for p, y in full.samples] == \
               [(p.relative_to(tmp_path / "out"), y) for p, y in built.samples]
        assert subset_record(full) == subset_record(built)
    val = get_dataset("tiny-imagenet", "val", root=tiny_source, subset="tiny2")
    assert sorted(p.name for p, _ in val.samples) == sorted(n for n, w in TINY_VAL if w in TINY2.classes)
    assert all(TINY2.classes[label] == dict(TINY_VAL)[p.name] for p, label in val.samples)
    assert held_out_split("tiny-imagenet", {"subset": "tin20"}) == "val"


def test_a_folder_lacking_a_class_of_the_subset_says_which_and_what_to_do(tiny_source, tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"lacks 17 of its 20 classes \(n02124075.*full Tiny ImageNet"):
        get_dataset("tiny-imagenet", "train", root=tiny_source, subset="tin20")
    with pytest.raises(DatasetNotFoundError, match=r"lacks 17 of its 20 classes.*as --source"):
        build_subset("tin20", tiny_source, tmp_path / "out", progress=False)
    with pytest.raises(ValueError, match=r"Unknown subset 'dtd6' of tiny-imagenet; known: tin20"):
        get_dataset("tiny-imagenet", "train", root=tiny_source, subset="dtd6")
    assert not (tmp_path / "out").exists()


def test_a_missing_source_names_the_layout_and_the_download(tmp_path, monkeypatch):
    monkeypatch.setitem(SUBSETS, TINY2.name, TINY2)
    with pytest.raises(DatasetNotFoundError, match=r"(?s)No full tiny-imagenet download.*wnids.txt.*download=True"):
        build_subset("tiny2", tmp_path / "nothing", tmp_path / "out", progress=False)
    with pytest.raises(DatasetNotFoundError, match=r"(?s)No full dtd download.*images/<class>.*download=True"):
        build_subset("dtd6", tmp_path / "nothing", tmp_path / "out", progress=False)
    with pytest.raises(ValueError, match="Unknown subset 'tin200'; known: tin20, dtd6"):
        build_subset("tin200", tmp_path, tmp_path / "out")


def test_a_missing_val_image_fails_before_anything_is_written(tiny_source, tmp_path):
    (tiny_source / "tiny-imagenet-200" / "val" / "images" / "val_0.JPEG").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"1 annotated val images .* missing .*val_0.JPEG"):
        build_subset("tiny2", tiny_source, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


# --- DTD --------------------------------------------------------------------------------------
def test_dtd_subset_is_its_classes_downscaled_to_the_longer_side(dtd_source, tmp_path):
    built = build_unrecorded("dtd2", dtd_source, tmp_path / "out")
    images = tmp_path / "out" / "dtd" / "images"
    assert built.folder == tmp_path / "out" / "dtd" and built.files == 12
    assert sorted(p.name for p in images.iterdir()) == ["banded", "striped"]  # nothing else, no labels/
    for path in sorted(images.rglob("*.jpg")):
        source = dtd_source / "dtd" / "dtd" / "images" / path.relative_to(images)
        with Image.open(path) as image, Image.open(source) as original:
            assert image.format == "JPEG" and image.size == (240, 256)  # 300 x 320 -> longer side 256
            assert image.mode == original.mode == ("L" if path.relative_to(images).as_posix() == GREY_DTD else "RGB")
            assert "exif" not in image.info and "icc_profile" not in image.info


def test_dtd_subset_is_read_as_a_folder_split_train_and_test(dtd_source, tmp_path):
    build_unrecorded("dtd2", dtd_source, tmp_path / "out")
    train = get_dataset("dtd", "train", root=tmp_path / "out", subset="dtd2")
    test = get_dataset("dtd", "test", root=tmp_path / "out", subset="dtd2")
    assert train.classes == test.classes == ["striped", "banded"]  # the subset's order
    assert len(train) + len(test) == 12 and not {p for p, _ in train.samples} & {p for p, _ in test.samples}
    assert all(path.parent.name == train.classes[label] for path, label in train.samples)
    assert held_out_split("dtd", {"subset": "dtd6"}) == "test" and train.info["subset"] == "dtd2"
    assert train[0][0].mode == "RGB"


def test_dtd_subset_pointed_at_the_full_download_says_to_build_it(dtd_source):
    with pytest.raises(DatasetNotFoundError, match=r"no folder .*dtd/images\. Build .*ib-tutorial subset build dtd2"):
        get_dataset("dtd", "train", root=dtd_source, subset="dtd2")
    with pytest.raises(DatasetNotFoundError, match=r"12 images .* larger than its 256 px.*full-size dtd.*build dtd2"):
        get_dataset("dtd", "train", root=dtd_source, subset="dtd2", folder="dtd/dtd")


def test_downscale_rounds_each_side_and_leaves_small_images_alone(tmp_path):
    downscale = Downscale(256, "bicubic", 90)
    assert downscale.size(640, 301) == (256, 120) and downscale.size(300, 300) == (256, 256)
    assert downscale.size(256, 100) == (256, 100) and downscale.size(1000, 1) == (256, 1)
    small = tmp_path / "small.jpg"
    small.write_bytes(image_bytes((1, 2, 3), (200, 100)))
    downscale.write(small, tmp_path / "copy.jpg")
    assert (tmp_path / "copy.jpg").read_bytes() == small.read_bytes()


# --- all or nothing ---------------------------------------------------------------------------
def test_a_failed_build_leaves_no_target_and_no_partial_folder(dtd_source, tmp_path):
    (dtd_source / "dtd" / "dtd" / "images" / "striped" / "striped_0003.jpg").write_bytes(b"not a jpeg")
    (tmp_path / "out").mkdir()
    before = snapshot(tmp_path / "out")
    with pytest.raises(CorruptImageError, match=r"Cannot read .*striped_0003.jpg.*download it again"):
        build_subset("dtd2", dtd_source, tmp_path / "out", progress=False)
    assert snapshot(tmp_path / "out") == before == {}


def test_an_existing_target_is_never_overwritten(dtd_source, tmp_path):
    (tmp_path / "out" / "dtd").mkdir(parents=True)
    (tmp_path / "out" / "dtd" / "mine.txt").write_text("keep me")
    before = snapshot(tmp_path / "out")
    with pytest.raises(FileExistsError, match=r"out/dtd exists; .* never built over an existing folder.*another --out"):
        build_subset("dtd2", dtd_source, tmp_path / "out", progress=False)
    assert snapshot(tmp_path / "out") == before


def test_an_interrupted_build_is_redone(dtd_source, tmp_path):
    (tmp_path / "out" / ".dtd.partial" / "images").mkdir(parents=True)
    (tmp_path / "out" / ".dtd.partial" / "images" / "stale.jpg").write_bytes(b"half")
    build_unrecorded("dtd2", dtd_source, tmp_path / "out")
    expected = [f"dtd/images/{c}/{c}_{n:04d}.jpg" for c in ("banded", "striped") for n in range(6)]
    assert files_under(tmp_path / "out") == expected  # not the stale file


# --- records and the command line ---------------------------------------------------------------
def test_training_file_digest_is_of_the_sorted_relative_paths():
    digest = training_file_digest(["/a/train/x/2.JPEG", "/a/train/x/1.JPEG"], "/a")
    assert digest == training_file_digest(["train/x/1.JPEG", "train/x/2.JPEG"])
    assert digest == training_file_digest([Path("/b/train/x/2.JPEG"), Path("/b/train/x/1.JPEG")], Path("/b"))
    assert digest == hashlib.sha256(b"train/x/1.JPEG\ntrain/x/2.JPEG\n").hexdigest()
    assert digest != training_file_digest(["train/x/1.JPEG"])


def test_subset_record_round_trips_and_covers_generated_data(tiny_source):
    record = subset_record(get_dataset("tiny-imagenet", "train", root=tiny_source, subset="tiny2"))
    assert record.subset == "tiny2" and record.class_ids == TINY2.classes and record.classes == ("lemon", "cliff")
    assert record.train_files == 6 and record.train_files_sha256 == training_file_digest(
        [f"train/{w}/images/{w}_{n}.JPEG" for w in TINY2.classes for n in range(3)])
    assert SubsetRecord.from_dict(record.to_dict()) == record and isinstance(record.to_dict()["classes"], list)
    synthetic = subset_record(get_dataset("synthetic-objects", "train", size=8, num_classes=2))
    assert (synthetic.subset, synthetic.train_files, synthetic.train_files_sha256) == (None, 8, None)


def test_specs_name_subsets():
    assert parse_spec("tiny-imagenet:subset=tin20") == ("tiny-imagenet", {"subset": "tin20"})
    assert parse_spec("dtd:subset=dtd6") == ("dtd", {"subset": "dtd6"})


def test_the_build_command(dtd_source, tmp_path, capsys):
    subsets.main(["build", "dtd2", "--source", str(dtd_source), "--out", str(tmp_path / "out"), "--no-progress"])
    out = capsys.readouterr().out
    assert "warning: " in out and "12 files, content sha256" in out and "DIFFERENT from the folder" in out
    with pytest.raises(SystemExit, match=r"^error: .*exists"):
        subsets.main(["build", "dtd2", "--source", str(dtd_source), "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit, match="^1$"):  # the test subset records no digest
        subsets.main(["check", "dtd2", "--root", str(tmp_path / "out"), "--no-progress"])
    assert "12 files, content sha256" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"^error: No folder .*elsewhere/dtd to check\. Build it: .*build dtd2"):
        subsets.main(["check", "dtd2", "--root", str(tmp_path / "elsewhere")])
    subsets.main(["list"])
    assert "dtd:subset=dtd6" in capsys.readouterr().out


# --- the committed data in ../shared/data -------------------------------------------------------
needs_real = needs(REAL)
needs_samples = needs(REAL, DTD_SAMPLE, TINY_SAMPLE)


@needs_real
def test_the_subsets_are_the_committed_runs_folders():
    assert SUBSETS["tin20"].classes == tuple((REAL / "tiny-imagenet-200" / "wnids.txt").read_text().split())
    assert SUBSETS["dtd6"].classes == tuple(sorted(p.name for p in (REAL / "dtd" / "images").iterdir()))
    for subset in (SUBSETS["tin20"], SUBSETS["dtd6"]):
        checked = check_subset(subset.name, REAL, progress=False)
        assert checked.matches and checked.files == subset.content_files


def test_a_run_given_a_subsets_folder_without_its_name_is_recognised_by_its_files():
    record = SubsetRecord(None, ("a",), ("a",), 10_000, SUBSETS["tin20"].train_files_sha256)
    assert record.named == "tin20"
    assert dataclasses.replace(record, train_files_sha256="f" * 64).named is None
    assert dataclasses.replace(record, train_files_sha256=None).named is None
    assert dataclasses.replace(record, subset="dtd6").named == "dtd6"  # the name given wins


@needs_real
def test_the_committed_runs_training_files_give_their_subsets_digest():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the plain read warns that 20 classes are a subset
        plain = {"tin20": get_dataset("tiny-imagenet", "train", root=REAL),
                 "dtd6": get_dataset("dtd", "train", root=REAL, folder="dtd")}
    for name, dataset in plain.items():
        assert subset_record(dataset).named == name


@needs_real
def test_subset_options_read_the_committed_runs_data_as_before():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the plain read warns that 20 classes are a subset
        plain = get_dataset("tiny-imagenet", "train", root=REAL)
    assert get_dataset("tiny-imagenet", "train", root=REAL, subset="tin20").samples == plain.samples
    assert get_dataset("dtd", "train", root=REAL, subset="dtd6").samples == \
           get_dataset("dtd", "train", root=REAL, folder="dtd").samples


@needs_real
def test_tin20_built_from_a_full_layout_is_byte_identical_to_the_committed_one(tmp_path):
    """A source in the full download's layout: the 20 classes (linked from real/) among
    decoys, words.txt in wnid order with other lines, val annotations interleaved."""
    real, full = REAL / "tiny-imagenet-200", tmp_path / "full" / "tiny-imagenet-200"
    decoys = ["n00000001", "n09999999"]
    wnids = real.joinpath("wnids.txt").read_text().split()
    (full / "train").mkdir(parents=True)
    (full / "wnids.txt").write_text("".join(f"{w}\n" for w in [decoys[0], *wnids[::-1], decoys[1]]))
    words = real.joinpath("words.txt").read_text().splitlines(keepends=True) + [f"{w}\tdecoy\n" for w in decoys]
    (full / "words.txt").write_text("".join(sorted(words)))
    for wnid in wnids:
        (full / "train" / wnid).symlink_to(real / "train" / wnid, target_is_directory=True)
    for wnid in decoys:
        (full / "train" / wnid / "images").mkdir(parents=True)
        (full / "train" / wnid / "images" / f"{wnid}_0.JPEG").write_bytes(image_bytes((1, 2, 3)))
    (full / "val" / "images").mkdir(parents=True)
    lines = []
    for number, line in enumerate(real.joinpath("val", "val_annotations.txt").read_text().splitlines(keepends=True)):
        name = line.split("\t")[0]
        (full / "val" / "images" / name).symlink_to(real / "val" / "images" / name)
        lines += [line, f"decoy_{number}.JPEG\t{decoys[number % 2]}\t0\t0\t63\t63\n"]
    (full / "val" / "val_annotations.txt").write_text("".join(lines))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        built = build_subset("tin20", tmp_path / "full", tmp_path / "out", progress=False)
    assert built.matches and built.files == SUBSETS["tin20"].content_files == 11_023


@needs_samples
def test_the_samples_match_the_committed_files_byte_for_byte(tmp_path):
    """The Tiny ImageNet sample's images are real/'s files; the DTD sample's images of the
    six classes, built through dtd6's downscale, are real/'s files."""
    sample, real = TINY_SAMPLE, REAL / "tiny-imagenet-200"
    images = [p.relative_to(sample) for p in sample.rglob("*.JPEG")]
    assert len(images) == 500 and all((sample / p).read_bytes() == (real / p).read_bytes() for p in images)
    source = tmp_path / "dtd"
    (source / "images").mkdir(parents=True)
    for name in SUBSETS["dtd6"].classes:
        (source / "images" / name).symlink_to(DTD_SAMPLE / "images" / name, target_is_directory=True)
    with pytest.warns(UserWarning, match="48 files"):  # 8 of each class's 120
        built = build_subset("dtd6", source, tmp_path / "out", progress=False)
    written = files_under(built.folder)
    assert len(written) == 48
    assert [p for p in written if (built.folder / p).read_bytes() != (REAL / "dtd" / p).read_bytes()] == []
