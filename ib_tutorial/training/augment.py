r"""Multi-crop views for DINO: two global crops and ``n`` local crops of every image.

DINO's recipe (Caron et al., 2021): global crop 1: random resized crop, flip, colour jitter
(p = 0.8), grayscale (p = 0.2), blur (p = 1.0); global crop 2: the same with blur p = 0.1 and
solarisation p = 0.2; each local crop: flip, jitter, grayscale, blur p = 0.5. The blur radius
(DINO: 0.1-2.0 px at 224 px) scales with ``img_size / 224``. A sample's views depend only on
``(seed, epoch, index)``.

``augmentation="batched"`` (:class:`BatchMultiCrop`), for few CPU cores beside a GPU, decodes
every image once (:class:`DecodedImages`) and runs the same recipe on a batch on the device:
crops cut by ``roi_align`` (which averages when it shrinks, so it does not alias), kornia's
torchvision-matching jitter, counter-based draws (:func:`counter_uniforms`). The two paths draw
the same distributions but not the same pixels; the tests compare them.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from PIL import Image, ImageFilter
from torch.utils.data import Dataset
from tqdm.auto import tqdm

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
    """DINO's ``GaussianBlur``: PIL's blur with probability ``p``, radius uniform in ``radius`` (px),
    drawn from PyTorch's generator as torchvision's transforms are."""

    def __init__(self, p: float, radius: tuple[float, float]):
        self.p, self.radius = p, radius

    def __call__(self, image: Image.Image) -> Image.Image:
        if self.p < 1 and torch.rand(1).item() >= self.p:
            return image
        radius = self.radius[0] + (self.radius[1] - self.radius[0]) * torch.rand(1).item()
        return image.filter(ImageFilter.GaussianBlur(radius=radius))


def apply_tone_curves(x: torch.Tensor, knots: torch.Tensor) -> torch.Tensor:
    """Each channel of ``x`` [..., C, H, W] in [0, 1] through its own piecewise-linear curve,
    ``knots`` [..., C, TONE_KNOTS] its values at evenly spaced inputs from 0 to 1."""
    position = x.clamp(0, 1) * (TONE_KNOTS - 1)
    below = position.floor().clamp(max=TONE_KNOTS - 2)
    fraction = position - below
    flat = below.long().flatten(-2)
    low = knots.gather(-1, flat).view_as(x)
    high = knots.gather(-1, flat + 1).view_as(x)
    return low + (high - low) * fraction


class RandomToneCurves:
    """With probability ``p``, every channel through a random tone curve (:func:`apply_tone_curves`)."""

    def __init__(self, p: float):
        self.p = p

    def __call__(self, image: Image.Image) -> Image.Image:
        if torch.rand(1).item() >= self.p:
            return image
        knots = torch.rand(3, TONE_KNOTS)
        pixels = torch.from_numpy(np.asarray(image.convert("RGB"), dtype=np.float32) / 255).movedim(-1, 0)
        curved = apply_tone_curves(pixels, knots).movedim(0, -1)
        return Image.fromarray((curved * 255).round().to(torch.uint8).numpy())


def blur_radius(view: ViewSettings) -> tuple[float, float]:
    """DINO's blur radii scaled to ``view.img_size``."""
    scale = view.img_size / REFERENCE_SIZE
    return view.blur_radius[0] * scale, view.blur_radius[1] * scale


def _blur(p: float, view: ViewSettings):
    from torchvision import transforms

    radius = blur_radius(view)
    return RandomGaussianBlur(p, radius) if radius[1] > 0 else transforms.Compose([])


