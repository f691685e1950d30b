r"""The paper's claims, tested on measured profiles, and the verdicts the book states.

The paper makes four claims about a ViT that has learned its data: (1) a **mid-depth minimum**,
the middle blocks (L2-L4) below the early and the late ones, a U; (2) the U **deepens over
training**; (3) it is **deeper for object data than for texture data** (also along
``synthetic-mix``'s texture knob, :func:`deeper_along_knob`); (4) a **late re-expansion**, the
late blocks (L9-L11) above the middle ones again.

Each claim reads a smooth statistic of :mod:`ib_tutorial.measure.shape` in effective directions,
the **middle dip** :math:`\min(\bar v_E, \bar v_L) - \bar v_M` or the **late rise**
:math:`\bar v_L - \bar v_M` (their bootstrap intervals have none of the gated U-depth's jumps),
and holds when it exceeds :data:`MARGIN`; a claim about a U is no stronger than the profile's
mid-depth minimum. With a bootstrap the verdict is ``holds`` (interval above the margin),
``fails`` (none of it) or ``undetermined``; on a network that did not learn it is ``not
applicable`` (:func:`on_learned`); over seeds it holds or fails only where every seed learned and
all agree (:func:`across_seeds`). Without a bootstrap a profile reads its point value or an
interval borrowed from runs of the same settings (:func:`borrowed_test`).

Each claim is read on the trained **level** and on the **change** from the random
initialisation (:func:`change_from_initialisation`): the level is set largely by the input's own
statistics, so runs on different data compare by their change, whose interval is paired (every
profile of a run is bootstrapped on the same images with the same seed). A bootstrap says how a
profile moves with other images; seeds say how it moves when trained again (:class:`SeedSpread`).
"""
from __future__ import annotations

import numpy as np
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..measure.bootstrap import BootstrapProfile, Interval, LEVEL, joint_interval, wilson_interval
from ..measure.shape import (DIRECTIONS, ProfileShape, Verdict, classify_shape, hump_height, middle_dip,
    middle_is_lowest, near_lowest, region_means, u_depth, verdict)
from .bundles import BundleRun
from .learned import Learned, run_learned
from .paper import EARLY, LATE, MIDDLE
from .records import ProfileRecord, bootstrap_of
from .tables import markdown_table
from scipy.stats import spearmanr


#: Effective directions a claim's statistic must exceed: a choice (the paper gives none), one
#: direction, small beside the paper's own gap (about 28 points of EED from the early to the
#: middle blocks, 107 directions of ViT-S's 384).
MARGIN = DIRECTIONS


def late_rise(values: Sequence[float]) -> float:
    r"""How far the late blocks' mean lies above the middle blocks', :math:`\bar v_L - \bar v_M`."""
    means = region_means(values)
    return means.late - means.middle


@dataclass(frozen=True)
class ShapeSummary:
    """One saved epoch's profile, summarised for the claims: :math:`N_\\mathrm{eff}` per block at
    width ``dim`` (EED% is ``100 * n_eff / dim``), epoch 0 the random initialisation, with its
    bootstrap over images where it was measured with one."""

    epoch: int
    n_eff: tuple[float, ...]
    dim: int
    bootstrap: BootstrapProfile | None = None

    @property
    def eed_percent(self) -> list[float]:
        return [100 * value / self.dim for value in self.n_eff]

    @property
    def shape(self) -> ProfileShape:
        """:func:`~ib_tutorial.measure.shape.classify_shape` at :data:`MARGIN`."""
        return classify_shape(self.n_eff, MARGIN)

    @property
    def lowest_block(self) -> int:
        return min(range(len(self.n_eff)), key=self.n_eff.__getitem__)

    # The U-depth, middle dip and late rise are in effective directions; the rest in EED%.
    @property
    def u_depth(self) -> float:
        return u_depth(self.n_eff)

    @property
    def middle_dip(self) -> float:
        return middle_dip(self.n_eff)

    @property
    def late_rise(self) -> float:
        return late_rise(self.n_eff)

    @property
    def lowest(self) -> float:
        return self.eed_percent[self.lowest_block]

    @property
    def early(self) -> float:
        return region_means(self.eed_percent).early

    @property
    def middle(self) -> float:
        return region_means(self.eed_percent).middle

    @property
    def late(self) -> float:
        return region_means(self.eed_percent).late


