"""Weighted k-NN against a vote counted by hand, and on separable data."""
import os
import signal

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, get_worker_info

from ib_tutorial.measure.knn import (
    POOLS,
    extract_features,
    knn_accuracy,
    weighted_knn_predict,
)
from ib_tutorial.models import build_vit


def vote_by_hand(train_features, train_labels, query, num_classes, k, temperature):
    similarities = [(float(query @ feature), int(label)) for feature, label in zip(train_features, train_labels)]
    similarities.sort(key=lambda pair: -pair[0])
    scores = [0.0] * num_classes
    for similarity, label in similarities[:k]:
        scores[label] += torch.exp(torch.tensor(similarity / temperature)).item()
    return scores


def test_scores_equal_the_vote_by_hand(generator):
    train = F.normalize(torch.randn(40, 6, generator=generator), dim=1)
    labels = torch.randint(0, 4, (40,), generator=generator)
    queries = F.normalize(torch.randn(7, 6, generator=generator), dim=1)
    scores = weighted_knn_predict(train, labels, queries, num_classes=4, k=5, temperature=0.07, chunk=3)
    for query, row in zip(queries, scores):
        assert row.tolist() == pytest.approx(vote_by_hand(train, labels, query, 4, 5, 0.07), rel=1e-4)


def test_separable_clusters_are_classified_perfectly(generator):
    centres = F.normalize(torch.randn(5, 16, generator=generator), dim=1) * 10
    labels = torch.arange(5).repeat_interleave(20)
    points = F.normalize(centres[labels] + torch.randn(100, 16, generator=generator), dim=1)
    accuracy = knn_accuracy(points[::2], labels[::2], points[1::2], labels[1::2], num_classes=5)
    assert accuracy == {"top1": 100.0, "top5": 100.0}
    shuffled = knn_accuracy(points[::2], labels[::2][torch.randperm(50, generator=generator)],
                            points[1::2], labels[1::2], num_classes=5)
    assert shuffled["top1"] < 60.0


def test_features_are_unit_length_and_restore_training_mode(generator):
    backbone = build_vit("vit_tiny", img_size=16, patch_size=8, drop_path_rate=0.5).train()
    dataset = [(torch.randn(3, 16, 16, generator=generator), i % 3) for i in range(10)]
    features, labels = extract_features(backbone, dataset, batch_size=4, progress=False, pools=POOLS)
    assert labels.tolist() == [i % 3 for i in range(10)]
    for pool in POOLS:
        assert features[pool].shape == (10, 192)
        torch.testing.assert_close(features[pool].norm(dim=1), torch.ones(10))
    again, _ = extract_features(backbone, dataset, batch_size=3, progress=False, pools=POOLS)  # eval mode: no drop path
    torch.testing.assert_close(features, again)
    assert backbone.training


def test_pools_are_the_cls_token_and_the_mean_of_the_patch_tokens(generator):
    backbone = build_vit("vit_tiny", img_size=16, patch_size=8).eval()
    images = torch.randn(5, 3, 16, 16, generator=generator)
    features, _ = extract_features(backbone, [(image, 0) for image in images], progress=False, pools=("mean", "cls"))
    with torch.no_grad():
        tokens = backbone.forward_features(images)  # [5, 1 + 4, 192]
    assert tokens.shape == (5, 5, 192)
    torch.testing.assert_close(features["cls"], F.normalize(tokens[:, 0], dim=1))
    torch.testing.assert_close(features["mean"], F.normalize(tokens[:, 1:].mean(dim=1), dim=1))
    torch.testing.assert_close(features["cls"], F.normalize(backbone(images), dim=1))  # timm's own CLS pooling
    with pytest.raises(ValueError, match="Unknown pooling"):
        extract_features(backbone, [(images[0], 0)], progress=False, pools=("max",))


class SignalledInWorkers(Dataset):
    """Images whose loading sends SIGTERM and SIGINT to the worker process loading them: what
    a worker receives when a scheduler or Ctrl-C signals the whole process group."""

    def __init__(self, images: torch.Tensor):
        self.images = images

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if get_worker_info() is not None:
            for number in (signal.SIGTERM, signal.SIGINT):
                os.kill(os.getpid(), number)
        return self.images[index], index % 3


def test_feature_workers_ignore_stop_signals_and_leave_them_to_the_main_process(generator):
    backbone = build_vit("vit_tiny", img_size=16, patch_size=8).eval()
    images = torch.randn(8, 3, 16, 16, generator=generator)
    in_workers, labels = extract_features(backbone, SignalledInWorkers(images), batch_size=2, num_workers=2,
                                          progress=False)
    in_process, _ = extract_features(backbone, [(image, i % 3) for i, image in enumerate(images)], progress=False)
    assert labels.tolist() == [i % 3 for i in range(8)]
    torch.testing.assert_close(in_workers, in_process)
