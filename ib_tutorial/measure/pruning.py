r"""Targeted spectral pruning: how many principal directions of a block's tokens does the
k-NN accuracy of its features need?

The training tokens of a block give principal directions :math:`U` and a mean :math:`\mu`;
pruning to :math:`k` keeps :math:`h \mapsto U_k^\top (h - \mu)` of the pooled feature, scored
by :mod:`ib_tutorial.measure.knn` for every :math:`k` and set beside :math:`N_\mathrm{eff}`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from ..machine import autocast
from .block_profile import recording_blocks, select_tokens
from .covariance import CovarianceAccumulator
from .knn import POOLS, knn_accuracy

KEEP_FRACTION = 0.95


@torch.no_grad()
def block_features(model: torch.nn.Module, dataset: Dataset, pool: str = "mean", with_tokens: bool = False,
                   batch_size: int = 64, device: torch.device | str = "cpu"
                   ) -> tuple[list[torch.Tensor], torch.Tensor, list[CovarianceAccumulator] | None]:
    """Every block's pooled features [N, D] of ``dataset`` (``(image, label)`` pairs) in one
    pass, the labels [N] and, with ``with_tokens``, the covariance of every block's tokens (all
    of them, CLS and patches, as EED measures them)."""
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {POOLS}, got {pool!r}")
    device = torch.device(device)
    prefix = getattr(model, "num_prefix_tokens", 1)
    pooled: list[list[torch.Tensor]] = [[] for _ in model.blocks]
    tokens = [CovarianceAccumulator(model.embed_dim) for _ in model.blocks] if with_tokens else None

    def record(index: int, output: torch.Tensor) -> None:
        pooled[index].append(select_tokens(output, pool, prefix).double().cpu())
        if tokens is not None:
            tokens[index].update(select_tokens(output, "all", prefix))

    labels = []
    with recording_blocks(model, record), autocast(device):
        for images, targets in DataLoader(dataset, batch_size=batch_size):
            model.forward_features(images.to(device))
            labels.append(torch.as_tensor(targets))
    return [torch.cat(chunks) for chunks in pooled], torch.cat(labels), tokens


def principal_directions(tokens: CovarianceAccumulator) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean [D] and the eigenvectors [D, D] (columns, largest variance first) of the tokens' covariance."""
    _, vectors = torch.linalg.eigh(tokens.covariance().double().cpu())
    return tokens.mean.double().cpu(), vectors.flip(-1)


def pruned_accuracy(train: torch.Tensor, train_labels: torch.Tensor, held_out: torch.Tensor,
                    held_out_labels: torch.Tensor, mean: torch.Tensor, directions: torch.Tensor | None,
                    ks: Sequence[int], num_classes: int, k_neighbours: int = 20, temperature: float = 0.07) -> list[float]:
    """k-NN top-1 accuracy (%) of the features pruned to each number of directions in ``ks``;
    with ``directions=None``, of the features centred on ``mean`` and not pruned (one value)."""
    def top1(train_features: torch.Tensor, held_out_features: torch.Tensor) -> float:
        return knn_accuracy(F.normalize(train_features.float(), dim=1), train_labels,
                            F.normalize(held_out_features.float(), dim=1), held_out_labels, num_classes,
                            k_neighbours, temperature)["top1"]

    train, held_out = train - mean, held_out - mean
    if directions is None:
        return [top1(train, held_out)]
    # Coordinates on every direction at once; pruning to k keeps the first k columns.
    train, held_out = train @ directions, held_out @ directions
    return [top1(train[:, :k], held_out[:, :k]) for k in ks]


def smallest_sufficient_k(ks: Sequence[int], accuracies: Sequence[float], unpruned: float,
                          keep: float = KEEP_FRACTION) -> int:
    """The fewest directions whose accuracy reaches ``keep`` of ``unpruned`` (the last ``k`` if none before)."""
    return next((k for k, accuracy in zip(ks, accuracies) if accuracy >= keep * unpruned), ks[-1])


@dataclass
class BlockPruning:
    """One block's pruning curve: accuracy (%) at each ``k``, the unpruned accuracy (which
    ``k = D`` reproduces), :func:`smallest_sufficient_k`, and the N_eff and number of the
    training tokens the directions were fitted on."""

    block: int
    ks: list[int]
    accuracy: list[float]
    unpruned: float
    sufficient_k: int
    n_eff: float
    n_tokens: int


def prune_blocks(model: torch.nn.Module, train_set: Dataset, held_out_set: Dataset, num_classes: int,
                 pool: str = "mean", ks: Sequence[int] | None = None, k_neighbours: int = 20,
                 temperature: float = 0.07, device: torch.device | str = "cpu") -> list[BlockPruning]:
    """The pruning curve of every block: directions fitted on ``train_set``'s tokens, k-NN
    of ``held_out_set`` against ``train_set`` (default ``ks``: every k from 1 to D)."""
    train, train_labels, train_tokens = block_features(model, train_set, pool, with_tokens=True, device=device)
    held_out, held_out_labels, _ = block_features(model, held_out_set, pool, device=device)
    ks = list(ks) if ks is not None else list(range(1, model.embed_dim + 1))
    curves = []
    for block, (train_features, held_out_features, tokens) in enumerate(zip(train, held_out, train_tokens)):
        mean, directions = principal_directions(tokens)
        data = (train_features, train_labels, held_out_features, held_out_labels, mean)
        accuracy = pruned_accuracy(*data, directions, ks, num_classes, k_neighbours, temperature)
        unpruned = pruned_accuracy(*data, None, (), num_classes, k_neighbours, temperature)[0]
        curves.append(BlockPruning(block, ks, accuracy, unpruned, smallest_sufficient_k(ks, accuracy, unpruned),
                                   tokens.effective_dimension(), tokens.count))
    return curves


def pruning_record(curves: list[BlockPruning], pool: str, num_classes: int, provenance: dict) -> dict:
    """JSON-ready data of a run's pruning curves with their provenance; ``chance`` is the
    k-NN accuracy (%) of guessing, 100 / number of classes."""
    return {"pool": pool, "keep_fraction": KEEP_FRACTION, "chance": 100 / num_classes,
            "blocks": [asdict(c) for c in curves], "provenance": provenance}
