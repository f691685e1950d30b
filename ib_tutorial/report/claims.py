"""The verdicts on trained networks, as the book states them: whether a run learned and
reached its plateau (:mod:`ib_tutorial.reproduction.learned`), a sentence per profile shape, one per
knob sweep (:mod:`ib_tutorial.reproduction.knob`), a table of the paper's claims
(:mod:`ib_tutorial.reproduction.claims` computes them) and one of a run's seeds
(:mod:`ib_tutorial.reproduction.seeds`)."""
from __future__ import annotations

from collections.abc import Sequence


from ..measure.bootstrap import Interval
from ..measure.shape import Verdict, near_lowest
from ..reproduction.claims import MARGIN, ClaimTest, ShapeSummary
from ..reproduction.learning import REGIONS, region_change
from ..reproduction.paper import EARLY, LATE, MIDDLE
from ..reproduction.learned import Learned
from ..reproduction.seeds import SeedSpread


def _blocks(blocks: tuple[int, ...]) -> str:
    return f"L{blocks[0]}-L{blocks[-1]}"


def learning_markdown(rules: dict[str, Learned]) -> str:
    """A row a run: the book's learned rule on it (:mod:`ib_tutorial.reproduction.learned`:
    the CLS k-NN gain from the random initialisation against its threshold, and for DINO the
    teacher's information against the collapse threshold) and the plateau rule (the k-NN move
    over the last part of the schedule, under the same threshold)."""
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
    """How a run's profile moved from its first saved epoch to its last: its shape by the
    rule of :mod:`ib_tutorial.measure.shape`, and its early, middle and late block means."""
    return (f"**{label}**: from epoch {first.epoch} to epoch {last.epoch}, the profile went from "
            f"{_shape(first)} to {_shape(last)}; the early blocks ({_blocks(EARLY)}) went from {first.early:.1f} % "
            f"to {last.early:.1f} %, the middle ones ({_blocks(MIDDLE)}) from {first.middle:.1f} % to "
            f"{last.middle:.1f} % and the late ones ({_blocks(LATE)}) from {first.late:.1f} % to {last.late:.1f} %; "
            f"the lowest block is now {lowest_text(last)}.")


def lowest_text(summary: ShapeSummary) -> str:
    """The lowest block with its EED%, and beside it every block within the shape rule's
    margin of it (:func:`~ib_tutorial.measure.shape.near_lowest`), which a resampling of the
    images could put lowest instead: "L5 (17.6 %; within 1 effective direction of it: L4 17.7 %)"."""
    lowest = summary.lowest_block
    near = near_lowest(summary.n_eff, MARGIN)
    within = (f"; within {MARGIN:g} effective direction of it: "
              + ", ".join(f"L{block} {summary.eed_percent[block]:.1f} %" for block in near) if near else "")
    return f"L{lowest} ({summary.eed_percent[lowest]:.1f} %{within})"


def change_markdown(first: ShapeSummary, last: ShapeSummary) -> str:
    """A table of what training did to a run, region by region (early L0-L1, middle L2-L4,
    late L9-L11 for 12 blocks): the mean EED% at ``first`` (the random initialisation) and at
    ``last``, and the change with its paired bootstrap interval
    (:func:`~ib_tutorial.reproduction.learning.region_change`)."""
    lines = [f"| blocks | EED% at epoch {first.epoch} | EED% at epoch {last.epoch} | change (points) "
             f"[{first.bootstrap.level:.0%} interval] |", "| --- | --- | --- | --- |"]
    for region in REGIONS:
        change = region_change(first, last, region)
        lines.append(f"| {region} | {getattr(first, region):.1f} | {getattr(last, region):.1f} | "
                     f"{change.estimate:+.1f} {interval_text(change, signed=True)} |")
    return "\n".join(lines) + "\n"


def interval_text(interval: Interval, signed: bool = False) -> str:
    """``[low, high]`` to one decimal (with signs for a change)."""
    number = "{:+.1f}" if signed else "{:.1f}"
    return f"[{number.format(interval.low)}, {number.format(interval.high)}]"


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
    """One row per (what was tested, claim): the statistic in effective directions, its
    bootstrap interval where the profiles had one, the margin and the three-valued verdict
    (with, for the mid-depth minimum, the share of replicates whose lowest block is a middle
    one, and, for a verdict over seeds, why it is undetermined)."""
    lines = ["| claim | tested on | statistic (directions) | interval | margin | verdict |",
             "| --- | --- | --- | --- | --- | --- |"]
    for subject, test in tested:
        lines.append(f"| {test.claim} | {subject} | {test.difference:+.1f} | {_interval(test)} | "
                     f"{test.margin:g} | {_verdict(test)} |")
    return "\n".join(lines)


def _verdict(test: ClaimTest) -> str:
    notes = []
    if test.middle_minimum_share is not None:
        notes.append(f"lowest block in the middle in {test.middle_minimum_share:.0%} of replicates")
    if test.reason:
        notes.append(test.reason)
    return test.verdict.value + (f" ({'; '.join(notes)})" if notes else "")


def claims_summary(tested: Sequence[tuple[str, ClaimTest]]) -> str:
    """Which claims held, which failed and which the intervals leave undetermined, in one
    sentence; the tests on networks that did not learn are counted apart."""
    parts = []
    words = {Verdict.HOLDS: "held", Verdict.FAILS: "failed", Verdict.UNDETERMINED: "were undetermined"}
    for verdict, word in words.items():
        named = [f"{test.claim} ({subject})" for subject, test in tested if test.verdict is verdict]
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
    unlearned = (f" The other {len(apart)} read networks that did not learn, on which the paper's claims are not "
                 f"applicable: {'; '.join(apart)}." if apart else "")
    if not counted:
        return f"None of the {len(tested)} tests reads a network that learned.{unlearned}"
    which = " on networks that learned" if apart else ""
    return f"Of {counted} tests{which}, {', '.join(parts[:-1])}, and {parts[-1]}.{note}{unlearned}"


def seeds_markdown(spread: SeedSpread) -> str:
    """Two tables, a row per seed: the k-NN top-1 at the initialisation and at the end, the
    last profile's shape (with the share of bootstrap replicates that agree), its middle dip and
    hump height in effective directions; then each region's last EED% and its change from the
    initialisation. Every number carries its interval."""
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
    """Where the paper's claims stand, in one table: a row per network (or group of seeds)
    tested, a column per claim in the order first tested, each cell the verdict ("n/a" where
    the network did not learn, with a legend under the table), "-" where that claim was not
    tested on that network. Each (network, claim) is tested once."""
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
    """How far the seed moves each region's level against how far other images move one
    seed's: a table of the level's spread across seeds, the widest bootstrap interval of one
    seed's level, and their ratio, by region; and the ratios."""
    ratios = {region: spread.level_spread(region) / spread.widest_level_interval(region) for region in REGIONS}
    lines = ["| blocks | level spread across seeds (EED points) | widest interval of one seed | ratio |",
             "| --- | ---: | ---: | ---: |"]
    lines += [f"| {region} | {spread.level_spread(region):.2f} | {spread.widest_level_interval(region):.2f} | {ratio:.1f} |"
              for region, ratio in ratios.items()]
    return "\n".join(lines), ratios
