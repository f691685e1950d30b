"""Why the committed GPU run did not learn is not known: what the run's own files say about it.

The run (DINO ViT-S at the ``paper`` recipe, cut to the epochs a lent machine's time allowed)
differs from runs that learned in several ways at once, and no run has changed one of them
alone. :func:`gpu_run_facts` reads each from the run's ``config.json`` and ``metrics.jsonl``;
:func:`floors_test` reads the one test the book has of the first of them, the warm-up and
freeze floors, from two CPU runs that differ in them only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..training.schedules import Phases
from .bundles import BundleRun
from .learned import learned_rule
from .plateau import knn_standard_error


@dataclass(frozen=True)
class GpuRunFacts:
    """What set a GPU run apart, each read from its files.

    Attributes:
        epochs: epochs trained.
        steps: optimiser steps in all.
        batch: images a step.
        warmup_steps: the learning-rate warm-up, in steps (:class:`~ib_tutorial.training.schedules.Phases`).
        freeze_steps: the last layer's freeze, in steps.
        out_dim: the head's output size K.
        train_images: training images an epoch.
        knn_first: CLS k-NN top-1 (%) at the random initialisation.
        knn_last: the same at the last evaluation.
        knn_se: one binomial standard error of the last, in points.
        learned: whether the run learned by the book's rule (:func:`~ib_tutorial.reproduction.learned.learned_rule`).
        teacher_share: the lowest and highest teacher entropy logged, as a share of log K
            (1 is a uniform teacher, which tells the student nothing about the image).
    """

    epochs: int
    steps: int
    batch: int
    warmup_steps: int
    freeze_steps: int
    out_dim: int
    train_images: int
    knn_first: float
    knn_last: float
    knn_se: float
    learned: bool
    teacher_share: tuple[float, float]

    @property
    def outputs_per_image(self) -> float:
        """Head outputs K per training image."""
        return self.out_dim / self.train_images


def gpu_run_facts(run: BundleRun) -> GpuRunFacts:
    """The facts of ``run`` (:class:`GpuRunFacts`)."""
    config, knn = run.config, run.knn
    phases = Phases.of(config.train, config.steps_per_epoch)
    shares = [row["teacher_entropy"] / math.log(config.train.out_dim) for row in run.train]
    return GpuRunFacts(
        epochs=knn[-1]["epoch"], steps=knn[-1]["step"], batch=config.train.batch_size,
        warmup_steps=phases.warmup_steps, freeze_steps=phases.freeze_steps, out_dim=config.train.out_dim,
        train_images=config.train_images_used, knn_first=knn[0]["top1"], knn_last=knn[-1]["top1"],
        knn_se=knn_standard_error(knn[-1]), learned=learned_rule(run).learned, teacher_share=(min(shares), max(shares)))


@dataclass(frozen=True)
class FloorsTest:
    """Two runs alike but for the warm-up and freeze floors: their k-NN gains from the random
    initialisation, and how far apart their last accuracies lie against the noise of that gap.

    Attributes:
        gain_without: CLS k-NN points gained by the run without the floors.
        gain_with: the same with them.
        steps: optimiser steps of each run.
        warmup_steps: the warm-up of each, without and with the floors.
        difference: last accuracy without the floors minus with them, in points.
        difference_se: one standard error of ``difference`` (the two last accuracies' binomial
            errors, independent evaluations of two networks).
    """

    gain_without: float
    gain_with: float
    steps: int
    warmup_steps: tuple[int, int]
    difference: float
    difference_se: float

    @property
    def within_noise(self) -> bool:
        """The gap is within two standard errors: the floors neither helped nor hurt measurably."""
        return abs(self.difference) < 2 * self.difference_se


def floors_test(without: BundleRun, with_floors: BundleRun) -> FloorsTest:
    """The floors test of two runs of one initialisation and one length (:class:`FloorsTest`).

    Raises:
        ValueError: when the runs differ in length, or start from different accuracies (another
            initialisation), so that their gains cannot be set side by side.
    """
    first, second = without.knn, with_floors.knn
    if first[-1]["step"] != second[-1]["step"] or first[0]["top1"] != second[0]["top1"]:
        raise ValueError("the floors test needs two runs of one length from one initialisation")
    phases = [Phases.of(run.config.train, run.config.steps_per_epoch).warmup_steps for run in (without, with_floors)]
    return FloorsTest(
        gain_without=first[-1]["top1"] - first[0]["top1"], gain_with=second[-1]["top1"] - second[0]["top1"],
        steps=first[-1]["step"], warmup_steps=(phases[0], phases[1]), difference=first[-1]["top1"] - second[-1]["top1"],
        difference_se=math.hypot(knn_standard_error(first[-1]), knn_standard_error(second[-1])))
