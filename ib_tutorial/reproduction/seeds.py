r"""How far a run's profile and its verdicts move with the seed.

Runs with the same settings and different seeds differ in their random initialisation, the
order of their images and their augmentations. A bootstrap interval
(:mod:`~ib_tutorial.measure.bootstrap`) says how much a profile would move if other
held-out images had been measured, on the *same* network; it says nothing of how much the
network itself would differ if trained again. Seeds say that. A statement about the
settings, rather than about one trained network, holds only where the seeds agree: the
same shape, and levels whose spread across seeds is small beside what training changed.
:class:`SeedSpread` sets the runs of several seeds side by side, each summarised by
:class:`~ib_tutorial.reproduction.learning.LearningSummary`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..measure.shape import ProfileShape
from .bundles import BundleRun
from .learning import LearningSummary


@dataclass(frozen=True)
class SeedSpread:
    """Runs that differ only in their seed, side by side.

    Attributes:
        runs: one summary per seed, in ascending seed.
    """

    runs: tuple[LearningSummary, ...]

    def __post_init__(self) -> None:
        if len(self.runs) < 2:
            raise ValueError(f"a spread needs at least two seeds, got {len(self.runs)}")
        if len({run.seed for run in self.runs}) != len(self.runs):
            raise ValueError(f"two runs share a seed: {[run.seed for run in self.runs]}")

    @classmethod
    def of(cls, runs: Sequence[BundleRun]) -> SeedSpread:
        """The spread of a bundle's runs, ordered by seed."""
        return cls(tuple(sorted((LearningSummary.of(run) for run in runs), key=lambda run: run.seed)))

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
