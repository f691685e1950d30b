"""The synthetic object and texture worlds: determinism, balance, and where the label lives."""
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from ib_tutorial.data import DATASETS, get_dataset
from ib_tutorial.data.cues import (
    global_colour_statistics,
    local_patch_spectrum,
    probe,
    ridge_probe_accuracy,
)
from ib_tutorial.data.synthetic import PALETTE_GREYS, SyntheticWorld, shape_class, texture_class

WORLDS = ["synthetic-objects", "synthetic-textures", "synthetic-mix"]


@pytest.mark.parametrize("name", WORLDS)
def test_same_seed_and_index_give_identical_pixels(name):
    first = get_dataset(name, "train", seed=3, size=20)
    again = get_dataset(name, "train", seed=3, size=20)
    for index in (0, 7, 19):
        assert np.array_equal(np.asarray(first[index][0]), np.asarray(again[index][0]))
    other_seed = get_dataset(name, "train", seed=4, size=20)
    assert not np.array_equal(np.asarray(first[7][0]), np.asarray(other_seed[7][0]))


@pytest.mark.parametrize("name", WORLDS)
def test_splits_hold_different_images(name):
    images = {
        split: [get_dataset(name, split, size=30).image_array(index).tobytes() for index in range(30)]
        for split in ("train", "val", "test")
    }
    assert len(set(images["train"]) | set(images["val"]) | set(images["test"])) == 90


@pytest.mark.parametrize("size, num_classes", [(100, 10), (103, 7), (5, 12)])
def test_classes_are_balanced(size, num_classes):
    dataset = get_dataset("synthetic-objects", "train", size=size, num_classes=num_classes)
    counts = Counter(dataset.targets)
    assert len(dataset.classes) == num_classes
    assert sum(counts.values()) == size
    assert max(counts.values()) - min(counts.values()) <= 1
    assert [dataset[index][1] for index in range(size)] == dataset.targets


@pytest.mark.parametrize("img_size", [16, 33, 256])
@pytest.mark.parametrize("name", WORLDS)
def test_items_are_rgb_images_of_the_requested_size(name, img_size):
    image, label = get_dataset(name, "val", img_size=img_size, size=3)[2]
    assert isinstance(image, Image.Image)
    assert image.mode == "RGB" and image.size == (img_size, img_size)
    assert label == 2


def test_transform_is_applied():
    dataset = get_dataset("synthetic-textures", "train", size=4, transform=lambda image: np.asarray(image).shape)
    assert dataset[1] == ((32, 32, 3), 1)


def test_the_knob_blends_the_two_worlds_of_one_class():
    objects = get_dataset("synthetic-objects", "train", size=10)
    textures = get_dataset("synthetic-textures", "train", size=10)
    assert np.array_equal(get_dataset("synthetic-mix", "train", size=10, texture_weight=0.0).image_array(3), objects.image_array(3))
    assert np.array_equal(get_dataset("synthetic-mix", "train", size=10, texture_weight=1.0).image_array(3), textures.image_array(3))
    quarter = get_dataset("synthetic-mix", "train", size=10, texture_weight=0.25).image_array(3).astype(float)
    expected = 0.75 * objects.image_array(3) + 0.25 * textures.image_array(3)
    assert np.abs(quarter - expected).max() <= 1.0  # both endpoints and the blend are rounded once


@pytest.mark.parametrize("name", WORLDS)
def test_classes_mean_the_same_whatever_the_class_count(name):
    three = get_dataset(name, "train", num_classes=3, size=30)
    eight = get_dataset(name, "train", num_classes=8, size=30)
    assert three.classes == eight.classes[:3]
    for index in (1, 2, 24, 25):  # the same label under both counts: the same image
        assert np.array_equal(three.image_array(index), eight.image_array(index))
    assert not np.array_equal(three.image_array(3), eight.image_array(3))  # label 0 against label 3


def test_shapes_have_equal_area_and_differ():
    theta = np.linspace(0, 2 * np.pi, 4096, endpoint=False)
    radii = np.stack([shape_class(k).radius(theta) for k in range(20)])
    area = 0.5 * np.mean(radii**2, axis=1) * 2 * np.pi
    assert area == pytest.approx(np.full(20, np.pi), rel=1e-6)  # every class covers a unit disc's area
    assert radii.min() > 0
    distance = np.sqrt(np.mean((radii[:, None] - radii[None]) ** 2, axis=-1))
    assert distance[~np.eye(20, dtype=bool)].min() > 0.05


def test_texture_frequency_is_where_the_spectrum_peaks():
    texture = texture_class(5)
    spectrum = texture.spectrum(128)
    fy, fx = np.unravel_index(np.argmax(spectrum), spectrum.shape)
    peak = np.hypot(np.fft.fftfreq(128)[fy], np.fft.rfftfreq(128)[fx])
    assert peak == pytest.approx(texture.frequency, abs=1 / 128)


def _accuracy(name, features, num_classes=5):
    train = get_dataset(name, "train", num_classes=num_classes, size=600)
    val = get_dataset(name, "val", num_classes=num_classes, size=500)
    return probe(train, val, features)


def test_object_classes_are_not_separable_from_global_colour_statistics():
    # Chance is 0.2; with 500 test images its standard error is about 0.018.
    assert _accuracy("synthetic-objects", global_colour_statistics) < 0.28


