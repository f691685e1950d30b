"""The batched multi-crop path against the loader's PIL path: the same distributions
(crop geometry, brightness, contrast, saturation, grayscale and solarisation rates), not
the same pixels; and views that depend only on (seed, epoch, index)."""
import colorsys
import dataclasses

import numpy as np
import pytest
import torch
from PIL import Image
from scipy import stats
from torch.utils.data import DataLoader, Subset
from torchvision import transforms

from ib_tutorial.presets import ViewSettings
from ib_tutorial.training.augment import (
    CROP_DRAWS,
    IMAGENET_MEAN,
    IMAGENET_STD,
    BatchMultiCrop,
    DecodedImages,
    DeviceViewsLoader,
    MultiCropAugmentation,
    MultiCropDataset,
    crop_boxes,
)
from ib_tutorial.training.data import ResumableSampler

VIEW = ViewSettings(img_size=32, patch_size=8, local_crop_size=16, global_crop_scale=(0.4, 1.0),
                    local_crop_scale=(0.05, 0.4), blur_radius=(0.1, 2.0), color_strength=1.0)
LOCAL_CROPS = 2
CPU = torch.device("cpu")


def smooth_images(count: int, side: int = 64, seed: int = 0) -> list[tuple[Image.Image, int]]:
    """Images of smooth colour fields (4 x 4 noise enlarged): crops of them differ in
    colour and brightness, and resampling filters change them little."""
    rng = np.random.default_rng(seed)
    return [(Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)).resize((side, side), Image.BICUBIC), 0)
            for _ in range(count)]


