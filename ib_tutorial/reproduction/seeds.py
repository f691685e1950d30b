r"""How far a run's profile and its verdicts move with the seed.

Runs with the same settings and different seeds differ in their random initialisation, the
order of their images and their augmentations. A bootstrap interval
(:mod:`~ib_tutorial.measure.bootstrap`) says how much a profile would move if other
held-out images had been measured, on the *same* network; it says nothing of how much the
network itself would differ if trained again. Seeds say that. A statement about the
settings, rather than about one trained network, holds only where the seeds agree: the
same shape, and levels whose spread across seeds is small beside what training changed.

:func:`seed_run` summarises one run (its k-NN accuracy at the initialisation and at the end,
its first and last profile, each statistic with its bootstrap interval) and
:class:`SeedSpread` sets the runs of several seeds side by side.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..measure.bootstrap import Interval
from ..measure.shape import ProfileShape, hump_height, region_means, u_depth
from .bundles import BundleRun
from .claims import ShapeSummary, profile_shape
from .learning import knn_interval, region_change


@dataclass(frozen=True)
class SeedRun:
    """One seed's run, summarised.

    Attributes:
        seed: the run's seed (its configuration's).
        knn_first, knn_last: the CLS k-NN top-1 at the random initialisation and at the end,
            in %, with their Wilson intervals.
        first, last: the profiles of the random initialisation and of the last saved epoch,
            both with their bootstrap over the same images (else :func:`seed_run` refuses).
    """

    seed: int
    knn_first: Interval
    knn_last: Interval
    first: ShapeSummary
    last: ShapeSummary

    def level(self, region: str) -> Interval:
        """The last profile's mean EED% over a region (:data:`~ib_tutorial.reproduction.learning.REGIONS`)."""
        return self.last.bootstrap.interval(lambda values: getattr(region_means(values), region), percent=True)

    def change(self, region: str) -> Interval:
        """EED points the region gained from the random initialisation (paired bootstrap)."""
        return region_change(self.first, self.last, region)

    @property
    def u_depth(self) -> Interval:
        """The last profile's U-depth, in effective directions (:func:`~ib_tutorial.measure.shape.u_depth`)."""
        return self.last.bootstrap.interval(u_depth)

    @property
    def hump_height(self) -> Interval:
        """How far its highest inside block rises above the early and late means, in effective
        directions (:func:`~ib_tutorial.measure.shape.hump_height`)."""
        return self.last.bootstrap.interval(hump_height)

    @property
    def shape_share(self) -> float:
        """The share of bootstrap replicates whose shape is the measured one's: how firmly the
        images fix it."""
        return self.last.bootstrap.shape_shares().get(self.last.shape, 0.0)


def seed_run(run: BundleRun) -> SeedRun:
    """A run of a bundle as a :class:`SeedRun`: its first and last profile need their
    bootstrap and its k-NN records the number of images evaluated."""
    first, last = profile_shape(run.profiles[0]), profile_shape(run.profiles[-1])
    if first.bootstrap is None or last.bootstrap is None:
        raise ValueError(f"{run.spec}: its profiles were measured without a bootstrap; "
                         "profile the run again (`ib-tutorial profile RUN`) to compare seeds")
    knn_first, knn_last = knn_interval(run.knn[0]), knn_interval(run.knn[-1])
    if knn_first is None or knn_last is None:
        raise ValueError(f"{run.spec}: its k-NN records do not say how many images were evaluated")
    return SeedRun(run.config.seed, knn_first, knn_last, first, last)


@dataclass(frozen=True)
class SeedSpread:
    """Runs that differ only in their seed, side by side.

    Attributes:
        runs: one :class:`SeedRun` per seed, in ascending seed.
    """

    runs: tuple[SeedRun, ...]

    def __post_init__(self) -> None:
        if len(self.runs) < 2:
            raise ValueError(f"a spread needs at least two seeds, got {len(self.runs)}")
        if len({run.seed for run in self.runs}) != len(self.runs):
            raise ValueError(f"two runs share a seed: {[run.seed for run in self.runs]}")

    @classmethod
    def of(cls, runs: Sequence[BundleRun]) -> SeedSpread:
        """The spread of a bundle's runs (:func:`seed_run` each), ordered by seed."""
        return cls(tuple(sorted((seed_run(run) for run in runs), key=lambda run: run.seed)))

    @property
    def seeds(self) -> list[int]:
        return [run.seed for run in self.runs]

    @property
    def shapes(self) -> list[ProfileShape]:
        """Each seed's last shape."""
        return [run.last.shape for run in self.runs]

    def level_spread(self, region: str) -> float:
        """The largest minus the smallest last level of a region across seeds, in EED points."""
        levels = [run.level(region).estimate for run in self.runs]
        return max(levels) - min(levels)

    def change_spread(self, region: str) -> float:
        """The same spread for the change from the initialisation, in EED points."""
        changes = [run.change(region).estimate for run in self.runs]
        return max(changes) - min(changes)

    def widest_level_interval(self, region: str) -> float:
        """The widest bootstrap interval of a region's last level over the seeds, in EED points:
        how much other images alone would move one seed's level."""
        return max(run.level(region).high - run.level(region).low for run in self.runs)

    def knn_last_spread(self) -> float:
        """The largest minus the smallest final k-NN top-1 across seeds, in points."""
        accuracies = [run.knn_last.estimate for run in self.runs]
        return max(accuracies) - min(accuracies)
