r"""What DINO needs to learn, as compute: images seen times the tokens the student reads per image,
against the k-NN points gained.

A DINO student reads every view of an image: two global crops and the local ones, each
:math:`(s / p)^2` patch tokens plus the class token, for a crop of :math:`s` pixels and patches
of :math:`p`. Training cost grows with the tokens read, so a run's compute is counted as

.. math:: C = \text{images seen} \times \Big(2\,\big((s_g/p)^2 + 1\big) + n_\ell\,\big((s_\ell/p)^2 + 1\big)\Big),

and a run is a curve of k-NN gain (points over its random initialisation) against :math:`C`.
Published runs are points, kept here as data with their source (:data:`PUBLISHED`).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..training.runs import RunDirectory
from .learned import learned_rule


def student_tokens(img_size: int, local_crop_size: int, patch_size: int, local_crops: int, global_crops: int = 2) -> int:
    """Tokens (patches plus the class token) the student reads per image over all its views."""
    def crop(size: int) -> int:
        return (size // patch_size) ** 2 + 1
    return global_crops * crop(img_size) + local_crops * crop(local_crop_size)


@dataclass(frozen=True)
class PublishedPoint:
    """A published DINO run at one moment of its training.

    Attributes:
        label: short name for a legend.
        source: where the number is published (repository and file, or paper).
        network: the backbone, in words.
        dataset: what it trained and was evaluated on.
        epochs, train_images: the epochs trained and the images of an epoch.
        tokens_per_image: :func:`student_tokens` of its views.
        knn_top1: its k-NN top-1 (%) at that moment.
        chance: 100 / number of classes.
    """

    label: str
    source: str
    network: str
    dataset: str
    epochs: int
    train_images: int
    tokens_per_image: int
    knn_top1: float
    chance: float

    @property
    def images_seen(self) -> int:
        return self.epochs * self.train_images

    @property
    def compute(self) -> float:
        """Images seen times student tokens per image."""
        return self.images_seen * self.tokens_per_image

    @property
    def gain_bound(self) -> float:
        """Points above chance: an upper bound on its gain over its random initialisation, which
        is not published (a random ViT's k-NN accuracy sits above chance)."""
        return self.knn_top1 - self.chance


#: The closest public small-ViT DINO curve: ``main/dino.py`` of alirezaghl/dino sets a 192-wide,
#: 12-block ViT with patch 4, every crop at 32 px (two global, eight local: ten crops of 65
#: tokens), CIFAR-10's 50,000 training images; ``results/knn_accuracy.png`` there shows about
#: 47 % k-NN top-1 at its first evaluation, after 10 epochs.
PUBLISHED: tuple[PublishedPoint, ...] = (
    PublishedPoint(label="alirezaghl/dino, 10 epochs",
                   source="github.com/alirezaghl/dino: main/dino.py (settings), results/knn_accuracy.png (k-NN)",
                   network="ViT, 192 wide, 12 blocks, patch 4 at 32 px", dataset="CIFAR-10", epochs=10,
                   train_images=50_000, tokens_per_image=student_tokens(32, 32, 4, 8), knn_top1=47.0, chance=10.0),
)


@dataclass(frozen=True)
class ComputeCurve:
    """One committed run as k-NN gain against compute.

    Attributes:
        label: the run's name for a legend.
        dataset: what it trained on.
        tokens_per_image: :func:`student_tokens` of its views.
        images_seen: images trained on at each k-NN evaluation (steps times batch).
        gains: CLS k-NN top-1 at each evaluation minus the random initialisation's, in points.
        learned: whether it learned by :func:`~ib_tutorial.reproduction.learned.learned_rule`.
        batch_size: its batch.
    """

    label: str
    dataset: str
    tokens_per_image: int
    images_seen: list[int]
    gains: list[float]
    learned: bool
    batch_size: int

    @property
    def steps(self) -> int:
        """The steps it trained, to its last evaluation."""
        return self.images_seen[-1] // self.batch_size

    @property
    def compute(self) -> list[float]:
        """Images seen times student tokens per image, at each evaluation."""
        return [images * self.tokens_per_image for images in self.images_seen]


def compute_curve(run: RunDirectory, label: str) -> ComputeCurve:
    """A committed run's :class:`ComputeCurve`, read from its own settings and k-NN records."""
    config = run.read_config()
    view, train = config.view, config.train
    knn = run.read_metrics("knn")
    tokens = student_tokens(view.img_size, view.local_crop_size, view.patch_size, train.local_crops_number)
    return ComputeCurve(label, config.dataset, tokens, [r["step"] * train.batch_size for r in knn],
                        [r["top1"] - knn[0]["top1"] for r in knn], learned_rule(run).learned, train.batch_size)


def compute_curves(folders: Sequence[tuple[str, str | os.PathLike]], datasets: Sequence[str] = ("tiny-imagenet", "dtd")
                   ) -> list[ComputeCurve]:
    """Every DINO run on ``datasets`` directly under each folder (those that exist) of
    ``folders`` (pairs of a label's prefix and a folder), labelled ``PREFIX: DATASET, E epochs, seed S`` (the
    architecture after the data set where it is not ViT-Tiny)."""
    curves = []
    for prefix, folder in folders:
        runs = sorted(Path(folder).iterdir()) if Path(folder).exists() else []
        for path in runs:
            if not (path / "config.json").exists():
                continue
            run = RunDirectory(path)
            config = run.read_config()
            if config.objective.compared_with_paper and config.dataset in datasets:
                epochs = run.read_metrics("knn")[-1]["epoch"]
                arch = "" if config.train.arch == "vit_tiny" else f" ({config.train.arch})"
                curves.append(compute_curve(run, f"{prefix}: {config.dataset}{arch}, {epochs} epochs, seed {config.seed}"))
    return curves


def compute_ratio(point: PublishedPoint, curve: ComputeCurve) -> float:
    """How many times a run's whole compute the published point's is."""
    return point.compute / curve.compute[-1]
