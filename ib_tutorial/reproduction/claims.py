"""The paper's claims about the shape of a profile, tested on measured profiles.

The paper makes four claims about a ViT that has learned its data:

1. **mid-depth minimum**: the profile is lowest in the middle blocks (L2-L4), with the early
   and the late blocks above them: a U;
2. **it deepens over training**: the U grows deeper as the network learns;
3. **deeper for object data than for texture data**: object-centric data sets compress
   more in the middle blocks than texture-centric ones, which stay flat;
4. **late re-expansion**: after the minimum, the late blocks (L9-L11) rise above the middle
   ones again.

Claim 3 is also tested along ``synthetic-mix``'s texture knob (:func:`deeper_along_knob`).

Every claim is read off one statistic of :mod:`ib_tutorial.measure.shape`, in effective
directions (:math:`N_\\mathrm{eff}`, a unit that means the same at any width): the U-depth,
:math:`\\min(\\bar v_E, \\bar v_L) - \\bar v_M`, counted only when the lowest block is a middle
one (else 0), so that a profile that merely falls with depth, a hump, or a network that
collapses in its last block has no U; and the re-expansion, :math:`\\bar v_L - \\bar v_M`,
counted under the same condition. A claim holds when its statistic exceeds ``margin``
(default :data:`MARGIN`, one effective direction). With a bootstrap over the images
(:class:`~ib_tutorial.measure.bootstrap.BootstrapProfile`) the verdict is three-valued:
``holds`` when the whole interval lies above the margin, ``fails`` when none of it does,
``undetermined`` when it straddles the margin. On a network that did not learn a claim is
``not applicable`` (:func:`on_learned`). A profile measured without one has no
interval, and its verdict reads the point value alone, or an approximate interval borrowed
from runs of the same settings that have one (:func:`borrowed_test`): the tables say which.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..measure.bootstrap import BootstrapProfile, Interval, joint_interval
from ..measure.shape import DIRECTIONS, ProfileShape, Verdict, classify_shape, depth_regions, region_means, u_depth, verdict
from .knob import knob_trend
from .records import ProfileRecord, bootstrap_of

#: Effective directions a claim's statistic must exceed: a choice (the paper gives none), one
#: direction, small beside the paper's own gap (about 28 points of EED from the early to the
#: middle blocks, 107 directions of ViT-S's 384).
MARGIN = DIRECTIONS


def reexpansion(values: Sequence[float]) -> float:
    r"""How far the late blocks' mean rises above the middle blocks', :math:`\bar v_L - \bar v_M`,
    counted only when the lowest block is a middle one (a rise *again* needs a fall
    before it; else 0); in the units of ``values``."""
    regions = depth_regions(len(values))
    if min(range(len(values)), key=values.__getitem__) not in regions.middle:
        return 0.0
    means = region_means(values)
    return means.late - means.middle


@dataclass(frozen=True)
class ShapeSummary:
    """One saved epoch's profile, summarised for the claims.

    Attributes:
        epoch: the saved epoch (0: the random initialisation).
        n_eff: :math:`N_\\mathrm{eff}` of every block.
        dim: the width D (EED% is ``100 * n_eff / dim``).
        bootstrap: the profile's bootstrap over images, when it was measured with one.
    """

    epoch: int
    n_eff: tuple[float, ...]
    dim: int
    bootstrap: BootstrapProfile | None = None

    @property
    def eed_percent(self) -> list[float]:
        return [100 * value / self.dim for value in self.n_eff]

    @property
    def shape(self) -> ProfileShape:
        """The profile's shape by :func:`~ib_tutorial.measure.shape.classify_shape`
        (tolerance: :data:`MARGIN` effective directions)."""
        return classify_shape(self.n_eff, MARGIN)

    @property
    def lowest_block(self) -> int:
        return min(range(len(self.n_eff)), key=self.n_eff.__getitem__)

    @property
    def u_depth(self) -> float:
        """The U-depth in effective directions (:func:`~ib_tutorial.measure.shape.u_depth`)."""
        return u_depth(self.n_eff)

    @property
    def reexpansion(self) -> float:
        """The re-expansion in effective directions (:func:`reexpansion`)."""
        return reexpansion(self.n_eff)

    @property
    def lowest(self) -> float:
        """The lowest block's EED%."""
        return self.eed_percent[self.lowest_block]

    @property
    def early(self) -> float:
        """The early blocks' mean EED% (:func:`~ib_tutorial.measure.shape.depth_regions`)."""
        return region_means(self.eed_percent).early

    @property
    def middle(self) -> float:
        """The middle blocks' mean EED%."""
        return region_means(self.eed_percent).middle

    @property
    def late(self) -> float:
        """The late blocks' mean EED%."""
        return region_means(self.eed_percent).late


def profile_shape(record: ProfileRecord, bootstrap: BootstrapProfile | None = None) -> ShapeSummary:
    """The :class:`ShapeSummary` of a profile record (``profiles/<epoch>.json``), with its
    bootstrap over images: ``bootstrap``, else the one the record stores, if any."""
    bootstrap = bootstrap if bootstrap is not None else bootstrap_of(record)
    return ShapeSummary(record.epoch or 0, tuple(record.profile.n_eff), record.profile.dim, bootstrap)


