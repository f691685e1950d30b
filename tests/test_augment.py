"""Multi-crop views: sizes, reproducibility per (seed, epoch, index), untouched caller state."""
import numpy as np
import pytest
import torch
from PIL import Image
from torchvision import transforms

from ib_tutorial.augment import MultiCropAugmentation, MultiCropDataset, eval_transform
from ib_tutorial.presets import ViewSettings

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
    blur = MultiCropAugmentation(ViewSettings(img_size, 16 if img_size == 224 else 8, img_size // 2), 0).global_views[0]
    gaussian = next(
        t.transforms[0] for t in blur.transforms
        if isinstance(t, transforms.RandomApply) and isinstance(t.transforms[0], transforms.GaussianBlur)
    )
    assert gaussian.sigma == pytest.approx((0.1 * img_size / 224, 2.0 * img_size / 224))