class MultiCropAugmentation:
    """PIL image -> the two global views, then ``local_crops_number`` local ones (normalised tensors)."""

    def __init__(self, view: ViewSettings, local_crops_number: int):
        from torchvision import transforms

        strength = view.color_strength
        jitter = transforms.ColorJitter(brightness=0.4 * strength, contrast=0.4 * strength, saturation=0.2 * strength,
                                        hue=view.hue_jitter * strength)
        flip_and_color_jitter = transforms.Compose([
            transforms.RandomHorizontalFlip(p=0.5), transforms.RandomApply([jitter], p=0.8),
            transforms.RandomGrayscale(p=view.grayscale * strength),
            # Only where asked for: RandomInvert draws even at p = 0, which would change
            # every later draw, and so the views of every run made without it.
            *([transforms.RandomInvert(p=view.invert)] if view.invert else []),
            *([RandomToneCurves(p=view.tone_curve)] if view.tone_curve else [])])
        bicubic = transforms.InterpolationMode.BICUBIC

        def global_crop():
            return transforms.RandomResizedCrop(view.img_size, scale=view.global_crop_scale, interpolation=bicubic)

        self.global_views = [
            transforms.Compose([global_crop(), flip_and_color_jitter, _blur(1.0, view), _normalize()]),
            transforms.Compose([global_crop(), flip_and_color_jitter, _blur(0.1, view),
                                transforms.RandomSolarize(threshold=128, p=0.2 * strength), _normalize()])]
        local_crop = transforms.RandomResizedCrop(view.local_crop_size, scale=view.local_crop_scale, interpolation=bicubic)
        self.local_view = transforms.Compose([local_crop, flip_and_color_jitter, _blur(0.5, view), _normalize()])
        self.local_crops_number = local_crops_number

    def __call__(self, image: Image.Image) -> list[torch.Tensor]:
        views = [make(image) for make in self.global_views]
        views += [self.local_view(image) for _ in range(self.local_crops_number)]
        return views


def eval_transform(img_size: int) -> transforms.Compose:
    """Resize the short side to ``img_size``, centre-crop, normalise."""
    from torchvision import transforms

    return transforms.Compose([transforms.Resize(img_size, interpolation=transforms.InterpolationMode.BICUBIC),
                               transforms.CenterCrop(img_size), _normalize()])


def sample_seed(seed: int, epoch: int, index: int) -> int:
    """A well-mixed 63-bit seed for one sample in one epoch."""
    return int(np.random.SeedSequence([seed, epoch, index]).generate_state(2, np.uint64)[0] >> np.uint64(1))


class MultiCropDataset(Dataset):
    """``(views, label)`` of every item of ``dataset``, augmented on PyTorch's CPU generator seeded
    with :func:`sample_seed`. Call :meth:`set_epoch` before each epoch's iterator."""

    def __init__(self, dataset: Dataset, augmentation: MultiCropAugmentation, seed: int):
        self.dataset, self.augmentation, self.seed, self.epoch = dataset, augmentation, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> tuple[list[torch.Tensor], int]:
        image, label = self.dataset[index]
        return self.augment(index, image), label

    def augment(self, index: int, image: Image.Image) -> list[torch.Tensor]:
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(sample_seed(self.seed, self.epoch, index))
            return self.augmentation(image)


TRIES = 10  # torchvision's RandomResizedCrop tries this many boxes before its centre crop
RATIO = (3 / 4, 4 / 3)
# Uniform draws per view: crop areas and log-ratios (one each per try), two offsets, flip,
# jitter or not, four jitter factors, four keys ordering the jitter, grayscale, blur or not,
# radius, solarisation; then inversion, then the tone curves, each added after the others so
# that the earlier draws stayed the same.
CROP_DRAWS = 2 * TRIES + 2
DRAWS = CROP_DRAWS + 16
TONE_DRAWS = 1 + 3 * TONE_KNOTS
LARGEST_SIDE = 256  # images of different sizes are stored at most this large


@dataclass(frozen=True)
class ViewRecipe:
    """One kind of view: output side, crop scale, probabilities of blur and solarisation."""

    size: int
    scale: tuple[float, float]
    blur: float
    solarize: float


