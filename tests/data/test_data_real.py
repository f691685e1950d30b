"""The real-dataset loaders, on tiny archives in the published layouts served to the real
download code (file:// URLs), and on the real samples in ../shared/data when present."""
import json
from collections import Counter

import numpy as np
import pytest
import torchvision
from archive_builders import (
    CIFAR_FINE_NAMES,
    DTD_CLASSES,
    EUROSAT_CLASSES,
    TINY_GRAYSCALE,
    TINY_VAL,
    TINY_WNIDS,
    UC_CLASSES,
    UC_ODD,
    cifar100_tar,
    dtd_tar,
    eurosat_zip,
    served,
    tiny_imagenet_zip,
    uc_merced_zip,
)
from shared_data import DTD_SAMPLE, TINY_SAMPLE, needs

from ib_tutorial.data import get_dataset, tiny_imagenet, torchvision_sets, uc_merced
from ib_tutorial.data.archives import COMPLETE_MARKER, md5_of
from ib_tutorial.training.runs import RunDirectory


@pytest.fixture
def tiny_root(tmp_path, monkeypatch):
    archive = tiny_imagenet_zip(tmp_path / "server" / "tiny-imagenet-200.zip")
    monkeypatch.setattr(tiny_imagenet, "ARCHIVE", served(archive))
    return tmp_path / "data"


def test_tiny_imagenet_downloads_verifies_extracts_and_labels_from_the_annotations(tiny_root):
    val = get_dataset("tiny-imagenet", "val", root=tiny_root, download=True)
    folder = tiny_root / "tiny-imagenet-200"
    assert md5_of(tiny_root / "tiny-imagenet-200.zip") == tiny_imagenet.ARCHIVE.md5
    assert json.loads((folder / COMPLETE_MARKER).read_text())["md5"] == tiny_imagenet.ARCHIVE.md5
    assert not list(tiny_root.glob(".*.partial"))

    assert val.classes == ["cliff", "bullfrog", "lemon"]  # wnids.txt order, first name in words.txt
    annotated = dict(line.split("\t")[:2] for line in (folder / "val" / "val_annotations.txt").read_text().splitlines())
    assert len(val) == len(TINY_VAL)
    for (path, label), (image, item_label) in zip(val.samples, val):
        assert label == item_label == TINY_WNIDS.index(annotated[path.name])
        assert image.mode == "RGB" and image.size == (64, 64)
        red, green, _ = image.getpixel((5, 5))  # the builder painted (200, 40 * label, 0)
        assert abs(green - 40 * label) <= 3 and abs(red - 200) <= 3


def test_tiny_imagenet_train_labels_and_grayscale_to_rgb(tiny_root):
    train = get_dataset("tiny-imagenet", "train", root=tiny_root, download=True)
    assert Counter(train.targets) == {0: 3, 1: 3, 2: 3}
    for path, label in train.samples:
        assert path.parent.parent.name == TINY_WNIDS[label]
    grey_index = [str(p).endswith(TINY_GRAYSCALE.split("/", 1)[1]) for p, _ in train.samples].index(True)
    image, _ = train[grey_index]
    pixels = np.asarray(image)
    assert image.mode == "RGB" and pixels.shape == (64, 64, 3)
    assert np.array_equal(pixels[..., 0], pixels[..., 1]) and np.array_equal(pixels[..., 1], pixels[..., 2])


def test_a_prepared_dataset_needs_neither_archive_nor_download(tiny_root):
    get_dataset("tiny-imagenet", "val", root=tiny_root, download=True)
    (tiny_root / "tiny-imagenet-200.zip").unlink()
    assert len(get_dataset("tiny-imagenet", "train", root=tiny_root)) == 9


@pytest.fixture
def uc_root(tmp_path, monkeypatch):
    archive = uc_merced_zip(tmp_path / "server" / "UCMerced_LandUse.zip")
    monkeypatch.setattr(uc_merced, "ARCHIVE", served(archive))
    return tmp_path / "data"


