r"""Weighted k-nearest-neighbour accuracy of frozen features (Wu et al., 2018; DINO's k-NN).

Each image is an L2-normalised feature, the final CLS token (``pool="cls"``, DINO's) or mean
patch token (``pool="mean"``); a held-out image votes with its :math:`k` most similar training
images, weighted by :math:`\exp(\cos / T)` (DINO: :math:`k = 20`, :math:`T = 0.07`):

.. math::
    \mathrm{score}(c) = \sum_{j \in \mathrm{top}_k} \exp\!\big(x^\top x_j / T\big)\,[y_j = c],
    \qquad \hat y = \arg\max_c \mathrm{score}(c).
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from tqdm.auto import tqdm

from ..machine import autocast, ignore_stop_signals
from .block_profile import select_tokens
from .metrics import effective_encoding_dimension

#: Image features the k-NN can use: the final CLS token, or the mean of the final patch tokens.
POOLS = ("cls", "mean")


@torch.no_grad()
def extract_features(backbone: torch.nn.Module, dataset: Dataset, batch_size: int = 256,
                     device: torch.device | str = "cpu", num_workers: int = 0, progress: bool = True,
                     pools: Sequence[str] = ("cls",)) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """L2-normalised features [N, D] (float32, on CPU) for each pooling in ``pools`` (:data:`POOLS`),
    from one pass in eval mode, and labels [N], of a dataset of ``(image tensor, label)`` pairs."""
    unknown = set(pools) - set(POOLS)
    if unknown:
        raise ValueError(f"Unknown pooling {sorted(unknown)}; choose from {', '.join(POOLS)}.")
    device = torch.device(device)
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers,
                        worker_init_fn=ignore_stop_signals)
    was_training = backbone.training
    backbone.eval()
    features: dict[str, list[torch.Tensor]] = {pool: [] for pool in pools}
    labels = []
    try:
        for images, targets in tqdm(loader, desc="k-NN features", disable=not progress, leave=False):
            with autocast(device):
                tokens = backbone.forward_features(images.to(device, non_blocking=True))
            for pool in pools:
                pooled = select_tokens(tokens, pool, backbone.num_prefix_tokens)
                features[pool].append(F.normalize(pooled.float(), dim=1).cpu())
            labels.append(torch.as_tensor(targets))
    finally:
        backbone.train(was_training)
    return {pool: torch.cat(chunks) for pool, chunks in features.items()}, torch.cat(labels)


@torch.no_grad()
def weighted_knn_predict(train_features: torch.Tensor, train_labels: torch.Tensor, query_features: torch.Tensor,
                         num_classes: int, k: int = 20, temperature: float = 0.07, chunk: int = 1024) -> torch.Tensor:
    """Class scores [M, C] of each query [M, D] by the weighted vote above, against training
    features [N, D] (rows L2-normalised) and labels [N]; ``k`` is capped at N, and ``chunk``
    queries at a time bound the memory at ``chunk * N`` floats."""
    k = min(k, train_features.shape[0])
    scores = []
    for queries in torch.split(query_features, chunk):
        similarity, neighbours = (queries @ train_features.T).topk(k, dim=1)
        weights = (similarity / temperature).exp()
        votes = torch.zeros(queries.shape[0], num_classes, dtype=weights.dtype, device=weights.device)
        votes.scatter_add_(1, train_labels[neighbours], weights)
        scores.append(votes)
    return torch.cat(scores)


def knn_accuracy(train_features: torch.Tensor, train_labels: torch.Tensor, query_features: torch.Tensor,
                 query_labels: torch.Tensor, num_classes: int, k: int = 20,
                 temperature: float = 0.07) -> dict[str, float]:
    """Top-1 and top-5 accuracy (percent) of :func:`weighted_knn_predict` on labelled queries."""
    scores = weighted_knn_predict(train_features, train_labels, query_features, num_classes, k, temperature)
    ranked = scores.argsort(dim=1, descending=True)
    correct = ranked == query_labels[:, None]
    return {
        "top1": 100.0 * correct[:, :1].any(dim=1).float().mean().item(),
        "top5": 100.0 * correct[:, : min(5, num_classes)].any(dim=1).float().mean().item(),
    }


def evaluate_knn(backbone: torch.nn.Module, train_set: Dataset, eval_set: Dataset, num_classes: int, k: int = 20,
                 temperature: float = 0.07, device: torch.device | str = "cpu", num_workers: int = 0) -> dict:
    r"""Weighted k-NN accuracy of ``backbone``'s features, ``eval_set`` against ``train_set``
    (both of ``(image tensor, label)`` pairs): ``top1``/``top5`` on the CLS token (DINO's
    evaluation), ``top1_mean``/``top5_mean`` on mean-pooled patch tokens; and
    ``n_eff``/``n_eff_mean``, the effective dimension (EED's :math:`N_\mathrm{eff}`) of
    the held-out features of each kind, where dimensional collapse shows first."""
    extract = dict(device=device, num_workers=num_workers, progress=False, pools=POOLS)
    train_features, train_labels = extract_features(backbone, train_set, **extract)
    eval_features, eval_labels = extract_features(backbone, eval_set, **extract)
    record = {}
    for pool in POOLS:
        accuracy = knn_accuracy(train_features[pool], train_labels, eval_features[pool], eval_labels,
                                num_classes, k, temperature)
        suffix = "" if pool == "cls" else f"_{pool}"
        record.update({f"{name}{suffix}": value for name, value in accuracy.items()})
        record[f"n_eff{suffix}"] = effective_encoding_dimension(eval_features[pool].double())
    return {**record, "k": k, "n_train": len(train_labels), "n_eval": len(eval_labels)}