def crop_boxes(draws: torch.Tensor, widths: torch.Tensor, heights: torch.Tensor,
               scale: tuple[float, float]) -> torch.Tensor:
    """[B, 4] boxes (x0, y0, x1, y1, image pixels) by torchvision's ``RandomResizedCrop.get_params``,
    from [B, CROP_DRAWS] uniform draws."""
    width, height = widths.to(draws), heights.to(draws)
    area = (width * height)[:, None]
    target = area * (scale[0] + (scale[1] - scale[0]) * draws[:, :TRIES])
    log_low, log_high = math.log(RATIO[0]), math.log(RATIO[1])
    aspect = torch.exp(log_low + (log_high - log_low) * draws[:, TRIES:2 * TRIES])
    w, h = torch.round(torch.sqrt(target * aspect)), torch.round(torch.sqrt(target / aspect))
    fits = (w > 0) & (h > 0) & (w <= width[:, None]) & (h <= height[:, None])
    first = fits.float().argmax(dim=1, keepdim=True)  # the first box that fits
    found = fits.any(dim=1)
    w, h = w.gather(1, first)[:, 0], h.gather(1, first)[:, 0]
    # No box fitted: the centre crop at the nearest allowed aspect ratio.
    in_ratio = width / height
    fallback_w = torch.where(in_ratio < RATIO[0], width, torch.where(in_ratio > RATIO[1], torch.round(height * RATIO[1]), width))
    fallback_h = torch.where(in_ratio < RATIO[0], torch.round(width / RATIO[0]), height)
    w, h = torch.where(found, w, fallback_w), torch.where(found, h, fallback_h)
    top = torch.where(found, torch.floor(draws[:, 2 * TRIES] * (height - h + 1)), torch.floor((height - h) / 2))
    left = torch.where(found, torch.floor(draws[:, 2 * TRIES + 1] * (width - w + 1)), torch.floor((width - w) / 2))
    return torch.stack([left, top, left + w, top + h], dim=1)