def profile_shape(record: ProfileRecord) -> ShapeSummary:
    """The :class:`ShapeSummary` of a profile record, with the bootstrap it stores, if any."""
    return ShapeSummary(record.epoch or 0, tuple(record.profile.n_eff), record.profile.dim, bootstrap_of(record))


@dataclass(frozen=True)
class ClaimTest:
    """One claim tested: the statistic (``difference``) and ``margin`` in effective directions,
    its interval (None without a bootstrap), how many runs an approximate interval was borrowed
    from (:func:`borrowed_test`), for the mid-depth minimum the share of replicates whose lowest
    block is a middle one, and why a verdict over seeds is undetermined (:func:`across_seeds`)."""

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
    """``statistic`` of the shapes' :math:`N_\\mathrm{eff}` against ``margin``, with its joint
    bootstrap interval when every shape has one."""
    value = statistic(*(shape.n_eff for shape in shapes))
    if all(shape.bootstrap is not None for shape in shapes):
        interval = joint_interval(statistic, [shape.bootstrap for shape in shapes])
        return ClaimTest(claim, interval.verdict(margin), value, margin, interval)
    return ClaimTest(claim, verdict(value, value, margin), value, margin)


def borrowed_test(test: ClaimTest, others: Sequence[ClaimTest]) -> ClaimTest:
    """``test`` (a profile without a bootstrap) with an approximate interval borrowed from
    ``others``, the same claim on runs of the same settings: the point value widened on each
    side by the whole range the others' intervals cover."""
    if test.interval is not None:
        raise ValueError(f"{test.claim}: the test has its own interval; nothing to borrow")
    if not others or any(other.interval is None or other.claim != test.claim for other in others):
        raise ValueError(f"{test.claim}: borrow only from tests of the same claim that have intervals")
    width = max(other.interval.high for other in others) - min(other.interval.low for other in others)
    interval = Interval(test.difference, test.difference - width, test.difference + width, others[0].interval.level)
    return ClaimTest(test.claim, interval.verdict(test.margin), test.difference, test.margin, interval, len(others))


def on_learned(test: ClaimTest, learned: bool) -> ClaimTest:
    """``test``, or ``not applicable`` (statistic and interval kept) where its network did not learn."""
    return test if learned else dataclasses.replace(test, verdict=Verdict.NOT_APPLICABLE)


def across_seeds(tests: Sequence[ClaimTest], learned: Sequence[bool], seeds: Sequence[int]) -> ClaimTest:
    """One claim over runs that differ only in their seed: the seeds' mean, an interval that
    spans every seed's interval (or point), and the verdict the module docstring gives."""
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
    """``last`` minus ``first`` (the random initialisation) block by block, with paired
    replicates where both have a bootstrap: a mid-depth minimum of the change is a middle that
    gained less than both ends."""
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
    """A U with its minimum in the middle: the middle dip exceeds ``margin`` and the share of
    replicates whose lowest block is a middle one reaches the interval's level (fails at most one
    minus it; without a bootstrap the lowest block decides); the weaker of the two verdicts."""
    test = _test("mid-depth minimum", middle_dip, [shape], margin)
    if shape.bootstrap is None:
        where = Verdict.HOLDS if middle_is_lowest(shape.n_eff) else Verdict.FAILS
        return dataclasses.replace(test, verdict=_weakest(test.verdict, where))
    share, level = shape.bootstrap.middle_minimum_share(), shape.bootstrap.level
    where = Verdict.HOLDS if share >= level else Verdict.FAILS if share <= 1 - level else Verdict.UNDETERMINED
    return dataclasses.replace(test, verdict=_weakest(test.verdict, where), middle_minimum_share=share)


