"""The texture knob as an experiment: one objective trained on ``synthetic-mix`` at several
``texture_weight`` values with the same budget, and how the profile's shape follows it.

``synthetic-mix`` blends each image from an object (class = a shape) and a texture (class
= a texture statistic) of the same class, ``(1 - w) object + w texture``
(:mod:`ib_tutorial.data.synthetic`): ``w`` moves the evidence for the label from the shape
to the texture, and with it the images' pixel statistics (the texture end has the richer
ones), so each run is read against its own random initialisation. A sweep is the runs of
one bundle that train ``synthetic-mix`` with the same objective, the same world (its other
options) and the same settings after ``@``, one per ``w``
(``synthetic-mix:texture_weight=0.25@objective=supervised,epochs=20`` and so on), so that
the knob is the only setting that differs between them; a :class:`KnobRecipe` writes them.

:func:`knob_trend` fits the straight line through a shape statistic against ``w`` (the
paper's contrast, objects against textures, is the line's change from ``w = 0`` to
``w = 1``) and gives its rank correlation, which says whether the statistic moves one way
along the knob even where the line fits poorly.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from ..training.run_spec import RunSpec
from .bundles import Bundle, BundleRun, load_bundles
from .learned import run_learned
from .plateau import GAIN

#: The dataset whose option ``texture_weight`` is the knob.
KNOB_DATASET = "synthetic-mix"



@dataclass(frozen=True)
class KnobRecipe:
    """A sweep as its commands write it.

    Attributes:
        weights: the ``texture_weight`` values.
        settings: the training settings every run sets after ``@``.
        world: the world's other options, the same for every run (``object_scale=1.6,clutter=0``).
    """

    weights: tuple[float, ...]
    settings: str
    world: str = ""

    def specs(self, seed: int = 0) -> list[str]:
        """One run spec per weight; a ``seed`` other than the preset's 0 is one more setting."""
        world = f",{self.world}" if self.world else ""
        seeded = f",seed={seed}" if seed else ""
        return [f"{KNOB_DATASET}:texture_weight={weight:g}{world}@{self.settings}{seeded}" for weight in self.weights]


#: The sweep at a recipe whose object end learns on one core (pilots in ``results/README.md``):
#: larger objects without clutter, no augmentation, a gentle learning rate, 24 epochs, weights
#: dense where a probe on local patches finds the evidence moving from shape to texture; two
#: seeds at the ends (:data:`OBJECT_SEEDS`).
OBJECT_SWEEP = KnobRecipe(
    (0, 0.05, 0.1, 0.2, 0.4, 1),
    "objective=supervised,epochs=24,lr=0.0005,warmup_epochs=2,local_crops_number=0,global_crop_scale=(0.9,1.0),"
    "blur_radius=(0.0,0.0),color_strength=0.0,knn_every=4",
    "object_scale=1.6,clutter=0")
#: The second seed of :data:`OBJECT_SWEEP`'s two ends.
OBJECT_SEEDS = KnobRecipe((0, 1), OBJECT_SWEEP.settings, OBJECT_SWEEP.world)
#: DINO at the two ends of :data:`OBJECT_SWEEP`'s world and geometry, for about an hour of one
#: core each, with the tier's own views (DINO learns from its augmentations, which the
#: supervised recipe turns off) and its former schedule: neither end learned.
DINO_TIER_ENDS = KnobRecipe((0, 1), "objective=dino,epochs=16,knn_every=2,checkpoint_every=2", OBJECT_SWEEP.world)
#: The DINO chapter's CPU recipe (batches of 32, the floors, K = 1,024, two local crops of
#: 24 px covering 20-50 %, teacher momentum 0.996) with every view's hue drawn anew
#: (``hue_jitter=0.5``), so that the random colours the worlds paint carry nothing from one
#: view to another; one thread a run, 16 epochs (2,496 steps), at both ends of the knob and
#: at ``w = 0.2``. The texture end learns.
DINO_HUE_SWEEP = KnobRecipe(
    (0, 0.2, 1), "objective=dino,epochs=16,batch_size=32,out_dim=1024,momentum_teacher=0.996,local_crops_number=2,"
    "local_crop_size=24,local_crop_scale=(0.2,0.5),hue_jitter=0.5,knn_every=2,checkpoint_every=2,threads=1",
    OBJECT_SWEEP.world)
#: The second seed of :data:`DINO_HUE_SWEEP`'s texture end, the end that learned.
DINO_HUE_SEEDS = KnobRecipe((1,), DINO_HUE_SWEEP.settings, DINO_HUE_SWEEP.world)

#: The small sweep a chapter trains live on ``ci``: the ``laptop`` sweep's model (ViT-Tiny),
#: the tier's few steps, profiles of the initialisation and the last epoch only.
LIVE_SWEEP = KnobRecipe((0, 0.5, 1), "objective=supervised,arch=vit_tiny,checkpoint_every=3")


@dataclass(frozen=True)
class KnobSweep:
    """The runs of one bundle along the knob, with one objective and the same settings.

    Attributes:
        bundle: the bundle that holds them.
        objective: ``"supervised"`` or ``"dino"``.
        overrides: the training settings every run's spec sets after ``@`` (the budget).
        runs: ``texture_weight`` -> (spec, run), ascending in ``texture_weight``.
        world: the world's options other than ``texture_weight``, the same for every run.
    """

    bundle: Bundle
    objective: str
    overrides: tuple[tuple[str, str], ...]
    runs: dict[float, tuple[str, BundleRun]]
    world: tuple[tuple[str, str], ...] = ()

    @property
    def weights(self) -> list[float]:
        return list(self.runs)

    @property
    def epochs(self) -> int:
        """The last saved epoch the runs share (the budget they all reached)."""
        return min(run.profiles[-1].epoch for _, run in self.runs.values())

    def learned(self, gain: float = GAIN) -> list[float]:
        """The weights whose run learned (:func:`~ib_tutorial.reproduction.learned.learned_rule`):
        k-NN top-1 above its random initialisation by at least ``gain`` points and the noise
        of its held-out images, and for DINO a teacher that did not collapse. The others'
        profiles are those of networks that have not learned their data."""
        return [weight for weight, (_, run) in self.runs.items() if run_learned(run, gain)]