class BatchMultiCrop:
    """uint8 [B, 3, S, S] stored images -> the views of :class:`MultiCropAugmentation`, each
    [B, 3, side, side], on the images' device."""

    def __init__(self, view: ViewSettings, local_crops_number: int, seed: int):
        strength = view.color_strength
        local = ViewRecipe(view.local_crop_size, view.local_crop_scale, blur=0.5, solarize=0.0)
        self.recipes = [ViewRecipe(view.img_size, view.global_crop_scale, blur=1.0, solarize=0.0),
                        ViewRecipe(view.img_size, view.global_crop_scale, blur=0.1, solarize=0.2 * strength),
                        *[local] * local_crops_number]
        self.seed = seed
        self.jitter = (0.4 * strength, 0.4 * strength, 0.2 * strength, view.hue_jitter * strength)
        self.grayscale = view.grayscale * strength
        self.invert = view.invert
        self.tone_curve = view.tone_curve
        self.radius = blur_radius(view)

    def draws(self, indices: torch.Tensor, epoch: int) -> torch.Tensor:
        """[B, views, DRAWS] uniforms (``DRAWS + TONE_DRAWS`` with tone curves) of
        ``(seed, epoch, index)`` (:func:`counter_uniforms`)."""
        views, batch = len(self.recipes), len(indices)
        tone_draws = TONE_DRAWS if self.tone_curve else 0  # counter-based: the others' draws are the same
        per_sample = counter_uniforms(sample_seed(self.seed, epoch, 0), indices, views * (DRAWS + tone_draws))
        before, inversion, tone = per_sample.split([views * (DRAWS - 1), views, views * tone_draws], dim=1)
        return torch.cat([before.view(batch, views, DRAWS - 1), inversion[:, :, None],
                          tone.view(batch, views, tone_draws)], dim=2)

    def __call__(self, images: torch.Tensor, sizes: torch.Tensor, indices: torch.Tensor, epoch: int) -> list[torch.Tensor]:
        """``sizes``: [B, 2] each image's own (width, height); ``indices``: the samples' dataset indices."""
        draws = self.draws(indices.to(images.device), epoch)
        pixels = images.float() / 255
        return [self.make_view(pixels, sizes.to(images.device), draws[:, number], recipe)
                for number, recipe in enumerate(self.recipes)]

    def boxes(self, sizes: torch.Tensor, draws: torch.Tensor, recipe: ViewRecipe) -> torch.Tensor:
        return crop_boxes(draws[:, :CROP_DRAWS], sizes[:, 0], sizes[:, 1], recipe.scale)

    def make_view(self, pixels: torch.Tensor, sizes: torch.Tensor, draws: torch.Tensor, recipe: ViewRecipe) -> torch.Tensor:
        # Imported here: they cost a chapter that only reads results about two seconds.
        import kornia
        from torchvision.ops import roi_align

        batch, side = pixels.shape[0], pixels.shape[-1]
        boxes = self.boxes(sizes, draws, recipe)
        stored = boxes * (side / sizes.to(boxes).repeat(1, 2))  # image pixels -> the stored square's
        rois = torch.cat([torch.arange(batch, device=pixels.device, dtype=boxes.dtype)[:, None], stored], dim=1)
        x = roi_align(pixels, rois, output_size=recipe.size, spatial_scale=1.0, sampling_ratio=-1, aligned=True)
        u = iter(draws[:, CROP_DRAWS:DRAWS - 1].unbind(1))
        x = torch.where((next(u) < 0.5)[:, None, None, None], x.flip(-1), x)
        x = self.color_jitter(x, apply=next(u) < 0.8, factors=[next(u) for _ in range(4)], keys=[next(u) for _ in range(4)])
        gray = (next(u) < self.grayscale)[:, None, None, None]
        x = torch.where(gray, kornia.color.rgb_to_grayscale(x).expand_as(x), x)
        inverted = (draws[:, DRAWS - 1] < self.invert)[:, None, None, None]
        x = torch.where(inverted, 1 - x, x)
        if self.tone_curve:
            curved = (draws[:, DRAWS] < self.tone_curve)[:, None, None, None]
            knots = draws[:, DRAWS + 1:DRAWS + TONE_DRAWS].reshape(batch, 3, TONE_KNOTS)
            x = torch.where(curved, apply_tone_curves(x, knots), x)
        x = self.blur(x, apply=next(u) < recipe.blur, radius=self.radius[0] + (self.radius[1] - self.radius[0]) * next(u))
        solarized = (next(u) < recipe.solarize)[:, None, None, None]
        x = torch.where(solarized & (x >= 128 / 255), 1 - x, x)
        mean = torch.tensor(IMAGENET_MEAN, device=x.device)[:, None, None]
        std = torch.tensor(IMAGENET_STD, device=x.device)[:, None, None]
        return (x - mean) / std

    def color_jitter(self, x: torch.Tensor, apply: torch.Tensor, factors: list[torch.Tensor],
                     keys: list[torch.Tensor]) -> torch.Tensor:
        """torchvision's ``ColorJitter`` where ``apply``: factors uniform in [1 - b, 1 + b] (hue in
        [-h, h] of a turn), the four operations in the order that sorts ``keys``."""
        import kornia

        brightness, contrast, saturation, hue = self.jitter
        spans = (brightness, contrast, saturation)
        drawn = [1 - span + 2 * span * u for span, u in zip(spans, factors[:3])] + [hue * (2 * factors[3] - 1)]
        operations = (
            kornia.enhance.adjust_brightness_accumulative,
            kornia.enhance.adjust_contrast_with_mean_subtraction,
            kornia.enhance.adjust_saturation_with_gray_subtraction,
            lambda image, factor: kornia.enhance.adjust_hue(image, factor * 2 * math.pi),
        )
        order = torch.stack(keys, dim=1).argsort(dim=1)
        for position in range(4):
            for operation, (run, factor) in enumerate(zip(operations, drawn)):
                chosen = apply & (order[:, position] == operation)
                if chosen.any():
                    x[chosen] = run(x[chosen], factor[chosen]).clamp(0, 1)
        return x

    def blur(self, x: torch.Tensor, apply: torch.Tensor, radius: torch.Tensor) -> torch.Tensor:
        """PIL's Gaussian blur (its radius is the standard deviation) where ``apply``."""
        import kornia

        if self.radius[1] <= 0 or not apply.any():
            return x
        kernel = 2 * math.ceil(3 * self.radius[1]) + 1
        sigma = radius[apply][:, None].expand(-1, 2)
        blurred = x.clone()
        blurred[apply] = kornia.filters.gaussian_blur2d(x[apply], (kernel, kernel), sigma, border_type="reflect")
        return blurred


# SplitMix64 (Steele, Lea & Flood 2014): a stream's state advances by GOLDEN, and each state
# is finalised by two xor-shift-multiplies. Its constants as signed 64-bit integers, since
# PyTorch has no unsigned 64-bit arithmetic (multiplication wraps modulo 2^64 either way).
GOLDEN = 0x9E3779B97F4A7C15 - 2**64
MIX = (0xBF58476D1CE4E5B9 - 2**64, 0x94D049BB133111EB - 2**64)
SAMPLE_STRIDE = 2**20  # draws a sample may use; each sample's counters start this far apart