@pytest.mark.parametrize("size, scale", [((64, 64), (0.4, 1.0)), ((64, 64), (0.05, 0.4)), ((300, 120), (0.4, 1.0))])
def test_crop_boxes_follow_torchvision_random_resized_crop(size, scale):
    width, height = size
    count = 4000
    draws = torch.rand(count, CROP_DRAWS, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    boxes = crop_boxes(draws, torch.full((count,), width), torch.full((count,), height), scale)
    assert (boxes[:, :2] >= 0).all() and (boxes[:, 2] <= width).all() and (boxes[:, 3] <= height).all()
    ours_w, ours_h = (boxes[:, 2] - boxes[:, 0]).numpy(), (boxes[:, 3] - boxes[:, 1]).numpy()
    torch.manual_seed(1)
    image = Image.new("RGB", size)
    theirs = np.array([transforms.RandomResizedCrop.get_params(image, list(scale), [3 / 4, 4 / 3])[2:] for _ in range(count)])
    theirs_h, theirs_w = theirs[:, 0], theirs[:, 1]
    for ours, reference in ((ours_w * ours_h / (width * height), theirs_w * theirs_h / (width * height)),
                            (ours_w / ours_h, theirs_w / theirs_h)):
        assert stats.ks_2samp(ours, reference).pvalue > 1e-3
    left = boxes[:, 0].numpy() / np.maximum(1, width - ours_w)  # offsets uniform over what is left
    assert 0.45 < left[width - ours_w > 0].mean() < 0.55


def view_statistics(views: list[torch.Tensor]) -> dict[str, np.ndarray]:
    """Per view of the second global crop (the one that may be solarised) and of the first
    local crop: mean brightness, contrast (pixel std), saturation (channel max - min),
    grayscale (channels equal) and solarised-looking (no pixel above the threshold, 128 of 255)."""
    mean = torch.tensor(IMAGENET_MEAN)[:, None, None]
    std = torch.tensor(IMAGENET_STD)[:, None, None]
    out = {}
    for name, number in (("global", 1), ("local", 2)):
        x = torch.stack([view[number] for view in views]) * std + mean
        spread = x.amax(dim=1) - x.amin(dim=1)
        out |= {f"{name} brightness": x.mean(dim=(1, 2, 3)).numpy(), f"{name} contrast": x.std(dim=(1, 2, 3)).numpy(),
                f"{name} saturation": spread.mean(dim=(1, 2)).numpy(),
                f"{name} grayscale": (spread.amax(dim=(1, 2)) < 2 / 255).numpy().astype(float)}
    second = torch.stack([view[1] for view in views]) * std + mean
    out["global solarised"] = (second.amax(dim=(1, 2, 3)) <= 128 / 255 + 1e-4).numpy().astype(float)
    return out


def loader_views(images, view, epochs: int) -> list[list[torch.Tensor]]:
    dataset = MultiCropDataset(images, MultiCropAugmentation(view, LOCAL_CROPS), seed=0)
    views = []
    for epoch in range(epochs):
        dataset.set_epoch(epoch)
        views += [dataset[index][0] for index in range(len(images))]
    return views


def batched_views(images, view, epochs: int) -> list[list[torch.Tensor]]:
    decoded = DecodedImages(images, BatchMultiCrop(view, LOCAL_CROPS, seed=0), CPU, progress=False)
    views = []
    for epoch in range(epochs):
        decoded.set_epoch(epoch)
        batch = decoded.views(torch.arange(len(images)), CPU)
        views += [[v[i] for v in batch] for i in range(len(images))]
    return views


def differing(first: dict, second: dict) -> list[str]:
    """The statistics whose means differ by more than four standard errors (plus a third
    of a point for the resampling filters, bicubic in PIL, averaged bilinear here)."""
    out = []
    for key in first:
        a, b = first[key], second[key]
        error = np.sqrt(a.var() / len(a) + b.var() / len(b))
        if abs(a.mean() - b.mean()) > 4 * error + 0.003:
            out.append(f"{key}: {a.mean():.4f} against {b.mean():.4f} (+- {error:.4f})")
    return out


@pytest.fixture(scope="module")
def images():
    return smooth_images(96)


@pytest.fixture(scope="module")
def loader_statistics(images):
    return view_statistics(loader_views(images, VIEW, epochs=8))


def test_the_batched_views_have_the_loader_paths_distributions(images, loader_statistics):
    batched = view_statistics(batched_views(images, VIEW, epochs=8))
    assert not differing(batched, loader_statistics)
    assert 0.1 < batched["global grayscale"].mean() < 0.3  # DINO's p = 0.2 is visible at all


def test_the_comparison_sees_a_recipe_that_differs(images, loader_statistics):
    """The same check fails when the batched path runs without colour augmentation."""
    plain = dataclasses.replace(VIEW, color_strength=0.0)
    found = differing(view_statistics(batched_views(images, plain, epochs=8)), loader_statistics)
    assert any("grayscale" in line for line in found) and any("saturation" in line for line in found)


def test_views_depend_only_on_seed_epoch_and_index(images):
    decoded = DecodedImages(images[:8], BatchMultiCrop(VIEW, LOCAL_CROPS, seed=0), CPU, progress=False)
    together = decoded.views(torch.arange(8), CPU)
    reordered = decoded.views(torch.tensor([5, 3]), CPU)
    assert all(torch.equal(whole[[5, 3]], part) for whole, part in zip(together, reordered))
    decoded.set_epoch(1)
    assert not torch.equal(decoded.views(torch.arange(8), CPU)[0], together[0])
    other_seed = DecodedImages(images[:8], BatchMultiCrop(VIEW, LOCAL_CROPS, seed=1), CPU, progress=False)
    assert not torch.equal(other_seed.views(torch.arange(8), CPU)[0], together[0])


def test_a_loader_resumed_mid_epoch_deals_the_same_views_as_the_uninterrupted_one(images):
    decoded = DecodedImages(Subset(images, range(24)), BatchMultiCrop(VIEW, LOCAL_CROPS, seed=0), CPU, progress=False)

    def epoch_batches(skip: int):
        sampler = ResumableSampler(decoded, num_replicas=1, rank=0, shuffle=True, seed=0)
        sampler.set_epoch(3)
        sampler.skip = skip
        decoded.set_epoch(3)
        loader = DeviceViewsLoader(DataLoader(decoded, batch_size=4, sampler=sampler, drop_last=True), decoded, CPU)
        return list(loader)

    whole, resumed = epoch_batches(0), epoch_batches(8)
    assert len(resumed) == len(whole) - 2
    for (views, labels), (again, again_labels) in zip(whole[2:], resumed):
        assert torch.equal(labels, again_labels) and all(torch.equal(a, b) for a, b in zip(views, again))


def test_images_of_different_sizes_keep_their_own_crop_geometry():
    """A wide image is stored as a square, with its own size beside it; its crop boxes are
    drawn in its own pixels (128 x 64), a square one's in 64 x 64."""
    wide = Image.fromarray(np.tile(np.repeat(np.array([0, 255], np.uint8), 8), (64, 8))[:, :, None].repeat(3, 2))
    decoded = DecodedImages([(wide, 0), (wide.crop((0, 0, 64, 64)), 0)], BatchMultiCrop(VIEW, 0, seed=0), CPU,
                            progress=False)
    assert decoded.pixels.shape[-1] == 128 and decoded.sizes.tolist() == [[128.0, 64.0], [64.0, 64.0]]
    boxes = decoded.augmentation.boxes(decoded.sizes, decoded.augmentation.draws(torch.arange(2), 0)[:, 0], decoded.augmentation.recipes[0])
    assert (boxes[0, 2] <= 128) and (boxes[1, 2] <= 64) and (boxes[:, 3] <= 64).all()


def splitmix64(state: int) -> int:
    """SplitMix64's output for one state, in Python's exact integers (the reference)."""
    z = state % 2**64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
    return z ^ (z >> 31)


def test_counter_draws_equal_splitmix64_written_out():
    from ib_tutorial.training.augment import SAMPLE_STRIDE, counter_uniforms

    key = 0x0123456789ABCDEF ^ (2**63)  # a key with the top bit set: negative as a signed integer
    indices = torch.tensor([0, 7, 123456])
    drawn = counter_uniforms(key, indices, 5)
    for row, index in enumerate(indices.tolist()):
        for j in range(5):
            state = key + (index * SAMPLE_STRIDE + j + 1) * 0x9E3779B97F4A7C15
            assert drawn[row, j].item() == (splitmix64(state) >> 40) / 2**24


def test_counter_draws_are_uniform_and_independent_of_the_batch():
    from ib_tutorial.training.augment import counter_uniforms

    drawn = counter_uniforms(42, torch.arange(2000), 50)
    assert 0 <= drawn.min() and drawn.max() < 1
    assert abs(drawn.mean().item() - 0.5) < 0.005 and abs(drawn.var().item() - 1 / 12) < 0.002
    counts = torch.histc(drawn, bins=20, min=0, max=1)
    expected = drawn.numel() / 20
    assert ((counts - expected) ** 2 / expected).sum().item() < 45  # chi-square, 19 degrees of freedom: p ~ 0.001
    # Neighbouring draws of a sample, and the same draw of neighbouring samples: uncorrelated
    # (one standard error of a correlation of 2,000 pairs is about 0.022).
    pairs = torch.corrcoef(torch.stack([drawn[1:, 0], drawn[1:, 1], drawn[:-1, 0]]))
    assert pairs[0, 1].abs() < 0.08 and pairs[0, 2].abs() < 0.08
    assert torch.equal(counter_uniforms(42, torch.tensor([1500, 3]), 50), drawn[[1500, 3]])


def test_views_made_a_batch_ahead_are_the_batches_views_in_order(images):
    # The loader makes the next batch's views before it hands out the current one (on a GPU,
    # on a stream of its own): what it yields is what each batch's indices give, in order.
    decoded = DecodedImages(Subset(images, range(16)), BatchMultiCrop(VIEW, LOCAL_CROPS, seed=0), CPU, progress=False)
    made = []
    original = decoded.views
    decoded.views = lambda indices, device: made.append(indices.tolist()) or original(indices, device)
    batches = DataLoader(decoded, batch_size=4, shuffle=False)
    loader = iter(DeviceViewsLoader(batches, decoded, CPU))
    views, labels = next(loader)
    assert made == [[0, 1, 2, 3], [4, 5, 6, 7]]  # the second batch's views are made before the first is used
    assert all(torch.equal(v, w) for v, w in zip(views, original(torch.arange(4), CPU)))
    rest = list(loader)
    assert len(rest) == 3 and made[-1] == [12, 13, 14, 15]
    assert all(torch.equal(v, w) for v, w in zip(rest[-1][0], original(torch.arange(12, 16), CPU)))
    assert torch.equal(rest[-1][1], torch.tensor([int(decoded.labels[i]) for i in range(12, 16)]))


def hue_rotations(views: list[list[torch.Tensor]]) -> np.ndarray:
    """The hue of each first local crop (never solarised) of a solid red image, in turns in
    [-0.5, 0.5), for the views that are not grayscale."""
    mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
    colours = [(view[2].mean(dim=(1, 2)) * std + mean).clamp(0, 1).tolist() for view in views]
    hues = [colorsys.rgb_to_hsv(*rgb)[0] for rgb in colours if max(rgb) - min(rgb) > 0.05]
    return (np.array(hues) + 0.5) % 1 - 0.5


@pytest.mark.parametrize("make_views", [loader_views, batched_views])
def test_hue_jitter_half_a_turn_draws_every_hue_and_dinos_keeps_the_hue_near(make_views):
    red = [(Image.new("RGB", (32, 32), (204, 41, 41)), 0)] * 40
    near = hue_rotations(make_views(red, VIEW, epochs=4))
    # DINO's jitter: at most a tenth of a turn (clipping after brightness and contrast moves
    # a saturated hue by a few hundredths more)
    assert np.abs(near).max() < 0.15
    anywhere = hue_rotations(make_views(red, dataclasses.replace(VIEW, hue_jitter=0.5), epochs=4))
    # Jittered with p = 0.8, uniformly over the turn: 0.8 x 0.4 of the views land beyond 0.3.
    assert 0.2 < np.mean(np.abs(anywhere) > 0.3) < 0.45


RED = (204, 41, 41)
UNCOLOURED = dataclasses.replace(VIEW, color_strength=0.0)  # no jitter, grayscale or solarisation


def view_colours(views: list[list[torch.Tensor]]) -> torch.Tensor:
    """``[samples, views, 3]``: the mean colour of every view, in [0, 1]."""
    mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
    return torch.stack([torch.stack([v.mean(dim=(1, 2)) for v in sample]) for sample in views]) * std + mean


def assert_others_drawn_as_without(make_views, changed, plain, kept: torch.Tensor) -> None:
    """On the batched path, the views an option left alone are the very views made without it:
    its draws come after every other draw."""
    if make_views is batched_views:
        assert all(torch.equal(changed[s][v], plain[s][v]) for s, v in kept.nonzero().tolist())


@pytest.mark.parametrize("make_views", [loader_views, batched_views])
def test_invert_turns_about_half_the_views_to_their_negative_and_nothing_else(make_views):
    red = [(Image.new("RGB", (32, 32), RED), 0)] * 40
    colour = torch.tensor(RED) / 255
    plain = make_views(red, UNCOLOURED, epochs=4)
    inverted = make_views(red, dataclasses.replace(UNCOLOURED, invert=0.5), epochs=4)
    pixels = view_colours(inverted)
    is_inverted = (pixels - (1 - colour)).abs().amax(dim=-1) < 0.02
    assert (((pixels - colour).abs().amax(dim=-1) < 0.02) | is_inverted).all()  # every view one colour or the other
    assert 0.4 < is_inverted.float().mean() < 0.6  # p = 0.5
    assert 0.01 < is_inverted.all(dim=1).float().mean() < 0.15  # each view drawn on its own: all four 1 in 16
    assert_others_drawn_as_without(make_views, inverted, plain, ~is_inverted)


@pytest.mark.parametrize("make_views", [loader_views, batched_views])
def test_grayscale_one_turns_every_view_grey_and_zero_none(make_views):
    red = [(Image.new("RGB", (32, 32), (204, 41, 41)), 0)] * 24
    mean, std = torch.tensor(IMAGENET_MEAN)[:, None, None], torch.tensor(IMAGENET_STD)[:, None, None]

    def grey_share(view: ViewSettings) -> float:
        views = [v * std + mean for sample in make_views(red, view, epochs=2) for v in sample]
        return float(np.mean([(v.amax(dim=0) - v.amin(dim=0)).max() < 2 / 255 for v in views]))

    assert grey_share(dataclasses.replace(VIEW, grayscale=1.0)) == 1.0
    assert grey_share(dataclasses.replace(VIEW, grayscale=0.0)) == 0.0


@pytest.mark.parametrize("make_views", [loader_views, batched_views])
def test_tone_curve_recolours_about_its_share_of_views_and_nothing_else(make_views):
    red = [(Image.new("RGB", (32, 32), RED), 0)] * 40
    plain = make_views(red, UNCOLOURED, epochs=4)
    curved = make_views(red, dataclasses.replace(UNCOLOURED, tone_curve=0.5), epochs=4)
    pixels = view_colours(curved)
    recoloured = (pixels - torch.tensor(RED) / 255).abs().amax(dim=-1) > 0.02
    assert 0.4 < recoloured.float().mean() < 0.6  # p = 0.5, each view on its own
    assert 0.2 < pixels[recoloured].std(dim=0).min() < 0.4  # every channel spread over [0, 1]
    assert_others_drawn_as_without(make_views, curved, plain, ~recoloured)
