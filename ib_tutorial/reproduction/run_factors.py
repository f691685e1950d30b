r"""What a run's networks learned besides the class, on a world with objects.

Every image of the synthetic object world draws, besides its class, the object's value,
hue, size and place and the background's value
(:meth:`~ib_tutorial.data.synthetic.SyntheticWorld.object_factors`). For each factor the
run's k-NN images are split at the factor's median over the training images, and the k-NN
classifier of :mod:`ib_tutorial.measure.knn` (the run's own ``k`` and temperature) predicts
the side of the split from the saved network's features, as it predicts the class. Chance is
the larger side's share, about 50 %. A network that tells the object's value apart far
better than chance while its class accuracy falls has learned the value instead of the
shape: the measured cause of a DINO run that does not learn the object world.

    <run>/factors.json   {"epochs": {epoch: {pool: {factor or "class": top-1 %}}},
                          "chance": {factor: %}, "held_out": n, "constant": [factors],
                          "thresholds": {factor: median}, "provenance"}

A factor that does not vary over the training images (an object as large as the image is
always centred) is listed as ``constant`` and not split.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..compact import read_json
from ..data import get_dataset
from ..data.synthetic import OBJECT_FACTORS, SyntheticWorld
from ..files import write_json_atomic
from ..measure.knn import POOLS, extract_features, knn_accuracy
from ..training.data import knn_image_sets
from ..training.runs import RunDirectory
from .records import provenance
from .run_profiles import profile_device

FILE = "factors.json"
SYNTHETIC_WORLDS = ("synthetic-objects", "synthetic-mix", "synthetic-textures")


def object_world(subset) -> SyntheticWorld | None:
    """The synthetic world under a k-NN image subset, when its images have an object layer."""
    world = subset.dataset
    return world if isinstance(world, SyntheticWorld) and world.texture_weight < 1 else None


def has_object_factors(run_dir) -> bool:
    """Whether a run trained on a synthetic world with objects (texture weight under 1)."""
    config = RunDirectory(run_dir).read_config()
    if config.dataset not in SYNTHETIC_WORLDS:
        return False
    return get_dataset(config.dataset, "val", **{**config.dataset_options, "size": 0}).texture_weight < 1


def factor_values(subset) -> dict[str, np.ndarray]:
    """Each factor of :data:`~ib_tutorial.data.synthetic.OBJECT_FACTORS` for every image of a
    subset of an object world, in the subset's order."""
    world = object_world(subset)
    if world is None:
        raise ValueError("the images are not a synthetic world with objects (texture_weight < 1): they have no object factors")
    drawn = [world.object_factors(int(index)) for index in subset.indices]
    return {name: np.array([factors[name] for factors in drawn]) for name in OBJECT_FACTORS}


@dataclass(frozen=True)
class MedianSplits:
    """Each varying factor's split at its median over the training images.

    Attributes:
        thresholds: the median of each factor that varies.
        constant: the factors that do not vary over the training images (not split).
        train, held_out: each split factor's side (``True``: above the median) for every image.
    """

    thresholds: dict[str, float]
    constant: list[str]
    train: dict[str, torch.Tensor]
    held_out: dict[str, torch.Tensor]

    @classmethod
    def of(cls, train_values: dict[str, np.ndarray], held_out_values: dict[str, np.ndarray]) -> MedianSplits:
        constant = [name for name, values in train_values.items() if np.ptp(values) == 0]
        thresholds = {name: float(np.median(values)) for name, values in train_values.items() if name not in constant}
        return cls(thresholds, constant, {name: torch.as_tensor(train_values[name] > cut) for name, cut in thresholds.items()},
                   {name: torch.as_tensor(held_out_values[name] > cut) for name, cut in thresholds.items()})

    def chance(self) -> dict[str, float]:
        """The larger side's share of the held-out images, in percent: a k-NN that reads nothing of the factor."""
        return {name: 100 * max(share, 1 - share) for name, share in
                ((name, float(side.float().mean())) for name, side in self.held_out.items())}

    def accuracies(self, train_features: torch.Tensor, held_out_features: torch.Tensor, k: int,
                   temperature: float) -> dict[str, float]:
        """k-NN top-1 (percent) of each split from L2-normalised features of the same images."""
        return {name: knn_accuracy(train_features, self.train[name].long(), held_out_features,
                                   self.held_out[name].long(), 2, k, temperature)["top1"] for name in self.thresholds}


def read_factors(run_dir) -> dict | None:
    """What :func:`measure_factors` wrote in ``run_dir`` (``factors.json``), or None when it
    has not been measured there."""
    path = Path(run_dir) / FILE
    return read_json(path) if path.exists() else None


def measure_factors(run_dir, epochs: list[int] | None = None, root=None, download: bool = False,
                    progress: bool = True) -> Path:
    """k-NN accuracy of each object factor's median split, and of the class, from the CLS
    token and the mean patch token of the run's saved networks at ``epochs`` (default: every
    saved one), written to ``factors.json`` in the run; epochs already there are kept."""
    run = RunDirectory(run_dir)
    config = run.read_config()
    saved = run.backbone_epochs()
    epochs = saved if epochs is None else epochs
    missing = sorted(set(epochs) - set(saved))
    if missing:
        raise ValueError(f"{run.path} saved no network at epoch {missing}; it saved epochs {saved}")
    path = run.path / FILE
    record = read_factors(run.path) or {"epochs": {}}
    todo = [epoch for epoch in epochs if str(epoch) not in record["epochs"]]
    if not todo:
        return path
    train_set, held_out_set = knn_image_sets(config, root, download)
    splits = MedianSplits.of(factor_values(train_set), factor_values(held_out_set))
    device = profile_device(config)
    classes = len(train_set.dataset.classes)
    k, temperature = config.train.knn_k, config.train.knn_temperature
    extract = dict(device=device, progress=progress, pools=POOLS)
    images = len(train_set) + len(held_out_set)
    record |= {"chance": splits.chance(), "held_out": len(held_out_set), "constant": splits.constant,
               "thresholds": splits.thresholds,
               "provenance": provenance(preset=config.preset, config=config.to_dict(), dataset=config.dataset,
                                        n_images=images, n_tokens=images, device=str(device)).to_dict()}
    for epoch in todo:
        backbone = run.load_backbone(epoch, device)
        train_features, train_classes = extract_features(backbone, train_set, **extract)
        held_out_features, held_out_classes = extract_features(backbone, held_out_set, **extract)
        record["epochs"][str(epoch)] = {
            pool: {"class": knn_accuracy(train_features[pool], train_classes, held_out_features[pool], held_out_classes,
                                         classes, k, temperature)["top1"],
                   **splits.accuracies(train_features[pool], held_out_features[pool], k, temperature)}
            for pool in POOLS}
        record["epochs"] = dict(sorted(record["epochs"].items(), key=lambda item: int(item[0])))
        write_json_atomic(path, record)  # after each epoch: a stopped measurement keeps what it finished
    return path
