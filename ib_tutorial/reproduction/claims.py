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
directions (:math:`N_\\mathrm{eff}`, a unit that means the same at any width): the **middle
dip**, :math:`\\min(\\bar v_E, \\bar v_L) - \\bar v_M`, signed, and the **late rise**,
:math:`\\bar v_L - \\bar v_M`. Both are smooth in the block values, so their bootstrap intervals
carry the images' uncertainty without the jumps and the pile-up at 0 of the gated, clipped
U-depth (which still names shapes). Beside the mid-depth minimum's dip stands the share of
bootstrap replicates whose lowest block is a middle one. A claim holds when its statistic
exceeds ``margin`` (default :data:`MARGIN`, one effective direction); a claim about a U
(it deepens, it is deeper for objects, the late blocks rise *again*) can be no stronger than
the mid-depth minimum of the profile it is about.
With a bootstrap over the images (:class:`~ib_tutorial.measure.bootstrap.BootstrapProfile`)
the verdict is three-valued: ``holds`` when the whole interval lies above the margin,
``fails`` when none of it does, ``undetermined`` when it straddles the margin. On a network
that did not learn a claim is ``not applicable`` (:func:`on_learned`); over several seeds it
holds or fails only where every seed learned and all agree (:func:`across_seeds`). A profile
measured without a bootstrap has no interval, and its verdict reads the point value alone,
or an approximate interval borrowed from runs of the same settings that have one
(:func:`borrowed_test`): the tables say which.

Each claim can be read on two profiles: the trained network's (its **level**) and the
change from its random initialisation, block by block (:func:`change_from_initialisation`,
with paired intervals). The level mixes what the images are with what learning did; the
change is what learning did, and reads against a control that trained without learning.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..measure.bootstrap import BootstrapProfile, Interval, joint_interval
from ..measure.shape import (DIRECTIONS, ProfileShape, Verdict, classify_shape, middle_dip, middle_is_lowest, region_means,
                             u_depth, verdict)
from .knob import knob_trend
from .records import ProfileRecord, bootstrap_of

#: Effective directions a claim's statistic must exceed: a choice (the paper gives none), one
#: direction, small beside the paper's own gap (about 28 points of EED from the early to the
#: middle blocks, 107 directions of ViT-S's 384).
MARGIN = DIRECTIONS


def late_rise(values: Sequence[float]) -> float:
    r"""How far the late blocks' mean lies above the middle blocks', :math:`\bar v_L - \bar v_M`,
    signed; in the units of ``values``."""
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
        """The U-depth in effective directions (:func:`~ib_tutorial.measure.shape.u_depth`),
        which names the shape."""
        return u_depth(self.n_eff)

    @property
    def middle_dip(self) -> float:
        """The middle dip in effective directions (:func:`~ib_tutorial.measure.shape.middle_dip`)."""
        return middle_dip(self.n_eff)

    @property
    def late_rise(self) -> float:
        """The late rise in effective directions (:func:`late_rise`)."""
        return late_rise(self.n_eff)

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
        middle_minimum_share: for the mid-depth minimum with a bootstrap, the share of
            replicates whose lowest block is a middle one; else None.
        reason: why a verdict over several seeds is undetermined (:func:`across_seeds`); else "".
    """

    claim: str
    verdict: Verdict
    difference: float
    margin: float
    interval: Interval | None = None
    borrowed_from: int = 0
    middle_minimum_share: float | None = None
    reason: str = ""

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
    reads learned (by the book's rule, :mod:`~ib_tutorial.reproduction.learned`),
    else ``not applicable``: the paper's claims are about networks that learned their data,
    and a profile of one that did not says nothing for or against them. The statistic and
    its interval are kept, to be read as such."""
    return test if learned else dataclasses.replace(test, verdict=Verdict.NOT_APPLICABLE)


def across_seeds(tests: Sequence[ClaimTest], learned: Sequence[bool], seeds: Sequence[int]) -> ClaimTest:
    """One claim over runs that differ only in their seed (one test per seed, each with
    whether that seed's network learned): ``holds`` or ``fails`` only where every seed
    learned and every seed's verdict is that one; ``not applicable`` where none learned;
    else ``undetermined``, with the ``reason`` (a seed that did not learn, seeds that
    disagree, or a seed whose own interval straddles the margin). The statistic is the
    seeds' mean and the interval spans every seed's interval (or point, where a seed has none)."""
    if not tests or not len(tests) == len(learned) == len(seeds):
        raise ValueError("give one test, one learned flag and one seed per run")
    if len({test.claim for test in tests}) != 1:
        raise ValueError(f"the tests are of different claims: {sorted({test.claim for test in tests})}")
    lows = [test.interval.low if test.interval else test.difference for test in tests]
    highs = [test.interval.high if test.interval else test.difference for test in tests]
    level = next((test.interval.level for test in tests if test.interval), None)
    mean = sum(test.difference for test in tests) / len(tests)
    interval = Interval(mean, min(lows), max(highs), level) if level is not None else None
    verdicts = {seed: test.verdict for seed, test in zip(seeds, tests)}
    unlearned = [seed for seed, ok in zip(seeds, learned) if not ok]
    if len(unlearned) == len(tests):
        verdict_, reason = Verdict.NOT_APPLICABLE, "no seed learned"
    elif unlearned:
        verdict_, reason = Verdict.UNDETERMINED, f"seed {', '.join(map(str, unlearned))} did not learn"
    elif len(set(verdicts.values())) == 1 and tests[0].verdict is not Verdict.UNDETERMINED:
        verdict_, reason = tests[0].verdict, ""
    else:
        verdict_ = Verdict.UNDETERMINED
        reason = "; ".join(f"{value.value} on seed {seed}" for seed, value in verdicts.items())
    return ClaimTest(tests[0].claim, verdict_, mean, tests[0].margin, interval, reason=reason)


