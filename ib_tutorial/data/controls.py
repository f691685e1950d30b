r"""Control inputs that separate what the input brings from what a network learned: the same
network on :class:`GaussianNoiseImages` (no structure at all), on :class:`PhaseScrambled` images
(the same second-order statistics, no objects or edges), and :func:`raw_patch_statistics` of the
raw pixel patches a ViT embeds. Both datasets hold image tensors [C, H, W] as the model receives
them; item ``index`` is a function of ``(seed, index)`` alone.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import Dataset

from ..measure.block_profile import patch_covariance
from ..measure.metrics import eed_percent, effective_dimension_from_spectrum

Tensor = torch.Tensor


def _image(item) -> Tensor:
    image = item[0] if isinstance(item, (tuple, list)) else item
    if not isinstance(image, torch.Tensor) or image.ndim != 3:
        raise TypeError("controls need image tensors [C, H, W]: give the dataset the transform that makes the "
                        f"model's inputs (the evaluation transform), not images of type {type(image).__name__}")
    return image


def channel_moments(dataset: Dataset, images: int | None = None) -> tuple[Tensor, Tensor]:
    """Per-channel mean and standard deviation [C] (float64) over every pixel of the first
    ``images`` images (all by default) of a dataset of image tensors or ``(image, label)`` pairs."""
    count = len(dataset) if images is None else min(images, len(dataset))
    if count < 1:
        raise ValueError("no images to take the moments of")
    total = squares = pixels = 0
    for index in range(count):
        image = _image(dataset[index]).to(torch.float64).flatten(1)
        total, squares, pixels = total + image.sum(1), squares + (image**2).sum(1), pixels + image.shape[1]
    mean = total / pixels
    return mean, (squares / pixels - mean**2).clamp_min(0).sqrt()


class GaussianNoiseImages(Dataset):
    r"""``size`` white Gaussian noise images, :math:`x_{chw} = \mu_c + \sigma_c z_{chw}` [C, H, W]
    (float32, ``mean`` and ``std`` per channel), each with label 0. Give ``shape`` the model's input
    side: resizing noise would correlate neighbouring pixels."""

    classes = ["noise"]

    def __init__(self, size: int, shape: Sequence[int], mean: Sequence[float], std: Sequence[float], seed: int = 0):
        channels = shape[0]
        if len(shape) != 3 or len(mean) != channels or len(std) != channels:
            raise ValueError(f"expected a shape (C, H, W) and C means and deviations, got {shape}, {mean}, {std}")
        self.size, self.shape, self.seed = size, tuple(shape), seed
        self.mean = torch.as_tensor(mean, dtype=torch.float64).reshape(-1, 1, 1)
        self.std = torch.as_tensor(std, dtype=torch.float64).reshape(-1, 1, 1)

    @classmethod
    def matching(cls, dataset: Dataset, size: int | None = None, images: int | None = None,
                 seed: int = 0) -> GaussianNoiseImages:
        """Noise with the :func:`channel_moments` and the shape of ``dataset``'s images, ``size``
        of them (as many as it has)."""
        mean, std = channel_moments(dataset, images)
        shape = _image(dataset[0]).shape
        return cls(len(dataset) if size is None else size, shape, mean.tolist(), std.tolist(), seed)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} out of range for {self.size} noise images")
        z = torch.from_numpy(np.random.default_rng([self.seed, index]).standard_normal(self.shape))
        return (self.mean + self.std * z).float(), 0


def phase_scramble(image: Tensor, rng: np.random.Generator) -> Tensor:
    r"""``image`` [C, H, W] with every channel's amplitude spectrum kept and its phases randomised.

    With :math:`F_c` the 2-D DFT of channel :math:`c` and :math:`\theta` the phases of one
    white-noise image [H, W], :math:`y_c = \mathrm{Re}\, \mathcal F^{-1}(F_c\, e^{i\theta})`,
    :math:`\theta_{00} = 0`. Turning every channel by the *same* :math:`\theta` keeps each pair's
    cross-spectrum :math:`F_c \bar F_d` (the colour correlations at every frequency) and each
    channel's mean; :math:`\theta` is odd, so :math:`y` is real up to round-off. No clipping
    (:class:`PhaseScrambled` clips).
    """
    if image.ndim != 3:
        raise ValueError(f"expected an image [C, H, W], got shape {tuple(image.shape)}")
    spectrum = torch.fft.fft2(image.to(torch.float64))
    noise = torch.from_numpy(rng.standard_normal(tuple(image.shape[-2:])))
    turn = torch.exp(1j * torch.angle(torch.fft.fft2(noise)))
    turn[0, 0] = 1
    return torch.fft.ifft2(spectrum * turn).real.to(image.dtype)


class PhaseScrambled(Dataset):
    """The images of ``dataset`` (image tensors, or ``(image, label, ...)`` items) through
    :func:`phase_scramble`, each item otherwise as it was.

    With ``clip`` each scrambled channel is clipped to the original channel's range, the one step
    that alters the amplitude spectrum (on 100 Tiny ImageNet validation images: 8 % of the pixels
    clipped, each spectrum moved 6 % on average); ``clip=False`` keeps the spectra exactly.
    """

    def __init__(self, dataset: Dataset, seed: int = 0, clip: bool = True):
        self.dataset, self.seed, self.clip = dataset, seed, clip
        self.classes = getattr(dataset, "classes", None)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Tensor | tuple:
        item = self.dataset[index]
        image = _image(item)
        scrambled = phase_scramble(image, np.random.default_rng([self.seed, index]))
        if self.clip:
            flat = image.flatten(1)
            scrambled = scrambled.clamp(flat.amin(1)[:, None, None], flat.amax(1)[:, None, None])
        return (scrambled, *item[1:]) if isinstance(item, (tuple, list)) else scrambled


@dataclass(frozen=True)
class PatchStatistics:
    """What raw pixel patches of side p span."""

    rank: int  # eigenvalues of their covariance above rtol times the largest
    n_eff: float
    dim: int  # C p^2

    @property
    def eed_percent(self) -> float:
        return eed_percent(self.n_eff, self.dim)


@torch.no_grad()
def raw_patch_statistics(images: Tensor | Iterable, patch_size: int, center: bool = True,
                         rtol: float = 1e-9) -> PatchStatistics:
    r"""Rank and :math:`N_\mathrm{eff}` of the non-overlapping ``patch_size`` patches of ``images``
    ([B, C, H, W], or an iterable of such batches or ``(images, labels)`` pairs): the rows a ViT's
    linear patch embedding maps to its first tokens. ``rtol`` lies far above float64 round-off,
    far below the :math:`10^{-6}` that 8-bit quantisation alone leaves."""
    accumulator = patch_covariance(images, patch_size, center, torch.float64)
    spectrum = accumulator.spectrum()
    rank = int((spectrum > rtol * spectrum[0]).sum())
    return PatchStatistics(rank, effective_dimension_from_spectrum(spectrum), accumulator.dim)
