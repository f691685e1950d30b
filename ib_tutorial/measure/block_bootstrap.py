"""Bootstrap profiles of a network's blocks: one forward pass feeds every block's
per-image sums, from which :func:`~ib_tutorial.measure.bootstrap.bootstrap_eed` draws its replicates.

A hook on each block hands its output (and, for ``post_ln``, the output through the next
block's LayerNorm, :func:`~ib_tutorial.measure.variants.next_norms`) to one
:class:`~ib_tutorial.measure.bootstrap.ImageStatistics` per block (and per LayerNorm or not).
One pass per token choice, not one for all, bounds the memory: per-image Gram matrices of
every block for every choice would not fit at :math:`D = 384`.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import DataLoader, Dataset

from .block_profile import select_tokens
from .bootstrap import LEVEL, MAX_BYTES, REPLICATES, BootstrapProfile, ImageStatistics, bootstrap_eed
from .variants import get_variant, needed_sums, next_norms

Tensor = torch.Tensor

Measurement = tuple[str, str]  # (variant, tokens)


@contextlib.contextmanager
def _recording(model: torch.nn.Module, statistics: dict[tuple[bool, str], list[ImageStatistics]]) -> Iterator[None]:
    """Hooks, while open, that hand each block's output to ``statistics[(layer_norm, tokens)]``,
    through the next block's LayerNorm where ``layer_norm``."""
    prefix = getattr(model, "num_prefix_tokens", 1)
    norms = next_norms(model)

    def hook(index: int):
        def record(_module, _inputs, output: Tensor) -> None:
            normed = norms[index](output) if any(ln for ln, _ in statistics) else None
            for (layer_norm, tokens), blocks in statistics.items():
                chosen = select_tokens(normed if layer_norm else output, tokens, prefix)
                blocks[index].update(chosen.reshape(output.shape[0], -1, output.shape[-1]))

        return record

    handles = [block.register_forward_hook(hook(index)) for index, block in enumerate(model.blocks)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@torch.no_grad()
def bootstrap_blocks(model: torch.nn.Module, dataset: Dataset, measured: Sequence[Measurement],
                     replicates: int = REPLICATES, level: float = LEVEL, seed: int = 0, batch_size: int = 64,
                     max_bytes: int = 16 * MAX_BYTES, device: torch.device | str = "cpu"
                     ) -> dict[Measurement, BootstrapProfile]:
    """Bootstrap profiles of ``model``'s blocks on ``dataset`` for each of ``measured``: one
    forward pass per token choice, which feeds every block and every variant of that choice.

    Args:
        model: a timm ViT (``.blocks``, ``.norm``, ``.forward_features``).
        dataset: image tensors [C, H, W] (or ``(image, label)`` items) as the model receives them.
        measured: (variant, tokens) pairs, e.g. from
            :func:`~ib_tutorial.reproduction.measurement.measurements`.
        replicates, level, seed: the bootstrap's (one seed for every measurement, so those of
            one token choice share their replicates' images).
        max_bytes: the memory the per-image sums of one pass may take, shared equally by its
            accumulators (:class:`~ib_tutorial.measure.bootstrap.ImageStatistics`).
        device: where the forward passes and the bootstrap's float64 linear algebra run.
    """
    by_tokens: dict[str, dict[bool, set[str]]] = {}
    for variant, tokens in measured:
        by_tokens.setdefault(tokens, {}).setdefault(get_variant(variant).layer_norm, set()).add(variant)
    profiles = {}
    for tokens, sources in by_tokens.items():
        share = max_bytes // (len(sources) * len(model.blocks))
        statistics = {(layer_norm, tokens): [ImageStatistics(model.embed_dim, needed_sums(names), max_bytes=share,
                                                             seed=seed, expected_images=len(dataset))
                                             for _ in model.blocks]
                      for layer_norm, names in sources.items()}
        _forward(model, dataset, statistics, batch_size, device)
        for layer_norm, names in sources.items():
            for variant in names:
                profiles[(variant, tokens)] = bootstrap_eed(statistics[(layer_norm, tokens)], variant, replicates,
                                                            level, seed=seed, device=device)
    return {measurement: profiles[measurement] for measurement in measured}


def _forward(model: torch.nn.Module, dataset: Dataset, statistics: dict[tuple[bool, str], list[ImageStatistics]],
             batch_size: int, device: torch.device | str) -> None:
    """One pass of ``dataset`` through ``model`` (in eval mode) with :func:`_recording` open."""
    was_training = model.training
    model.eval()
    try:
        with _recording(model, statistics):
            for batch in DataLoader(dataset, batch_size=batch_size):
                images = batch[0] if isinstance(batch, (tuple, list)) else batch
                model.forward_features(images.to(device))
    finally:
        model.train(was_training)