def change_from_initialisation(first: ShapeSummary, last: ShapeSummary) -> ShapeSummary:
    """What training did to a profile: ``last`` minus ``first`` (the random initialisation),
    block by block, in effective directions, with paired replicates where both profiles were
    bootstrapped with the same seed on the same images (every epoch of a run is). Its
    ``epoch`` is ``last``'s. The claims read on it ask whether learning, not the images,
    made the shape: a mid-depth minimum of the change is a middle that gained less than
    both ends."""
    if len(first.n_eff) != len(last.n_eff) or first.dim != last.dim:
        raise ValueError("the two profiles differ in depth or width")
    n_eff = tuple(b - a for a, b in zip(first.n_eff, last.n_eff))
    bootstrap = None
    if first.bootstrap is not None and last.bootstrap is not None:
        before, after = first.bootstrap, last.bootstrap
        if (before.seed, before.variant, before.replicates.shape) != (after.seed, after.variant, after.replicates.shape):
            raise ValueError("the two bootstraps are not paired: measure both epochs with the same seed, "
                             "variant and number of replicates")
        bootstrap = dataclasses.replace(after, n_eff=list(n_eff), replicates=after.replicates - before.replicates)
    return ShapeSummary(last.epoch, n_eff, last.dim, bootstrap)


def mid_depth_minimum(shape: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """The profile is a U with its minimum in the middle: its middle dip exceeds ``margin``,
    and its lowest block is a middle one. The second is read off the share of bootstrap
    replicates whose lowest block is a middle one (:attr:`ClaimTest.middle_minimum_share`):
    it holds when the share reaches the interval's level, fails when it is at most one minus
    the level, and is undetermined between (without a bootstrap, the measured profile's
    lowest block decides). The verdict is the weaker of the two; the statistic and its
    interval are the dip's."""
    test = _test("mid-depth minimum", middle_dip, [shape], margin)
    if shape.bootstrap is None:
        where = Verdict.HOLDS if middle_is_lowest(shape.n_eff) else Verdict.FAILS
        return dataclasses.replace(test, verdict=_weakest(test.verdict, where))
    share, level = shape.bootstrap.middle_minimum_share(), shape.bootstrap.level
    where = Verdict.HOLDS if share >= level else Verdict.FAILS if share <= 1 - level else Verdict.UNDETERMINED
    return dataclasses.replace(test, verdict=_weakest(test.verdict, where), middle_minimum_share=share)


def deepens(first: ShapeSummary, last: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """The U deepened: the middle dip grew by more than ``margin`` from ``first`` to ``last``,
    and ``last`` has a mid-depth minimum (the weaker of the two verdicts; the statistic is the
    dip's growth)."""
    test = _test("deepens over training", lambda a, b: middle_dip(b) - middle_dip(a), [first, last], margin)
    return _needs_a_u(test, last)


def deeper_for_objects(objects: ShapeSummary, textures: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """The object data's U is deeper: its middle dip exceeds the texture data's by more than
    ``margin``, and the objects' profile has a mid-depth minimum (the weaker of the two
    verdicts; the statistic is the difference of the dips, which alone would also "hold" for
    two humps whose middles rise unequally)."""
    test = _test("deeper for object data", lambda a, b: middle_dip(a) - middle_dip(b), [objects, textures], margin)
    return _needs_a_u(test, objects)


def late_reexpansion(shape: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """After a minimum in the middle blocks, the late mean lies more than ``margin`` above
    the middle mean: the late rise (:func:`late_rise`) exceeds ``margin`` *and* the mid-depth
    minimum holds. Its verdict is the weaker of the two (a rise above a middle that is not
    a minimum is no re-expansion); its statistic and interval are the late rise's."""
    return _needs_a_u(_test("late re-expansion", late_rise, [shape], margin), shape)


def _needs_a_u(test: ClaimTest, shape: ShapeSummary) -> ClaimTest:
    """``test`` of a claim about a U, whose verdict can be no stronger than ``shape``'s
    mid-depth minimum (at the same margin)."""
    return dataclasses.replace(test, verdict=_weakest(test.verdict, mid_depth_minimum(shape, test.margin).verdict))


def _weakest(*verdicts: Verdict) -> Verdict:
    """The verdict on "all of these": fails if any fails, else undetermined if any is."""
    return min(verdicts, key=[Verdict.FAILS, Verdict.UNDETERMINED, Verdict.HOLDS].index)


def deeper_along_knob(weights: Sequence[float], shapes: Sequence[ShapeSummary], margin: float = MARGIN) -> ClaimTest:
    """Claim 3 along ``synthetic-mix``'s knob (:mod:`~ib_tutorial.reproduction.knob`): the
    middle dip's least-squares line over ``weights`` falls by more than ``margin`` from the
    objects' end to the textures' end, and the objects' end (the smallest weight) has a
    mid-depth minimum; ``difference`` is that fall."""
    def fall(*profiles: Sequence[float]) -> float:
        return -knob_trend(weights, [middle_dip(values) for values in profiles]).change
    objects_end = shapes[min(range(len(weights)), key=weights.__getitem__)]
    return _needs_a_u(_test("deeper for object data along the knob", fall, shapes, margin), objects_end)
