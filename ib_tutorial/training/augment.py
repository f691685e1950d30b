r"""Multi-crop views for DINO: two global crops and ``n`` local crops of every image.

DINO's recipe (Caron et al., 2021), with sizes taken from a
:class:`~ib_tutorial.presets.ViewSettings` so that it fits small images:

- global crop 1: random resized crop (area fraction in ``global_crop_scale``) to
  ``img_size``, flip, colour jitter (p = 0.8), grayscale (p = 0.2), Gaussian blur (p = 1.0);
- global crop 2: the same, but blur with p = 0.1 and solarisation with p = 0.2;
- each local crop: random resized crop (``local_crop_scale``) to ``local_crop_size``,
  flip, colour jitter, grayscale, blur with p = 0.5.

DINO blurs 224-pixel crops with PIL's Gaussian blur, its radius drawn from [0.1, 2.0]
pixels (``blur_radius``). A fixed pixel radius would erase a 32-pixel image, so here the
radius scales with ``img_size / 224``: every image loses the same fraction of its detail
as an ImageNet crop does (at 32 px that is under 0.3 pixels, nearly no change).
``color_strength`` scales the colour jitter and the grayscale and solarisation
probabilities (1 = DINO's); ``grayscale`` sets the grayscale probability before that scaling
(0.2 = DINO's); ``hue_jitter`` sets the jitter's largest hue rotation;
``invert`` (0 = DINO's) inverts a view's colours with that probability, after grayscale;
``tone_curve`` (0 = DINO's) passes a view's channels through random tone curves
(:func:`apply_tone_curves`) with that probability, after the inversion.

Every sample's views depend only on ``(seed, epoch, index)`` (see
:class:`MultiCropDataset`), so a run gives the same views with any number of loader
workers or DDP processes, and after a resume.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from PIL import Image, ImageFilter
from torch.utils.data import Dataset

from ..presets import ViewSettings

if TYPE_CHECKING:  # imported where a transform is made (:mod:`ib_tutorial.models` says why)
    from torchvision import transforms

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
REFERENCE_SIZE = 224  # the crop size DINO's blur radii were chosen for
TONE_KNOTS = 5  # a tone curve's values are drawn at 0, 1/4, 1/2, 3/4 and 1


def _normalize() -> transforms.Compose:
    from torchvision import transforms

    return transforms.Compose([transforms.ToTensor(), transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


class RandomGaussianBlur:
    """PIL's Gaussian blur with probability ``p`` and a radius uniform in ``radius`` (pixels),
    as DINO's ``GaussianBlur``; random draws come from PyTorch's generator, like
    torchvision's transforms, so :class:`MultiCropDataset` seeds them."""

    def __init__(self, p: float, radius: tuple[float, float]):
        self.p, self.radius = p, radius

    def __call__(self, image: Image.Image) -> Image.Image:
        if self.p < 1 and torch.rand(1).item() >= self.p:
            return image
        radius = self.radius[0] + (self.radius[1] - self.radius[0]) * torch.rand(1).item()
        return image.filter(ImageFilter.GaussianBlur(radius=radius))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p}, radius={self.radius})"


def apply_tone_curves(x: torch.Tensor, knots: torch.Tensor) -> torch.Tensor:
    """Each channel of ``x`` (``[..., C, H, W]`` in [0, 1]) through its own piecewise-linear
    curve: ``knots`` (``[..., C, TONE_KNOTS]``) are the curve's values at evenly spaced
    inputs from 0 to 1."""
    position = x.clamp(0, 1) * (TONE_KNOTS - 1)
    below = position.floor().clamp(max=TONE_KNOTS - 2)
    fraction = position - below
    flat = below.long().flatten(-2)
    low = knots.gather(-1, flat).view_as(x)
    high = knots.gather(-1, flat + 1).view_as(x)
    return low + (high - low) * fraction


class RandomToneCurves:
    """With probability ``p``, every channel of an RGB image through a random tone curve
    (:func:`apply_tone_curves`, values uniform in [0, 1]); draws come from PyTorch's
    generator, like torchvision's transforms."""

    def __init__(self, p: float):
        self.p = p

    def __call__(self, image: Image.Image) -> Image.Image:
        if torch.rand(1).item() >= self.p:
            return image
        knots = torch.rand(3, TONE_KNOTS)
        pixels = torch.from_numpy(np.asarray(image.convert("RGB"), dtype=np.float32) / 255).movedim(-1, 0)
        curved = apply_tone_curves(pixels, knots).movedim(0, -1)
        return Image.fromarray((curved * 255).round().to(torch.uint8).numpy())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