def knob_sweeps(bundles: Iterable[str | Path | Bundle] | None = None) -> list[KnobSweep]:
    """Every sweep in ``bundles`` (default: the bundles committed under ``results/``), one
    per (bundle, objective, world, settings), with at least two ``texture_weight`` values."""
    loaded = load_bundles(bundles)
    sweeps = []
    for bundle in loaded:
        groups: dict[tuple, dict[float, tuple[str, BundleRun]]] = {}
        for spec, run in bundle.runs.items():
            if run.spec.dataset != KNOB_DATASET:
                continue
            weight = float(run.config.dataset_options["texture_weight"])
            key = (run.config.train.objective, _settings(run.spec.overrides), _world(run.config.dataset_options))
            groups.setdefault(key, {})[weight] = (spec, run)
        sweeps += [KnobSweep(bundle, objective, overrides, dict(sorted(runs.items())), world)
                   for (objective, overrides, world), runs in groups.items() if len(runs) >= 2]
    return sweeps


def widest_sweep(objective: str, bundles: Iterable[str | Path | Bundle] | None = None) -> KnobSweep | None:
    """The sweep of ``objective`` with the most ``texture_weight`` values (then the most
    epochs); None when there is none."""
    return _widest(sweep for sweep in knob_sweeps(bundles) if sweep.objective == objective)


def recipe_sweep(recipe: KnobRecipe, bundles: Iterable[str | Path | Bundle] | None = None) -> KnobSweep | None:
    """The sweep that ``recipe``'s specs (seed 0) trained: the same world and the same settings
    after ``@``, at two weights or more of ``recipe``'s; the one with the most weights, then
    epochs, when several bundles hold it; None when none does."""
    wanted = RunSpec.parse(recipe.specs()[0])
    overrides, world = _settings(wanted.overrides), _world(wanted.options)
    return _widest(sweep for sweep in knob_sweeps(bundles) if sweep.overrides == overrides and sweep.world == world
                   and set(sweep.weights) <= set(recipe.weights))


def _settings(settings: dict) -> tuple[tuple[str, str], ...]:
    """Settings as a sorted, hashable key (values as text, as a spec writes them)."""
    return tuple(sorted((key, str(value)) for key, value in settings.items()))


def _world(options: dict) -> tuple[tuple[str, str], ...]:
    """A world's options other than the knob, as a key."""
    return _settings({key: value for key, value in options.items() if key != "texture_weight"})


def _widest(sweeps: Iterable[KnobSweep]) -> KnobSweep | None:
    """The sweep with the most weights, then the most epochs; None for no sweep."""
    return max(sweeps, key=lambda sweep: (len(sweep.runs), sweep.epochs), default=None)


def seeds_by_weight(sweep: KnobSweep) -> dict[float, list[BundleRun]]:
    """The runs of ``sweep``'s bundle that differ from its own only in their seed, with its
    own, by weight (ascending seed), for the weights trained with two seeds or more: the
    spread a statement about the knob must stand beside. A second seed may cover fewer
    weights than the sweep (one end alone)."""
    def unseeded(overrides: tuple[tuple[str, str], ...]) -> tuple:
        return tuple((key, value) for key, value in overrides if key != "seed")

    runs: dict[float, list[BundleRun]] = {}
    for run in sweep.bundle.runs.values():
        if (run.spec.dataset == KNOB_DATASET and run.config.train.objective == sweep.objective
                and _world(run.config.dataset_options) == sweep.world
                and unseeded(_settings(run.spec.overrides)) == unseeded(sweep.overrides)):
            runs.setdefault(float(run.config.dataset_options["texture_weight"]), []).append(run)
    return {weight: sorted(seeded, key=lambda run: run.config.seed)
            for weight, seeded in sorted(runs.items()) if len(seeded) >= 2}


@dataclass(frozen=True)
class KnobTrend:
    """A shape statistic against the knob.

    Attributes:
        slope: the least-squares line's slope, points of EED per unit of ``texture_weight``.
        change: the line's value at the sweep's largest weight minus at its smallest
            (for a sweep from 0 to 1: textures minus objects).
        rank_correlation: Spearman's rho between the weights and the statistic (NaN for
            fewer than three weights or a constant statistic).
    """

    slope: float
    change: float
    rank_correlation: float


def knob_trend(weights: Sequence[float], values: Sequence[float]) -> KnobTrend:
    """Fit ``values`` (one per weight) against ``weights``: see :class:`KnobTrend`."""
    weights, values = np.asarray(weights, dtype=float), np.asarray(values, dtype=float)
    if len(weights) < 2 or len(weights) != len(values):
        raise ValueError(f"a trend needs two or more weights, each with one value; got {len(weights)} and {len(values)}")
    slope = float(np.polyfit(weights, values, 1)[0])
    rho = float("nan")
    if len(weights) >= 3 and np.ptp(values) > 0:
        rho = float(spearmanr(weights, values).statistic)
    return KnobTrend(slope, slope * float(np.ptp(weights)), rho)