def test_uc_merced_split_is_stratified_deterministic_and_disjoint(uc_root):
    train = get_dataset("uc-merced", "train", root=uc_root, download=True)
    test = get_dataset("uc-merced", "test", root=uc_root)
    assert train.classes == test.classes == UC_CLASSES
    assert Counter(train.targets) == {0: 4, 1: 4, 2: 4} and Counter(test.targets) == {0: 1, 1: 1, 2: 1}
    train_files, test_files = {p for p, _ in train.samples}, {p for p, _ in test.samples}
    assert not train_files & test_files
    assert len(train_files | test_files) == 15
    for path, label in train.samples + test.samples:
        assert path.parent.name == UC_CLASSES[label] and path.name.startswith(UC_CLASSES[label])
    assert train.samples == get_dataset("uc-merced", "train", root=uc_root).samples
    other = {p for p, _ in get_dataset("uc-merced", "test", root=uc_root, split_seed=1).samples}
    assert other != test_files
    assert train.info == {**train.info, "train_fraction": 0.8, "split_seed": 0, "size_policy": "resize"}


def test_uc_merced_size_policy_for_the_odd_image(uc_root):
    odd_name = f"{UC_ODD[0]}{UC_ODD[1]:02d}.tif"
    sizes = {}
    for policy in ("resize", "keep"):
        for split in ("train", "test"):
            dataset = get_dataset("uc-merced", split, root=uc_root, download=True, size_policy=policy)
            for index, (path, _) in enumerate(dataset.samples):
                image = dataset[index][0]
                assert image.mode == "RGB"
                if path.name == odd_name:
                    sizes[policy] = image.size
                else:
                    assert image.size == (256, 256)
    assert sizes == {"resize": (256, 256), "keep": UC_ODD[2]}


def test_cifar100_from_its_pickles_through_torchvision(tmp_path, monkeypatch):
    archive, built = cifar100_tar(tmp_path / "server" / "cifar-100-python.tar.gz")
    for name, value in built["attributes"].items():
        monkeypatch.setattr(torchvision.datasets.CIFAR100, name, value)
    root = tmp_path / "data"
    for split in ("train", "test"):
        dataset = get_dataset("cifar100", split, root=root, download=True)
        batch = built["batches"][split]
        assert dataset.classes == CIFAR_FINE_NAMES
        assert list(dataset.targets) == batch[b"fine_labels"]
        image, label = dataset[3]
        assert label == batch[b"fine_labels"][3]
        assert np.array_equal(np.asarray(image), batch[b"data"][3].reshape(3, 32, 32).transpose(1, 2, 0))


def test_eurosat_through_torchvision_with_a_stratified_split(tmp_path, monkeypatch):
    monkeypatch.setattr(torchvision_sets, "EUROSAT_ARCHIVE", served(eurosat_zip(tmp_path / "server" / "EuroSAT.zip")))
    root = tmp_path / "data"
    train = get_dataset("eurosat", "train", root=root, download=True)
    test = get_dataset("eurosat", "test", root=root)
    assert train.classes == EUROSAT_CLASSES
    assert Counter(train.targets) == {0: 8, 1: 8, 2: 8} and Counter(test.targets) == {0: 2, 1: 2, 2: 2}
    assert not {p for p, _ in train.samples} & {p for p, _ in test.samples}
    assert all(path.parent.name == EUROSAT_CLASSES[label] for path, label in train.samples)


def test_dtd_official_partition_follows_the_labels_files(tmp_path, monkeypatch):
    archive, splits = dtd_tar(tmp_path / "server" / "dtd-r1.0.1.tar.gz")
    monkeypatch.setattr(torchvision.datasets.DTD, "_URL", archive.resolve().as_uri())
    monkeypatch.setattr(torchvision.datasets.DTD, "_MD5", md5_of(archive))
    root = tmp_path / "data"
    for split in ("train", "val", "test"):
        dataset = get_dataset("dtd", split, root=root, download=True)
        assert dataset.classes == DTD_CLASSES
        listed = [f"{DTD_CLASSES[label]}/{path.name}" for path, label in dataset.samples]
        assert listed == splits[split]
        assert dataset[0][0].mode == "RGB"