def _blur(p: float, view: ViewSettings):
    """DINO's blur with the radius scaled to ``view.img_size``; no-op when the radius is 0."""
    from torchvision import transforms

    scale = view.img_size / REFERENCE_SIZE
    radius = (view.blur_radius[0] * scale, view.blur_radius[1] * scale)
    return RandomGaussianBlur(p, radius) if radius[1] > 0 else transforms.Lambda(_unchanged)


def _unchanged(image: Image.Image) -> Image.Image:
    return image


class MultiCropAugmentation:
    """PIL image -> list of ``2 + local_crops_number`` normalised tensors.

    Views 0 and 1 are global, [3, img_size, img_size]; the rest are local,
    [3, local_crop_size, local_crop_size].
    """

    def __init__(self, view: ViewSettings, local_crops_number: int):
        from torchvision import transforms

        strength = view.color_strength
        flip_and_color_jitter = transforms.Compose(
            [
                transforms.RandomHorizontalFlip(p=0.5),
                transforms.RandomApply(
                    [transforms.ColorJitter(brightness=0.4 * strength, contrast=0.4 * strength,
                                            saturation=0.2 * strength, hue=view.hue_jitter * strength)], p=0.8
                ),
                transforms.RandomGrayscale(p=view.grayscale * strength),
                # Only where asked for: RandomInvert draws even at p = 0, which would change
                # every later draw, and so the views of every run made without it.
                *([transforms.RandomInvert(p=view.invert)] if view.invert else []),
                *([RandomToneCurves(p=view.tone_curve)] if view.tone_curve else []),
            ]
        )
        bicubic = transforms.InterpolationMode.BICUBIC

        def global_crop():
            return transforms.RandomResizedCrop(view.img_size, scale=view.global_crop_scale, interpolation=bicubic)

        self.global_views = [
            transforms.Compose([global_crop(), flip_and_color_jitter, _blur(1.0, view), _normalize()]),
            transforms.Compose(
                [
                    global_crop(),
                    flip_and_color_jitter,
                    _blur(0.1, view),
                    transforms.RandomSolarize(threshold=128, p=0.2 * strength),
                    _normalize(),
                ]
            ),
        ]
        self.local_view = transforms.Compose(
            [
                transforms.RandomResizedCrop(view.local_crop_size, scale=view.local_crop_scale, interpolation=bicubic),
                flip_and_color_jitter,
                _blur(0.5, view),
                _normalize(),
            ]
        )
        self.local_crops_number = local_crops_number

    def __call__(self, image: Image.Image) -> list[torch.Tensor]:
        views = [make(image) for make in self.global_views]
        views += [self.local_view(image) for _ in range(self.local_crops_number)]
        return views


def eval_transform(img_size: int) -> transforms.Compose:
    """No augmentation: resize the short side to ``img_size``, centre-crop, normalise.
    For the square images of every dataset here, the whole image is kept."""
    from torchvision import transforms

    return transforms.Compose(
        [
            transforms.Resize(img_size, interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.CenterCrop(img_size),
            _normalize(),
        ]
    )


def sample_seed(seed: int, epoch: int, index: int) -> int:
    """A well-mixed 63-bit seed for one sample in one epoch."""
    return int(np.random.SeedSequence([seed, epoch, index]).generate_state(2, np.uint64)[0] >> np.uint64(1))


class MultiCropDataset(Dataset):
    """``(views, label)`` for every ``(image, label)`` of ``dataset``, reproducibly.

    The augmentation of sample ``index`` in epoch ``epoch`` runs on PyTorch's CPU
    generator reseeded with :func:`sample_seed` and restored afterwards, so the views
    do not depend on worker count, process count, visiting order or resumption, and
    the caller's random state is left untouched. Call :meth:`set_epoch` before each
    epoch (before creating the loader's iterator).
    """

    def __init__(self, dataset: Dataset, augmentation: MultiCropAugmentation, seed: int):
        self.dataset = dataset
        self.augmentation = augmentation
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> tuple[list[torch.Tensor], int]:
        image, label = self.dataset[index]
        return self.augment(index, image), label

    def augment(self, index: int, image: Image.Image) -> list[torch.Tensor]:
        """The views of ``image`` as sample ``index`` of the current epoch."""
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(sample_seed(self.seed, self.epoch, index))
            return self.augmentation(image)
