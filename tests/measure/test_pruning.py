"""Spectral pruning against cases with known answers: nothing pruned at k = D, nothing
lost at the rank of the representation, and the whole path on a trained run."""
import json

import pytest
import torch
from training_runs import DATASET, TINY

from ib_tutorial.data import get_dataset
from ib_tutorial.measure.covariance import CovarianceAccumulator
from ib_tutorial.measure.pruning import principal_directions, prune_blocks, pruned_accuracy, smallest_sufficient_k
from ib_tutorial.book.run_profiles import prune_run
from ib_tutorial.models import vit_small
from ib_tutorial.training import loop
from ib_tutorial.training.augment import eval_transform


def clustered(generator, n=240, classes=4, rank=None, dim=16, offset=0.0):
    """Class-dependent features [n, dim] (of the given rank, else full), their labels, and the
    directions and mean of their covariance."""
    labels = torch.arange(n) % classes
    latent_dim = rank or dim
    latent = torch.randn(classes, latent_dim, generator=generator, dtype=torch.float64)[labels] * 3
    latent += torch.randn(n, latent_dim, generator=generator, dtype=torch.float64)
    mixing = torch.randn(latent_dim, dim, generator=generator, dtype=torch.float64)
    features = latent @ mixing + offset
    tokens = CovarianceAccumulator(dim)
    tokens.update(features)
    mean, directions = principal_directions(tokens)
    return features, labels, mean, directions


def test_pruning_to_every_direction_is_the_unpruned_accuracy(generator):
    features, labels, mean, directions = clustered(generator, offset=5.0)
    train, held_out = slice(0, 160), slice(160, None)
    args = (features[train], labels[train], features[held_out], labels[held_out], mean)
    full = pruned_accuracy(*args, directions, [16], num_classes=4)[0]
    assert full == pytest.approx(pruned_accuracy(*args, None, (), num_classes=4)[0])
    assert torch.allclose(directions.T @ directions, torch.eye(16, dtype=torch.float64), atol=1e-10)


def test_a_rank_r_representation_loses_nothing_at_k_r(generator):
    features, labels, mean, directions = clustered(generator, rank=3, offset=-2.0)
    train, held_out = slice(0, 160), slice(160, None)
    at_rank, everything = pruned_accuracy(features[train], labels[train], features[held_out], labels[held_out], mean,
                                          directions, [3, 16], num_classes=4)
    assert at_rank == pytest.approx(everything)
    assert everything > 50  # the classes are separable, so the equality is not that of two failures


def test_the_smallest_sufficient_k_is_the_first_within_95_percent():
    assert smallest_sufficient_k([1, 2, 4, 8], [10.0, 40.0, 57.0, 60.0], unpruned=60.0) == 4
    assert smallest_sufficient_k([1, 2], [10.0, 20.0], unpruned=60.0) == 2  # none reaches it: the last k


def test_every_block_of_a_trained_run_gets_a_curve_written_with_provenance(tmp_path):
    out = tmp_path / "run"
    loop.train(DATASET, "ci", out=out, progress=False, epochs=1, **TINY)
    path = prune_run(out)
    record = json.loads(path.read_text())
    assert path.name == "mean-1.json" and record["epoch"] == 1 and len(record["blocks"]) == 12
    assert record["chance"] == pytest.approx(10.0)  # the synthetic world's 10 classes
    dim = 192  # ViT-Tiny
    for block in record["blocks"]:
        assert block["ks"] == list(range(1, dim + 1)) and len(block["accuracy"]) == dim
        assert block["accuracy"][-1] == pytest.approx(block["unpruned"])
        assert block["sufficient_k"] in block["ks"] and 1 <= block["n_eff"] <= dim
        assert block["n_tokens"] == TINY["knn_train_images"] * (1 + (TINY["img_size"] // TINY["patch_size"]) ** 2)
    assert record["provenance"]["n_images"] == TINY["knn_train_images"] + TINY["knn_eval_images"]
    assert prune_run(out) == path  # done work is skipped


def test_a_ci_backbone_pruned_on_a_few_k(generator):
    torch.manual_seed(0)
    images = get_dataset(DATASET, "train", img_size=16, size=40, transform=eval_transform(16))
    held_out = get_dataset(DATASET, "val", img_size=16, size=20, transform=eval_transform(16))
    curves = prune_blocks(vit_small(16, 8), images, held_out, num_classes=10, pool="cls", ks=[1, 8, 384])
    assert [c.block for c in curves] == list(range(12))
    assert all(c.accuracy[-1] == pytest.approx(c.unpruned) for c in curves)
    with pytest.raises(ValueError, match="pool"):
        prune_blocks(vit_small(16, 8), images, held_out, num_classes=10, pool="max")