def _shift_right(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int64 bit patterns (``>>`` is arithmetic on signed integers)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def counter_uniforms(key: int, indices: torch.Tensor, count: int) -> torch.Tensor:
    r"""[B, count] uniforms in [0, 1): draw ``j`` of sample ``indices[b]`` is SplitMix64's output
    for the state :math:`k + (\mathrm{index}\cdot 2^{20} + j + 1)\,\gamma` of stream ``key``
    (the run's seed and the epoch), its top 24 bits scaled."""
    if count > SAMPLE_STRIDE:
        raise ValueError(f"{count} draws a sample, more than the {SAMPLE_STRIDE} its counters leave room for")
    key = key % 2**64 - (2**64 if key % 2**64 >= 2**63 else 0)
    counters = indices.to(torch.int64)[:, None] * SAMPLE_STRIDE + torch.arange(1, count + 1, device=indices.device)
    z = counters * GOLDEN + key
    z = (z ^ _shift_right(z, 30)) * MIX[0]
    z = (z ^ _shift_right(z, 27)) * MIX[1]
    z = z ^ _shift_right(z, 31)
    return _shift_right(z, 40).to(torch.float32) * 2.0**-24


class DecodedImages(Dataset):
    """Every image of ``dataset`` decoded once into uint8 [N, 3, S, S] (``pixels``, ``S`` at most
    :data:`LARGEST_SIDE`), with its (width, height) (``sizes``); items are ``(index, label)``."""

    def __init__(self, dataset: Dataset, augmentation: BatchMultiCrop, device: torch.device, progress: bool = True):
        self.augmentation, self.epoch = augmentation, 0
        images = [dataset[i] for i in tqdm(range(len(dataset)), desc="decoding images", disable=not progress)]
        widths, heights = zip(*(image.size for image, _ in images))
        side = widths[0] if len(set(widths + heights)) == 1 else min(LARGEST_SIDE, max(widths + heights))
        pixels = torch.empty(len(images), 3, side, side, dtype=torch.uint8)
        for row, (image, _) in enumerate(images):
            square = image.convert("RGB").resize((side, side), Image.Resampling.BICUBIC) if image.size != (side, side) else image.convert("RGB")
            pixels[row] = torch.frombuffer(bytearray(square.tobytes()), dtype=torch.uint8).view(side, side, 3).permute(2, 0, 1)
        self.sizes = torch.tensor(list(zip(widths, heights)), dtype=torch.float32)
        self.labels = torch.tensor([label for _, label in images])
        free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else float("inf")
        self.pixels = pixels.to(device) if pixels.numel() < free / 4 else pixels  # under a quarter of the free memory

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[int, int]:
        return index, int(self.labels[index])

    def views(self, indices: torch.Tensor, device: torch.device) -> list[torch.Tensor]:
        images = self.pixels[indices.to(self.pixels.device)].to(device, non_blocking=True)
        return self.augmentation(images, self.sizes[indices], indices, self.epoch)


class DeviceViewsLoader:
    """A loader of sample indices that yields ``(views, labels)`` made on ``device``; on a GPU,
    the next batch's views are made on a stream of their own while the current step runs."""

    def __init__(self, loader, images: DecodedImages, device: torch.device):
        self.loader, self.images, self.device = loader, images, device
        self.sampler = loader.sampler

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        side = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        pending = None
        for indices, labels in self.loader:
            made = self._make(indices, side)
            if pending is not None:
                yield self._ready(pending, side)
            pending = (made, labels)
        if pending is not None:
            yield self._ready(pending, side)

    def _make(self, indices: torch.Tensor, side) -> list[torch.Tensor]:
        with torch.no_grad(), (torch.cuda.stream(side) if side is not None else contextlib.nullcontext()):
            return self.images.views(indices, self.device)

    @staticmethod
    def _ready(pending, side) -> tuple[list[torch.Tensor], torch.Tensor]:
        views, labels = pending
        if side is not None:
            torch.cuda.current_stream(side.device).wait_stream(side)
            for view in views:  # made on the side stream, freed only after the step's use
                view.record_stream(torch.cuda.current_stream(side.device))
        return views, labels
