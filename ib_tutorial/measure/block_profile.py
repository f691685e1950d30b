"""Measure every transformer block of a ViT in one forward pass: a hook on each block hands
its output tokens [B, T, D] (the residual stream, before the final LayerNorm) to one
:class:`~ib_tutorial.measure.covariance.CovarianceAccumulator` per block.
"""
from __future__ import annotations

import contextlib
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

import torch
from tqdm.auto import tqdm

from ..machine import autocast
from .covariance import CovarianceAccumulator
from .metrics import eed_percent, effective_dimension_from_spectrum, participation_ratio_from_spectrum, twonn_dimension

Tokens = Literal["all", "cls", "patch", "mean"]  # which tokens feed the metric (select_tokens)
#: Which tokens can feed the metric, in order (the values of ``Tokens``).
TOKEN_CHOICES: tuple[str, ...] = typing.get_args(Tokens)
#: The measures a profile can report beside EED.
COMPANIONS = ("rankme", "participation_ratio", "twonn")


@dataclass
class Profile:
    """Per-block measurements of one model on one image set (``n_eff[l]`` belongs to block
    ``l``); ``metadata["schema"]`` constrains a field in the profile files' JSON Schema."""

    n_eff: list[float] = field(metadata={"schema": {"minItems": 1}})
    eed_percent: list[float] = field(metadata={"schema": {
        "minItems": 1, "items": {"type": "number", "minimum": 0, "maximum": 100}}})
    dim: int = field(metadata={"schema": {"minimum": 1}})
    tokens: Tokens
    center: bool
    n_images: int = field(metadata={"schema": {"minimum": 0}})
    n_tokens: int = field(metadata={"schema": {"minimum": 2}})
    companions: dict[str, list[float]] = field(default_factory=dict, metadata={"schema": {
        "additionalProperties": {"type": "array", "items": {"type": "number"}, "minItems": 1}}})

    @property
    def depth(self) -> int:
        return len(self.n_eff)

    def to_dict(self) -> dict:
        return asdict(self)


def select_tokens(block_output: torch.Tensor, tokens: str, num_prefix_tokens: int = 1) -> torch.Tensor:
    """Rows [N, D] that feed the metric from one block's output [B, T, D]: ``all`` tokens of
    every image, the ``cls`` token, the ``patch`` tokens, or each image's ``mean`` patch token."""
    if tokens == "all":
        selected = block_output
    elif tokens == "cls":
        selected = block_output[:, 0]
    elif tokens == "patch":
        selected = block_output[:, num_prefix_tokens:]
    elif tokens == "mean":
        selected = block_output[:, num_prefix_tokens:].mean(1)
    else:
        raise ValueError(f"tokens must be one of {TOKEN_CHOICES}, got {tokens!r}")
    return selected.reshape(-1, block_output.shape[-1])


@contextlib.contextmanager
def recording_blocks(model: torch.nn.Module, record: Callable[[int, torch.Tensor], None]):
    """While open, ``model`` is in eval mode and each of its blocks hands its output to
    ``record(block_index, output)``."""
    handles = [block.register_forward_hook(lambda _module, _inputs, output, index=index: record(index, output))
               for index, block in enumerate(model.blocks)]
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)


def image_batches(images_or_loader) -> Iterable[torch.Tensor]:
    """The image batches of one tensor [B, 3, H, W] or of an iterable of tensors or of
    ``(images, labels)`` pairs."""
    if isinstance(images_or_loader, torch.Tensor):
        yield images_or_loader
        return
    for batch in images_or_loader:
        yield batch[0] if isinstance(batch, (tuple, list)) else batch


class _TokenReservoir:
    """A uniform random sample of at most ``size`` rows from a stream (for TwoNN)."""

    def __init__(self, size: int, seed: int):
        self.size = size
        self.rows: torch.Tensor | None = None
        self.keys: torch.Tensor | None = None
        self.generator = torch.Generator().manual_seed(seed)

    def update(self, rows: torch.Tensor) -> None:
        rows = rows.detach().float().cpu()
        # Give every row seen so far an equal chance: keep the `size` smallest random keys.
        keys = torch.rand(rows.shape[0], generator=self.generator)
        if self.rows is None:
            self.rows, self.keys = rows, keys
        else:
            self.rows, self.keys = torch.cat([self.rows, rows]), torch.cat([self.keys, keys])
        if self.rows.shape[0] > self.size:
            keep = torch.topk(self.keys, self.size, largest=False).indices
            self.rows, self.keys = self.rows[keep], self.keys[keep]


@torch.no_grad()
def profile_model(model: torch.nn.Module, images_or_loader, tokens: str = "all", center: bool = True,
                  companions: Sequence[str] = (), device: torch.device | str | None = None, twonn_samples: int = 2000,
                  seed: int = 0, progress: bool = True) -> Profile:
    """Per-block EED (and any of :data:`COMPANIONS`) of a timm ViT on ``images_or_loader``
    (as :func:`image_batches` takes them), one forward pass per batch, on the model's device by
    default; ``tokens`` as :func:`select_tokens` takes them; ``center=False`` reads the uncentred
    :math:`H^\\top H / N`; TwoNN reads ``twonn_samples`` tokens per block, drawn with ``seed``."""
    (profile,) = profile_measurements(model, images_or_loader, [(tokens, center)], companions, device, twonn_samples,
                                      seed, progress)
    return profile