# --- the real samples ----------------------------------------------------------------
needs_tiny_sample = needs(TINY_SAMPLE)
needs_dtd_sample = needs(DTD_SAMPLE)


@needs_tiny_sample
def test_tiny_imagenet_sample(tmp_path):
    (tmp_path / "tiny-imagenet-200").symlink_to(TINY_SAMPLE, target_is_directory=True)
    with pytest.warns(UserWarning, match="lists 10 classes, not the official 200"):  # the sample is a subset
        train = get_dataset("tiny-imagenet", "train", root=tmp_path)
        val = get_dataset("tiny-imagenet", "val", root=tmp_path)
    assert (len(train), len(val)) == (400, 100)
    wnids = (TINY_SAMPLE / "wnids.txt").read_text().split()
    annotated = dict(line.split("\t")[:2] for line in (TINY_SAMPLE / "val" / "val_annotations.txt").read_text().splitlines())
    assert {path.name: wnids[label] for path, label in val.samples} == annotated
    assert all(path.parent.parent.name == wnids[label] for path, label in train.samples)
    modes = [image.mode for image, _ in list(train) + list(val)]
    assert modes == ["RGB"] * 500


@needs_dtd_sample
def test_dtd_sample_as_a_folder_of_classes():
    train = get_dataset("dtd", "train", folder=DTD_SAMPLE)
    test = get_dataset("dtd", "test", folder=DTD_SAMPLE)
    classes = sorted(p.name for p in (DTD_SAMPLE / "images").iterdir())
    assert train.classes == test.classes == classes
    assert len(train) + len(test) == sum(len(list((DTD_SAMPLE / "images" / c).glob("*.jpg"))) for c in classes)
    assert not {p for p, _ in train.samples} & {p for p, _ in test.samples}
    for dataset in (train, test):
        for index, (path, label) in enumerate(dataset.samples):
            assert path.parent.name == classes[label]
            assert dataset[index][0].mode == "RGB"


def test_tiny_imagenet_subset_states_its_class_count_and_warns(tiny_root):
    with pytest.warns(UserWarning, match=r"lists 3 classes, not the official 200: this is a subset"):
        train = get_dataset("tiny-imagenet", "train", root=tiny_root, download=True)
    assert train.info["num_classes"] == len(train.classes) == 3


def test_natural_held_out_split_of_every_dataset():
    from ib_tutorial.data import DATASETS, held_out_split

    for name, info in DATASETS.items():
        assert held_out_split(name) in info.splits
    assert held_out_split("tiny-imagenet") == "val" and held_out_split("cifar100") == "test"
    assert held_out_split("dtd") == "val" and held_out_split("dtd", {"folder": "any"}) == "test"


@needs_dtd_sample
def test_dtd_folder_trains_and_evaluates_from_the_command_line(tmp_path):
    from ib_tutorial.cli import main

    out = tmp_path / "run"
    main(["train", "--dataset", "dtd", "--dataset-option", f"folder={DTD_SAMPLE}", "--preset", "ci", "--out", str(out),
          "--no-progress", "--epochs", "1", "--train-images", "16", "--batch-size", "8", "--img-size", "16",
          "--patch-size", "8", "--local-crop-size", "8", "--knn-train-images", "16", "--knn-eval-images", "8",
          "--out-dim", "32", "--hidden-dim", "32", "--bottleneck-dim", "8"])
    assert RunDirectory(out).read_config().held_out_split == "test"
    knn = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if '"knn"' in line]
    assert [record["n_eval"] for record in knn] == [8, 8]


@needs_dtd_sample
def test_a_relative_dtd_folder_is_read_inside_the_data_root(tmp_path):
    (tmp_path / "textures").symlink_to(DTD_SAMPLE, target_is_directory=True)
    relative = get_dataset("dtd", "test", root=tmp_path, folder="textures")
    assert [p.name for p, _ in relative.samples] == [p.name for p, _ in get_dataset("dtd", "test", folder=DTD_SAMPLE).samples]
    with pytest.raises(Exception, match="inside the data root"):
        get_dataset("dtd", "test", root=tmp_path, folder="elsewhere")
