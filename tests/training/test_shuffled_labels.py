"""The supervised control on shuffled labels: the same images and class counts, labels that
carry nothing, the true labels for k-NN, and a clear refusal where no label is read."""
from collections import Counter

import pytest
import torch

from ib_tutorial.presets import get_preset
from ib_tutorial.training.data import ShuffledLabels, build_data
from ib_tutorial.training.run_config import RunConfig

SETTINGS = dict(objective="supervised", train_images=60, knn_train_images=20, knn_eval_images=10)


def labels_of(views) -> list[int]:
    return [views[i][1] for i in range(len(views))]


def test_shuffled_labels_keep_the_class_counts_and_move_the_labels():
    images = [(torch.full((1,), float(i)), i % 5) for i in range(100)]
    shuffled = ShuffledLabels(images, [label for _, label in images], seed=3)
    labels = [shuffled[i][1] for i in range(100)]
    assert Counter(labels) == Counter(i % 5 for i in range(100))
    assert sum(a != i % 5 for i, a in enumerate(labels)) > 60  # about 4 in 5 change by chance
    assert shuffled[7][0].item() == 7.0  # the images stay in place
    assert labels == [ShuffledLabels(images, [label for _, label in images], seed=3)[i][1] for i in range(100)]
    with pytest.raises(ValueError, match="4 labels for 100 images"):
        ShuffledLabels(images, [0, 1, 2, 3], seed=0)


def test_a_run_trains_on_shuffled_labels_and_evaluates_on_the_true_ones():
    true = build_data(RunConfig.resolve("synthetic-objects", get_preset("ci"), SETTINGS), None, False, torch.device("cpu"))
    config = RunConfig.resolve("synthetic-objects", get_preset("ci"), {**SETTINGS, "label_shuffle_seed": 1})
    shuffled = build_data(config, None, False, torch.device("cpu"))
    assert config.to_dict()["train"]["label_shuffle_seed"] == 1  # config.json records it
    assert Counter(labels_of(shuffled.train_views)) == Counter(labels_of(true.train_views))
    assert labels_of(shuffled.train_views) != labels_of(true.train_views)
    assert [shuffled.knn_eval[i][1] for i in range(10)] == [true.knn_eval[i][1] for i in range(10)]


def test_dino_refuses_shuffled_labels_by_name():
    with pytest.raises(ValueError, match="objective 'dino' does not read"):
        RunConfig.resolve("synthetic-objects", get_preset("ci"), {"label_shuffle_seed": 1})