@torch.no_grad()
def profile_measurements(model: torch.nn.Module, images_or_loader, measurements: Sequence[tuple[str, bool]],
                         companions: Sequence[str] = (), device: torch.device | str | None = None,
                         twonn_samples: int = 2000, seed: int = 0, progress: bool = True) -> list[Profile]:
    """:func:`profile_model` for each ``(tokens, center)`` of ``measurements``, in order, all
    from one forward pass per batch: the same as one call each, for the price of one."""
    unknown_tokens = [tokens for tokens, _ in measurements if tokens not in TOKEN_CHOICES]
    if unknown_tokens:
        raise ValueError(f"tokens must be one of {TOKEN_CHOICES}, got {unknown_tokens[0]!r}")
    unknown = set(companions) - set(COMPANIONS)
    if unknown:
        raise ValueError(f"unknown companions {sorted(unknown)}; choose from {COMPANIONS}")
    blocks = getattr(model, "blocks", None)
    if blocks is None:
        raise TypeError("profile_model needs a ViT with a `.blocks` list (e.g. from ib_tutorial.models.vit_small)")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    dim, prefix = model.embed_dim, getattr(model, "num_prefix_tokens", 1)
    accumulators = [[CovarianceAccumulator(dim, center=center) for _ in blocks] for _, center in measurements]
    reservoirs = [[_TokenReservoir(twonn_samples, seed + i) for i in range(len(blocks))] if "twonn" in companions
                  else None for _ in measurements]

    def record(index: int, output: torch.Tensor) -> None:
        selected: dict[str, torch.Tensor] = {}  # one selection per token choice, shared by its measurements
        for (tokens, _), block_accumulators, block_reservoirs in zip(measurements, accumulators, reservoirs):
            if tokens not in selected:
                selected[tokens] = select_tokens(output, tokens, prefix)
            block_accumulators[index].update(selected[tokens])
            if block_reservoirs:
                block_reservoirs[index].update(selected[tokens])

    n_images = 0
    with recording_blocks(model, record), autocast(device):
        batches = tqdm(image_batches(images_or_loader), desc="profiling blocks", disable=not progress, leave=False)
        for images in batches:
            model.forward_features(images.to(device, non_blocking=True))
            n_images += images.shape[0]
    return [_summarise(accs, res, tokens, center, companions, dim, n_images)
            for accs, res, (tokens, center) in zip(accumulators, reservoirs, measurements)]


def _summarise(accumulators, reservoirs, tokens, center, companions, dim, n_images) -> Profile:
    spectra = [acc.spectrum() for acc in accumulators]
    n_eff = [effective_dimension_from_spectrum(s) for s in spectra]
    extra: dict[str, list[float]] = {}
    if "rankme" in companions:
        extra["rankme"] = [acc.rankme() for acc in accumulators]
    if "participation_ratio" in companions:
        extra["participation_ratio"] = [participation_ratio_from_spectrum(s) for s in spectra]
    if "twonn" in companions:
        extra["twonn"] = [twonn_dimension(r.rows) for r in reservoirs]
    return Profile(n_eff=n_eff, eed_percent=[eed_percent(n, dim) for n in n_eff], dim=dim, tokens=tokens, center=center,
                   n_images=n_images, n_tokens=accumulators[0].count, companions=extra)


@torch.no_grad()
def patch_eed(images_or_loader, patch_size: int, center: bool = True) -> tuple[float, int]:
    r""":math:`N_\mathrm{eff}` of the raw pixel patches a ViT with ``patch_size`` would embed,
    and their dimension :math:`3p^2`: the patch embedding is linear, so this baseline says how
    much of a profile the data sets."""
    accumulator = patch_covariance(images_or_loader, patch_size, center)
    return accumulator.effective_dimension(), accumulator.dim


def patch_covariance(images_or_loader, patch_size: int, center: bool = True,
                     dtype: torch.dtype = torch.float32) -> CovarianceAccumulator:
    """The covariance of the non-overlapping ``patch_size`` pixel patches of ``images_or_loader``
    (as :func:`image_batches` takes it), from the images in ``dtype``."""
    accumulator = None
    for images in image_batches(images_or_loader):
        patches = torch.nn.functional.unfold(images.to(dtype), patch_size, stride=patch_size)  # [B, Cp^2, T]
        rows = patches.transpose(1, 2).reshape(-1, patches.shape[1])
        accumulator = accumulator or CovarianceAccumulator(rows.shape[1], center=center)
        accumulator.update(rows)
    if accumulator is None:
        raise ValueError("no images to measure")
    return accumulator