def test_texture_classes_are_separable_from_a_local_patch():
    assert _accuracy("synthetic-textures", local_patch_spectrum) > 0.7


def test_the_ridge_probe_separates_what_is_separable_and_nothing_else():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 600)
    noise = rng.normal(size=(600, 4))
    informative = noise + 3 * np.eye(4)[labels]  # class c shifts feature c
    assert ridge_probe_accuracy(informative[:400], labels[:400], informative[400:], labels[400:]) > 0.95
    assert ridge_probe_accuracy(noise[:400], labels[:400], noise[400:], labels[400:]) < 0.45


def test_bad_options_name_the_fix():
    with pytest.raises(ValueError, match="synthetic-mix"):
        get_dataset("synthetic-objects", "train", texture_weight=0.3)
    with pytest.raises(ValueError, match=r"texture_weight must lie in \[0, 1\]"):
        get_dataset("synthetic-mix", "train", texture_weight=1.5)
    with pytest.raises(ValueError, match="between 16 and 256"):
        get_dataset("synthetic-textures", "train", img_size=8)
    with pytest.raises(ValueError, match="takes: img_size, num_classes, size, seed, texture_weight, object_scale, clutter, palette"):
        get_dataset("synthetic-textures", "train", image_size=32)
    with pytest.raises(ValueError, match="offers: train, val, test"):
        get_dataset("synthetic-textures", "validation")
    with pytest.raises(ValueError, match=r"object_scale must lie in \(0, 1.75\]"):
        get_dataset("synthetic-objects", "train", object_scale=2.0)
    with pytest.raises(ValueError, match=r"clutter must lie in \[0, 1\]"):
        get_dataset("synthetic-objects", "train", clutter=-0.1)
    with pytest.raises(ValueError, match="palette must be one of 'random', 'grey', got 'gray'"):
        get_dataset("synthetic-objects", "train", palette="gray")
    with pytest.raises(IndexError):
        SyntheticWorld("train", size=3)[3]


def test_clutter_and_object_scale_change_only_the_background_and_the_object_size():
    def world(**options):
        return get_dataset("synthetic-objects", "train", size=8, img_size=64, **options)

    assert np.array_equal(world(clutter=1.0, object_scale=1.0).image_array(5), world().image_array(5))
    # No clutter: every pixel is the background colour or the object's (or their antialiased edge).
    plain = world(clutter=0.0).image_array(5).reshape(-1, 3)
    colours, counts = np.unique(plain, axis=0, return_counts=True)
    assert counts[np.argsort(counts)[-2:]].sum() > 0.9 * len(plain)
    # The object's area grows with the square of its scale (the class's outline has the area of a unit disc).
    def object_pixels(scale: float) -> int:
        image = world(clutter=0.0, object_scale=scale).image_array(2).reshape(-1, 3)
        return int((np.abs(image.astype(int) - image[0].astype(int)).sum(axis=1) > 30).sum())

    assert object_pixels(1.5) / object_pixels(1.0) == pytest.approx(2.25, rel=0.2)


def test_grey_palette_paints_every_image_in_the_same_greys_and_keeps_the_object():
    def world(**options):
        return SyntheticWorld("train", size=12, img_size=32, object_scale=1.6, clutter=0.0, **options)

    assert all(np.array_equal(world(palette="random").image_array(i), world().image_array(i)) for i in range(12))
    grey, coloured = world(palette="grey"), world()
    object_grey, background_grey = (round(255 * PALETTE_GREYS[role]) for role in ("object", "background"))
    for index in range(12):
        image = grey.image_array(index).astype(int)
        assert (image == image[..., :1]).all()  # no saturation: R = G = B
        levels = image[..., 0]
        assert {levels.min(), levels.max()} == {background_grey, object_grey}
        # The same object at the same place and size: how much of each pixel the object covers is the
        # same at both palettes (to the rounding of 8-bit pixels).
        drawn = coloured.image_array(index).astype(float)
        object_colour, background_colour = drawn[levels == object_grey][0], drawn[levels == background_grey][0]
        across = object_colour - background_colour
        cover = (drawn - background_colour) @ across / (across @ across)
        assert np.abs(cover - (levels - background_grey) / (object_grey - background_grey)).max() < 0.05
    # The factors say what is painted: one object grey and one background grey; the same place and size.
    factors, drawn = grey.object_factors(3), coloured.object_factors(3)
    assert factors["object value"] == PALETTE_GREYS["object"] and factors["background value"] == PALETTE_GREYS["background"]
    assert factors["object hue"] == 0.0
    assert factors["object radius"] == drawn["object radius"] and factors["object x"] == drawn["object x"]


def test_grey_palette_paints_textures_between_the_same_two_greys():
    image = SyntheticWorld("train", size=4, texture_weight=1.0, palette="grey").image_array(2).astype(int)
    assert (image == image[..., :1]).all()
    dark, bright = round(255 * PALETTE_GREYS["texture dark"]), round(255 * PALETTE_GREYS["texture bright"])
    assert dark - 1 <= image.min() < image.max() <= bright + 1


def test_unknown_dataset_lists_the_known_names():
    with pytest.raises(ValueError) as error:
        get_dataset("imagenet", "train")
    assert all(name in str(error.value) for name in DATASETS)
