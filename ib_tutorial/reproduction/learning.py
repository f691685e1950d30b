r"""What training did to a run: its profile's change from the random initialisation it
started from, and its k-NN accuracy's, each with an interval (:class:`LearningSummary`
gathers them for one run).

A profile's level is set largely by its input: the images' own statistics already give the
random initialisation its level (:mod:`~ib_tutorial.reproduction.measurement`'s controls), and
inputs with richer statistics give a higher one before any training. A comparison between
runs on different data therefore reads the change from each run's initialisation, block by
block, not only the trained level. Every profile of a run is measured on the same images and
bootstrapped with the same seed (:mod:`~ib_tutorial.reproduction.run_profiles`), so the
replicates of its first and last epoch are paired, and a change gets its interval from the same
resampled images (:func:`~ib_tutorial.measure.bootstrap.joint_interval`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..measure.bootstrap import LEVEL, Interval, joint_interval, wilson_interval
from ..measure.shape import hump_height, middle_dip, region_means
from .bundles import BundleRun
from .claims import ShapeSummary, profile_shape

#: The regions a profile's change is summarised over (:func:`~ib_tutorial.measure.shape.depth_regions`).
REGIONS = ("early", "middle", "late")


def block_changes(first: ShapeSummary, last: ShapeSummary) -> list[Interval]:
    """EED points each block gained from ``first`` (the random initialisation) to ``last``,
    with paired bootstrap intervals; both profiles need their bootstrap."""
    _check_paired(first, last)
    return [joint_interval(lambda before, after, block=block: after[block] - before[block],
                           [first.bootstrap, last.bootstrap], percent=True) for block in range(len(first.n_eff))]


def region_change(first: ShapeSummary, last: ShapeSummary, region: str) -> Interval:
    """EED points a region's mean (:data:`REGIONS`) gained from ``first`` to ``last``, with its
    paired bootstrap interval."""
    if region not in REGIONS:
        raise ValueError(f"unknown region {region!r}; choose from {', '.join(REGIONS)}")
    _check_paired(first, last)

    def change(before: Sequence[float], after: Sequence[float]) -> float:
        return getattr(region_means(after), region) - getattr(region_means(before), region)

    return joint_interval(change, [first.bootstrap, last.bootstrap], percent=True)


def knn_interval(record: dict, level: float = LEVEL) -> Interval | None:
    """The Wilson interval, in points, of a k-NN top-1 accuracy (a ``metrics.jsonl`` k-NN
    line with ``top1`` in % and ``n_eval`` images); None for a record without ``n_eval``."""
    if "n_eval" not in record:
        return None
    total = record["n_eval"]
    share = wilson_interval(round(record["top1"] / 100 * total), total, level)
    return Interval(record["top1"], 100 * share.low, 100 * share.high, level)


def _check_paired(first: ShapeSummary, last: ShapeSummary) -> None:
    if first.bootstrap is None or last.bootstrap is None:
        raise ValueError("a change with an interval needs both profiles' bootstraps; profile the run again "
                         "(`ib-tutorial profile RUN`) to store them")
    if first.bootstrap.seed != last.bootstrap.seed or len(first.n_eff) != len(last.n_eff):
        raise ValueError("the two profiles were not bootstrapped on the same images with the same seed")


@dataclass(frozen=True)
class LearningSummary:
    """What training did to one run, every number with its interval.

    Attributes:
        seed: the run's seed (its configuration's).
        knn_first, knn_last: the CLS k-NN top-1 at the random initialisation and at the end,
            in %, with their Wilson intervals.
        first, last: the profiles of the random initialisation and of the last saved epoch,
            both with their bootstrap over the same images (else :meth:`of` refuses).
    """

    seed: int
    knn_first: Interval
    knn_last: Interval
    first: ShapeSummary
    last: ShapeSummary

    @classmethod
    def of(cls, run: BundleRun) -> LearningSummary:
        """A run of a bundle, summarised: its first and last profile need their bootstrap and
        its k-NN records the number of images evaluated."""
        first, last = profile_shape(run.profiles[0]), profile_shape(run.profiles[-1])
        if first.bootstrap is None or last.bootstrap is None:
            raise ValueError(f"{run.spec}: its profiles were measured without a bootstrap; "
                             "profile the run again (`ib-tutorial profile RUN`) to store one")
        knn_first, knn_last = knn_interval(run.knn[0]), knn_interval(run.knn[-1])
        if knn_first is None or knn_last is None:
            raise ValueError(f"{run.spec}: its k-NN records do not say how many images were evaluated")
        return cls(run.config.seed, knn_first, knn_last, first, last)

    def level(self, region: str) -> Interval:
        """The last profile's mean EED% over a region (:data:`REGIONS`)."""
        return self.last.bootstrap.interval(lambda values: getattr(region_means(values), region), percent=True)

    def change(self, region: str) -> Interval:
        """EED points the region gained from the random initialisation (:func:`region_change`)."""
        return region_change(self.first, self.last, region)

    @property
    def middle_dip(self) -> Interval:
        """The last profile's middle dip, in effective directions (:func:`~ib_tutorial.measure.shape.middle_dip`)."""
        return self.last.bootstrap.interval(middle_dip)

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