def deepens(first: ShapeSummary, last: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """The middle dip grew by more than ``margin`` from ``first`` to ``last``, a U."""
    test = _test("deepens over training", lambda a, b: middle_dip(b) - middle_dip(a), [first, last], margin)
    return _needs_a_u(test, last)


def deeper_for_objects(objects: ShapeSummary, textures: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """The objects' middle dip exceeds the textures' by more than ``margin``, the objects' a U
    (the difference alone would "hold" for two humps whose middles rise unequally)."""
    test = _test("deeper for object data", lambda a, b: middle_dip(a) - middle_dip(b), [objects, textures], margin)
    return _needs_a_u(test, objects)


def late_reexpansion(shape: ShapeSummary, margin: float = MARGIN) -> ClaimTest:
    """The late rise (:func:`late_rise`) exceeds ``margin``, on a U."""
    return _needs_a_u(_test("late re-expansion", late_rise, [shape], margin), shape)


def _needs_a_u(test: ClaimTest, shape: ShapeSummary) -> ClaimTest:
    """``test`` no stronger than ``shape``'s mid-depth minimum at the same margin."""
    return dataclasses.replace(test, verdict=_weakest(test.verdict, mid_depth_minimum(shape, test.margin).verdict))


def _weakest(*verdicts: Verdict) -> Verdict:
    """The verdict on "all of these": fails if any fails, else undetermined if any is."""
    return min(verdicts, key=[Verdict.FAILS, Verdict.UNDETERMINED, Verdict.HOLDS].index)


def deeper_along_knob(weights: Sequence[float], shapes: Sequence[ShapeSummary], margin: float = MARGIN) -> ClaimTest:
    """Claim 3 along the knob: the middle dip's fitted line falls by more than ``margin`` from a U."""
    def fall(*profiles: Sequence[float]) -> float:
        return -knob_trend(weights, [middle_dip(values) for values in profiles]).change
    objects_end = shapes[min(range(len(weights)), key=weights.__getitem__)]
    return _needs_a_u(_test("deeper for object data along the knob", fall, shapes, margin), objects_end)


#: The regions a profile's change is summarised over (:func:`~ib_tutorial.measure.shape.depth_regions`).
REGIONS = ("early", "middle", "late")


def block_changes(first: ShapeSummary, last: ShapeSummary) -> list[Interval]:
    """EED points each block gained from ``first`` to ``last``, with paired bootstrap intervals."""
    _check_paired(first, last)
    return [joint_interval(lambda before, after, block=block: after[block] - before[block],
                           [first.bootstrap, last.bootstrap], percent=True) for block in range(len(first.n_eff))]


def region_change(first: ShapeSummary, last: ShapeSummary, region: str) -> Interval:
    """EED points a region's mean gained from ``first`` to ``last``, with its paired interval."""
    if region not in REGIONS:
        raise ValueError(f"unknown region {region!r}; choose from {', '.join(REGIONS)}")
    _check_paired(first, last)

    def change(before: Sequence[float], after: Sequence[float]) -> float:
        return getattr(region_means(after), region) - getattr(region_means(before), region)

    return joint_interval(change, [first.bootstrap, last.bootstrap], percent=True)


def knn_interval(record: dict, level: float = LEVEL) -> Interval | None:
    """The Wilson interval, in points, of a ``metrics.jsonl`` k-NN record; None without ``n_eval``."""
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
    """One run's CLS k-NN top-1 (%, Wilson intervals) and profile (bootstrapped) at the random
    initialisation (``first``) and at the last saved epoch (``last``)."""

    seed: int
    knn_first: Interval
    knn_last: Interval
    first: ShapeSummary
    last: ShapeSummary

    @classmethod
    def of(cls, run: BundleRun) -> LearningSummary:
        first, last = profile_shape(run.profiles[0]), profile_shape(run.profiles[-1])
        if first.bootstrap is None or last.bootstrap is None:
            raise ValueError(f"{run.spec}: its profiles were measured without a bootstrap; "
                             "profile the run again (`ib-tutorial profile RUN`) to store one")
        knn_first, knn_last = knn_interval(run.knn[0]), knn_interval(run.knn[-1])
        if knn_first is None or knn_last is None:
            raise ValueError(f"{run.spec}: its k-NN records do not say how many images were evaluated")
        return cls(run.config.seed, knn_first, knn_last, first, last)

    def level(self, region: str) -> Interval:
        """The last profile's mean EED% over a region."""
        return self.last.bootstrap.interval(lambda values: getattr(region_means(values), region), percent=True)

    def change(self, region: str) -> Interval:
        """EED points the region gained in training (:func:`region_change`)."""
        return region_change(self.first, self.last, region)

    @property
    def middle_dip(self) -> Interval:
        return self.last.bootstrap.interval(middle_dip)

    @property
    def hump_height(self) -> Interval:
        return self.last.bootstrap.interval(hump_height)

    @property
    def shape_share(self) -> float:
        """The share of bootstrap replicates whose shape is the measured one's."""
        return self.last.bootstrap.shape_shares().get(self.last.shape, 0.0)


@dataclass(frozen=True)
class SeedSpread:
    """Runs that differ only in their seed, one summary each, in ascending seed."""

    runs: tuple[LearningSummary, ...]

    def __post_init__(self) -> None:
        if len(self.runs) < 2:
            raise ValueError(f"a spread needs at least two seeds, got {len(self.runs)}")
        if len({run.seed for run in self.runs}) != len(self.runs):
            raise ValueError(f"two runs share a seed: {[run.seed for run in self.runs]}")

    @classmethod
    def of(cls, runs: Sequence[BundleRun]) -> SeedSpread:
        return cls(tuple(sorted((LearningSummary.of(run) for run in runs), key=lambda run: run.seed)))

    @property
    def seeds(self) -> list[int]:
        return [run.seed for run in self.runs]

    @property
    def shapes(self) -> list[ProfileShape]:
        return [run.last.shape for run in self.runs]

    # Spreads across seeds: the largest minus the smallest value, in points.
    def level_spread(self, region: str) -> float:
        return float(np.ptp([run.level(region).estimate for run in self.runs]))

    def change_spread(self, region: str) -> float:
        return float(np.ptp([run.change(region).estimate for run in self.runs]))

    def knn_last_spread(self) -> float:
        return float(np.ptp([run.knn_last.estimate for run in self.runs]))

    def widest_level_interval(self, region: str) -> float:
        """How far other images alone would move one seed's level: its widest interval, in points."""
        return max(run.level(region).high - run.level(region).low for run in self.runs)


#: The two readings of a knob end's profile: the trained level, and what training changed.
READINGS = ("level", "change from init")


def _learned(runs: Sequence[BundleRun]) -> list[bool]:
    """Whether each run learned, in ascending seed as :class:`SeedSpread` orders them."""
    return [run_learned(run) for run in sorted(runs, key=lambda run: run.config.seed)]


def _own_claims(first: ShapeSummary, last: ShapeSummary) -> list[ClaimTest]:
    """The three claims a run's own profiles answer."""
    return [mid_depth_minimum(last), deepens(first, last), late_reexpansion(last)]


def run_tests(run: BundleRun) -> list[ClaimTest]:
    """The three claims a run's own profiles answer, on its first and last profiles."""
    first, last, learned = profile_shape(run.profiles[0]), profile_shape(run.profiles[-1]), run_learned(run)
    return [on_learned(test, learned) for test in _own_claims(first, last)]


def seed_tests(spread: SeedSpread, runs: Sequence[BundleRun]) -> tuple[list[tuple[str, ClaimTest]], list[ClaimTest]]:
    """Each seed's tests of :func:`run_tests`, as ``("seed N", test)``, then each claim over the seeds."""
    tests, learned = [_own_claims(run.first, run.last) for run in spread.runs], _learned(runs)
    per_seed = [(f"seed {run.seed}", test) for run, own in zip(spread.runs, tests) for test in own]
    return per_seed, [across_seeds(claim, learned, spread.seeds) for claim in zip(*tests)]


def knob_end_tests(spread: SeedSpread, runs: Sequence[BundleRun]) -> dict[str, tuple[list[ClaimTest], ClaimTest]]:
    """The mid-depth minimum at one weight of the knob by reading: each seed's test, then over the seeds."""
    learned, tested = _learned(runs), {}
    for reading in READINGS:
        change = reading != "level"
        per_seed = [mid_depth_minimum(change_from_initialisation(run.first, run.last) if change else run.last)
                    for run in spread.runs]
        tested[reading] = (per_seed, across_seeds(per_seed, learned, spread.seeds))
    return tested


def _blocks(blocks: tuple[int, ...]) -> str:
    return f"L{blocks[0]}-L{blocks[-1]}"


def learning_markdown(rules: dict[str, Learned]) -> str:
    """A row a run: the book's learned rule on it and the plateau rule."""
    lines = ["| run | CLS k-NN gain (points) | threshold | teacher (nats) | learned | last quarter's move | plateau |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for label, rule in rules.items():
        knn = rule.knn
        gain = f"{knn.learned:+.1f}"
        if knn.best >= knn.threshold > knn.learned:  # it stood past the threshold before it fell back
            gain += f" (best {knn.best:+.1f} at epoch {knn.best_epoch})"
        teacher = "-" if rule.teacher_information is None else f"{rule.teacher_information:.2f} (floor {rule.teacher_floor:.2f})"
        move = f"{knn.gained:+.1f} (epoch {knn.since_epoch}-{knn.last_epoch})"
        lines.append(f"| {label} | {gain} | {knn.threshold:.1f} | {teacher} | {'yes' if rule.learned else 'no'} | {move} "
                     f"| {'reached' if knn.reached else 'still learning'} |")
    return "\n".join(lines)


def shape_sentence(label: str, first: ShapeSummary, last: ShapeSummary) -> str:
    """How a run's profile moved from its first saved epoch to its last: shape and region means."""
    return (f"**{label}**: from epoch {first.epoch} to epoch {last.epoch}, the profile went from "
            f"{_shape(first)} to {_shape(last)}; the early blocks ({_blocks(EARLY)}) went from {first.early:.1f} % "
            f"to {last.early:.1f} %, the middle ones ({_blocks(MIDDLE)}) from {first.middle:.1f} % to "
            f"{last.middle:.1f} % and the late ones ({_blocks(LATE)}) from {first.late:.1f} % to {last.late:.1f} %; "
            f"the lowest block is now {lowest_text(last)}.")


def lowest_text(summary: ShapeSummary) -> str:
    """The lowest block and those a resampling could put lowest instead
    (:func:`~ib_tutorial.measure.shape.near_lowest`): "L5 (17.6 %; within 1 effective direction
    of it: L4 17.7 %)"."""
    lowest = summary.lowest_block
    near = near_lowest(summary.n_eff, MARGIN)
    within = (f"; within {MARGIN:g} effective direction of it: "
              + ", ".join(f"L{block} {summary.eed_percent[block]:.1f} %" for block in near) if near else "")
    return f"L{lowest} ({summary.eed_percent[lowest]:.1f} %{within})"


def change_markdown(first: ShapeSummary, last: ShapeSummary) -> str:
    """Each region's mean EED% at ``first`` and ``last``, and the change with its paired interval."""
    header = ["blocks", f"EED% at epoch {first.epoch}", f"EED% at epoch {last.epoch}",
              f"change (points) [{first.bootstrap.level:.0%} interval]"]
    changes = {region: region_change(first, last, region) for region in REGIONS}
    rows = [(region, f"{getattr(first, region):.1f}", f"{getattr(last, region):.1f}",
             f"{change.estimate:+.1f} {interval_text(change, signed=True)}") for region, change in changes.items()]
    return markdown_table(header, rows) + "\n"


def interval_text(interval: Interval, signed: bool = False) -> str:
    """``[low, high]`` to one decimal."""
    spec = "+.1f" if signed else ".1f"
    return f"[{interval.low:{spec}}, {interval.high:{spec}}]"


def _shape(summary: ShapeSummary) -> str:
    article = "an" if summary.shape.value[0] in "aeio" else "a"
    return f"{article} {summary.shape.value} (middle dip {summary.middle_dip:+.1f} directions)"


def _interval(test: ClaimTest) -> str:
    if test.interval is None:
        return "none (no bootstrap)"
    if test.borrowed_from:
        return f"≈ {test.interval.low:+.1f} to {test.interval.high:+.1f}, borrowed from {test.borrowed_from} other runs"
    return f"{test.interval.low:+.1f} to {test.interval.high:+.1f} ({test.interval.level:.0%})"


def claims_markdown(tested: Sequence[tuple[str, ClaimTest]]) -> str:
    """One row per (what was tested, claim): statistic, interval, margin and verdict."""
    return markdown_table(["claim", "tested on", "statistic (directions)", "interval", "margin", "verdict"],
                          [(test.claim, subject, f"{test.difference:+.1f}", _interval(test), f"{test.margin:g}",
                            _verdict(test)) for subject, test in tested])


def _verdict(test: ClaimTest) -> str:
    notes = []
    if test.middle_minimum_share is not None:
        notes.append(f"lowest block in the middle in {test.middle_minimum_share:.0%} of replicates")
    if test.reason:
        notes.append(test.reason)
    return test.verdict.value + (f" ({'; '.join(notes)})" if notes else "")


def claims_summary(tested: Sequence[tuple[str, ClaimTest]]) -> str:
    """Which claims held, failed or were undetermined; tests on networks that did not learn apart."""
    parts = []
    words = {Verdict.HOLDS: "held", Verdict.FAILS: "failed", Verdict.UNDETERMINED: "were undetermined"}
    for outcome, word in words.items():
        named = [f"{test.claim} ({subject})" for subject, test in tested if test.verdict is outcome]
        parts.append(f"{len(named)} {word}" + (f": {'; '.join(named)}" if named else ""))
    applicable = [test for _, test in tested if test.verdict is not Verdict.NOT_APPLICABLE]
    unbootstrapped = sum(test.interval is None for test in applicable)
    borrowed = sum(test.borrowed_from > 0 for test in applicable)
    note = (f" {unbootstrapped} of them read a profile measured without a bootstrap, so their verdict "
            "rests on the point value alone." if unbootstrapped else "")
    note += (f" {borrowed} of them read an approximate interval borrowed from other runs."
             if borrowed else "")
    apart = [f"{test.claim} ({subject})" for subject, test in tested if test.verdict is Verdict.NOT_APPLICABLE]
    counted = len(tested) - len(apart)
    if not counted:
        return (f"None of the {len(tested)} tests reads a network that learned, so the paper's claims are not "
                f"applicable to any: {'; '.join(apart)}.")
    unlearned = (f" The other {len(apart)} read networks that did not learn, on which the paper's claims are not "
                 f"applicable: {'; '.join(apart)}." if apart else "")
    which = " on networks that learned" if apart else ""
    return f"Of {counted} tests{which}, {', '.join(parts[:-1])}, and {parts[-1]}.{note}{unlearned}"


def seeds_markdown(spread: SeedSpread) -> str:
    """Two tables, a row per seed: its k-NN and shape, then each region's level and change."""
    learning = ["| seed | k-NN top-1 at init (%) | at the end (%) | shape (share of replicates) | "
                "middle dip (directions) | hump height (directions) |", "| ---: | --- | --- | --- | --- | --- |"]
    levels = ["| seed | " + " | ".join(f"{region} EED%, change from init" for region in REGIONS) + " |",
              "| ---: | " + " | ".join("---" for _ in REGIONS) + " |"]
    for run in spread.runs:
        learning.append(f"| {run.seed} | {run.knn_first.estimate:.1f} {interval_text(run.knn_first)} | "
                        f"{run.knn_last.estimate:.1f} {interval_text(run.knn_last)} | {run.last.shape.value} "
                        f"({run.shape_share:.0%}) | {run.middle_dip.estimate:+.1f} {interval_text(run.middle_dip, signed=True)} | "
                        f"{run.hump_height.estimate:.1f} {interval_text(run.hump_height)} |")
        levels.append(f"| {run.seed} | " + " | ".join(
            f"{run.level(region).estimate:.1f} {interval_text(run.level(region))}, "
            f"{run.change(region).estimate:+.1f} {interval_text(run.change(region), signed=True)}" for region in REGIONS) + " |")
    level = spread.runs[0].knn_last.level
    return ("\n".join(learning) + "\n\n" + "\n".join(levels)
            + f"\n\nIntervals: {level:.0%}, Wilson for k-NN, bootstrap over the images for the rest.\n")


def status_markdown(tested: Sequence[tuple[str, ClaimTest]]) -> str:
    """A row per network (or group of seeds), a column per claim, "-" where not tested."""
    claims_order = list(dict.fromkeys(test.claim for _, test in tested))
    cells: dict[str, dict[str, str]] = {}
    for subject, test in tested:
        row = cells.setdefault(subject, {})
        if test.claim in row:
            raise ValueError(f"{test.claim!r} is tested twice on {subject!r}: give each network's test once")
        row[test.claim] = "n/a" if test.verdict is Verdict.NOT_APPLICABLE else test.verdict.value
    lines = ["| network | " + " | ".join(claims_order) + " |", "| --- |" + " --- |" * len(claims_order)]
    lines += [f"| {subject} | " + " | ".join(row.get(claim, "-") for claim in claims_order) + " |"
              for subject, row in cells.items()]
    if any(test.verdict is Verdict.NOT_APPLICABLE for _, test in tested):
        lines.append(f"\nn/a: {Verdict.NOT_APPLICABLE.value}, by the book's learned rule (a k-NN gain of at least two "
                     "standard errors and, for DINO, a teacher that did not collapse); the claims are about networks "
                     "that learned.")
    return "\n".join(lines)


def level_spread_markdown(spread: SeedSpread) -> tuple[str, dict[str, float]]:
    """How far the seed moves each region's level against how far other images do, and the ratios."""
    ratios = {region: spread.level_spread(region) / spread.widest_level_interval(region) for region in REGIONS}
    lines = ["| blocks | level spread across seeds (EED points) | widest interval of one seed | ratio |",
             "| --- | ---: | ---: | ---: |"]
    lines += [f"| {region} | {spread.level_spread(region):.2f} | {spread.widest_level_interval(region):.2f} | {ratio:.1f} |"
              for region, ratio in ratios.items()]
    return "\n".join(lines), ratios


@dataclass(frozen=True)
class KnobTrend:
    """A shape statistic against the knob: the least-squares slope (points per unit of
    ``texture_weight``), the line's change from the smallest weight to the largest, and Spearman's
    rho (NaN for fewer than three weights or a constant statistic)."""

    slope: float
    change: float
    rank_correlation: float


def knob_trend(weights: Sequence[float], values: Sequence[float]) -> KnobTrend:
    """Fit ``values`` (one per weight) against ``weights``."""
    weights, values = np.asarray(weights, dtype=float), np.asarray(values, dtype=float)
    if len(weights) < 2 or len(weights) != len(values):
        raise ValueError(f"a trend needs two or more weights, each with one value; got {len(weights)} and {len(values)}")
    slope = float(np.polyfit(weights, values, 1)[0])
    rho = float("nan")
    if len(weights) >= 3 and np.ptp(values) > 0:
        rho = float(spearmanr(weights, values).statistic)
    return KnobTrend(slope, slope * float(np.ptp(weights)), rho)