@dataclass(frozen=True)
class ClaimTest:
    """One claim tested on measured profiles.

    Attributes:
        claim: which (``"mid-depth minimum"``, ``"deepens over training"``,
            ``"deeper for object data"``, ``"late re-expansion"``, or claim 3 along the knob).
        verdict: ``holds``, ``fails`` or ``undetermined`` (:class:`~ib_tutorial.measure.shape.Verdict`).
        difference: the statistic tested, in effective directions.
        margin: the margin it was tested against, in effective directions.
        interval: its bootstrap interval, or None where the profiles had none (the verdict
            then reads ``difference`` alone).
        borrowed_from: where ``interval`` is an approximation borrowed from other runs
            (:func:`borrowed_test`), how many; else 0.
    """

    claim: str
    verdict: Verdict
    difference: float
    margin: float
    interval: Interval | None = None
    borrowed_from: int = 0

    @property
    def holds(self) -> bool:
        return self.verdict is Verdict.HOLDS


def _test(claim: str, statistic: Callable[..., float], shapes: Sequence[ShapeSummary], margin: float) -> ClaimTest:
    """``statistic`` of the shapes' :math:`N_\\mathrm{eff}` values against ``margin``, with its
    interval on the shapes' joint bootstrap replicates when every shape has them."""
    value = statistic(*(shape.n_eff for shape in shapes))
    if all(shape.bootstrap is not None for shape in shapes):
        interval = joint_interval(statistic, [shape.bootstrap for shape in shapes])
        return ClaimTest(claim, interval.verdict(margin), value, margin, interval)
    return ClaimTest(claim, verdict(value, value, margin), value, margin)


def borrowed_test(test: ClaimTest, others: Sequence[ClaimTest]) -> ClaimTest:
    """``test``, read on a profile without a bootstrap, against an approximate interval
    borrowed from ``others``: the same claim tested, with bootstraps, on runs of the same
    settings (other seeds, say). The point value is widened on each side by the whole range
    the others' intervals cover together, seed to seed and replicate to replicate. An
    approximation, and named as one wherever it is shown: it assumes ``test``'s run varies as
    much as those runs do, and no more."""
    if test.interval is not None:
        raise ValueError(f"{test.claim}: the test has its own interval; nothing to borrow")
    if not others or any(other.interval is None or other.claim != test.claim for other in others):
        raise ValueError(f"{test.claim}: borrow only from tests of the same claim that have intervals")
    width = max(other.interval.high for other in others) - min(other.interval.low for other in others)
    interval = Interval(test.difference, test.difference - width, test.difference + width, others[0].interval.level)
    return ClaimTest(test.claim, interval.verdict(test.margin), test.difference, test.margin, interval, len(others))


def on_learned(test: ClaimTest, learned: bool) -> ClaimTest:
    """``test`` as a verdict on a network that learned: unchanged where the network(s) it
    reads learned (by the plateau rule, :attr:`~ib_tutorial.reproduction.plateau.Plateau.learned_beyond_noise`),
    else ``not applicable``: the paper's claims are about networks that learned their data,
    and a profile of one that did not says nothing for or against them. The statistic and
    its interval are kept, to be read as such."""
    return test if learned else dataclasses.replace(test, verdict=Verdict.NOT_APPLICABLE)


def mid_depth_minimum(shape: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """The profile is a U: its U-depth exceeds ``margin``."""
    return _test("mid-depth minimum", u_depth, [shape], margin)


def deepens(first: ShapeSummary, last: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """The U-depth grew by more than ``margin`` from ``first`` to ``last``."""
    return _test("deepens over training", lambda a, b: u_depth(b) - u_depth(a), [first, last], margin)


def deeper_for_objects(objects: ShapeSummary, textures: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """The object data's U-depth exceeds the texture data's by more than ``margin``."""
    return _test("deeper for object data", lambda a, b: u_depth(a) - u_depth(b), [objects, textures], margin)


def late_reexpansion(shape: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """After a minimum in the middle blocks, the late mean lies more than ``margin`` above
    the middle mean (:func:`reexpansion`)."""
    return _test("late re-expansion", reexpansion, [shape], margin)


def deeper_along_knob(weights: Sequence[float], shapes: Sequence[ShapeSummary], margin: float = MARGIN) -> ClaimTest:
    """Claim 3 along ``synthetic-mix``'s knob (:mod:`~ib_tutorial.reproduction.knob`): the
    U-depth's least-squares line over ``weights`` falls by more than ``margin`` from the
    objects' end to the textures' end; ``difference`` is that fall."""
    def fall(*profiles: Sequence[float]) -> float:
        return -knob_trend(weights, [u_depth(values) for values in profiles]).change
    return _test("deeper for object data along the knob", fall, shapes, margin)
