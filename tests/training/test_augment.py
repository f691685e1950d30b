"""Multi-crop views: sizes, reproducibility per (seed, epoch, index), untouched caller state."""
import numpy as np
import pytest
import torch
from PIL import Image, ImageFilter

from ib_tutorial.presets import ViewSettings
from ib_tutorial.training.augment import (
    TONE_KNOTS,
    MultiCropAugmentation,
    MultiCropDataset,
    RandomGaussianBlur,
    RandomToneCurves,
    apply_tone_curves,
    eval_transform,
)

VIEW = ViewSettings(img_size=32, patch_size=8, local_crop_size=16)


class NoiseImages(torch.utils.data.Dataset):
    """Random RGB images with their index as label (a fixture for view tests only)."""

    def __init__(self, count: int, side: int):
        rng = np.random.default_rng(0)
        self.images = [Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)) for _ in range(count)]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.images[index], index


def test_views_have_the_configured_sizes():
    views = MultiCropAugmentation(VIEW, local_crops_number=3)(NoiseImages(1, 40)[0][0])
    assert [tuple(v.shape) for v in views] == [(3, 32, 32)] * 2 + [(3, 16, 16)] * 3
    assert all(v.dtype == torch.float32 for v in views)


def test_views_depend_only_on_seed_epoch_and_index():
    dataset = MultiCropDataset(NoiseImages(3, 32), MultiCropAugmentation(VIEW, 2), seed=5)
    first = dataset[1][0]
    torch.manual_seed(123)  # the caller's random state must not matter ...
    dataset[2]
    again = dataset[1][0]
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    dataset.set_epoch(1)
    other_epoch = dataset[1][0]
    assert not torch.equal(first[0], other_epoch[0])
    other_seed = MultiCropDataset(dataset.dataset, dataset.augmentation, seed=6)[1][0]
    assert not torch.equal(first[0], other_seed[0])


def test_views_leave_the_global_random_state_alone():
    dataset = MultiCropDataset(NoiseImages(2, 32), MultiCropAugmentation(VIEW, 2), seed=0)
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    dataset[0]
    assert torch.equal(torch.rand(3), expected)


def test_eval_transform_keeps_the_whole_square_image():
    image = Image.fromarray(np.full((64, 64, 3), 255, dtype=np.uint8))
    tensor = eval_transform(32)(image)
    assert tensor.shape == (3, 32, 32)
    white = (1 - torch.tensor([0.485, 0.456, 0.406])) / torch.tensor([0.229, 0.224, 0.225])
    torch.testing.assert_close(tensor.mean(dim=(1, 2)), white, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("img_size", [32, 224])
def test_blur_radius_scales_with_image_size(img_size):
    view = ViewSettings(img_size, 16 if img_size == 224 else 8, img_size // 2)
    blur = MultiCropAugmentation(view, 0).global_views[0]
    gaussian = next(t for t in blur.transforms if isinstance(t, RandomGaussianBlur))
    assert gaussian.radius == pytest.approx((0.1 * img_size / 224, 2.0 * img_size / 224))


def test_blur_is_pils_gaussian_and_follows_the_torch_generator():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    blur = RandomGaussianBlur(1.0, (1.0, 1.0))
    assert np.array_equal(np.asarray(blur(image)), np.asarray(image.filter(ImageFilter.GaussianBlur(1.0))))
    never = RandomGaussianBlur(0.0, (1.0, 2.0))
    assert never(image) is image
    some = RandomGaussianBlur(0.5, (0.5, 2.0))
    torch.manual_seed(3)
    first = [np.asarray(some(image)) for _ in range(6)]
    torch.manual_seed(3)
    assert all(np.array_equal(a, np.asarray(some(image))) for a in first)


def test_color_strength_zero_keeps_colours_and_no_blur_keeps_pixels():
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    view = ViewSettings(32, 8, 16, global_crop_scale=(1.0, 1.0), blur_radius=(0.0, 0.0), color_strength=0.0)
    torch.manual_seed(0)
    for crop in MultiCropAugmentation(view, 0)(image):  # full-area crops: only a flip may change them
        restored = crop * torch.tensor([0.229, 0.224, 0.225])[:, None, None] + torch.tensor([0.485, 0.456, 0.406])[:, None, None]
        pixels = torch.from_numpy(np.array(image)).permute(2, 0, 1) / 255
        assert min((restored - pixels).abs().max(), (restored - pixels.flip(-1)).abs().max()) < 1e-5


def test_tone_curves_interpolate_their_knots_channel_by_channel():
    x = torch.linspace(0, 1, 17).expand(2, 3, 4, 17).clone()  # [B, C, H, W]
    identity = torch.linspace(0, 1, TONE_KNOTS).expand(2, 3, TONE_KNOTS)
    assert torch.allclose(apply_tone_curves(x, identity), x, atol=1e-6)
    knots = torch.tensor([[0.0, 1.0, 0.0, 1.0, 0.0], [0.3] * TONE_KNOTS, [1.0, 0.75, 0.5, 0.25, 0.0]])
    curved = apply_tone_curves(x, knots.expand(2, 3, TONE_KNOTS))
    zigzag = (4 * x[:, 0] - 2 * torch.round(2 * x[:, 0])).abs()  # up, down, up, down
    assert torch.allclose(curved[:, 0], zigzag, atol=1e-6)
    assert torch.allclose(curved[:, 1], torch.full_like(x[:, 1], 0.3))
    assert torch.allclose(curved[:, 2], 1 - x[:, 2], atol=1e-6)  # a falling line is the inversion


def test_tone_curves_on_a_pil_image_keep_flat_regions_flat_and_follow_the_torch_generator():
    halves = np.zeros((8, 8, 3), dtype=np.uint8)
    halves[:, :4], halves[:, 4:] = 51, 204
    image = Image.fromarray(halves)
    torch.manual_seed(0)
    views = [np.asarray(RandomToneCurves(p=1.0)(image)).astype(int) for _ in range(40)]
    for view in views:  # each half stays one colour, each channel its own curve's value
        assert (view[:, :4] == view[0, 0]).all() and (view[:, 4:] == view[0, 4]).all()
    left = np.array([view[0, 0] for view in views]) / 255
    assert 0.2 < left.std() < 0.4 and abs(left.mean() - 0.5) < 0.15  # values near uniform on [0, 1]
    assert np.mean(left[:, 0] != left[:, 1]) > 0.9  # the channels draw their own curves
    torch.manual_seed(0)
    assert np.array_equal(np.asarray(RandomToneCurves(p=1.0)(image)), views[0])
    assert RandomToneCurves(p=0.0)(image) is image
