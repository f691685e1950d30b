"""The verdicts on trained networks, as the book states them: whether a run reached its
plateau (:mod:`ib_tutorial.reproduction.plateau`), a sentence per profile shape, one per
knob sweep (:mod:`ib_tutorial.reproduction.knob`) and a table of the paper's claims
(:mod:`ib_tutorial.reproduction.claims` computes them)."""
from __future__ import annotations

from collections.abc import Sequence

import math

from ..reproduction.claims import ClaimTest, ProfileShape
from ..reproduction.knob import knob_trend
from ..reproduction.paper import EARLY, LATE, MIDDLE
from ..reproduction.plateau import Plateau


def _blocks(blocks: tuple[int, ...]) -> str:
    return f"L{blocks[0]}-L{blocks[-1]}"


def plateau_sentence(label: str, result: Plateau) -> str:
    """Whether a run reached its plateau, with the gain the rule measured."""
    if not result.reached:
        verdict = "was still learning"
    elif result.learned < result.threshold:
        verdict = f"never rose above its random initialisation ({result.learned:+.1f} points over the run)"
    else:
        verdict = f"reached its plateau after gaining {result.learned:+.1f} points over the run"
    return (f"**{label}** {verdict}; over the last {result.fraction:.0%} of its schedule (epoch "
            f"{result.since_epoch} to {result.last_epoch}) its k-NN top-1 moved {result.gained:+.1f} points "
            f"(the rule: under {result.threshold:g} point).")


def shape_sentence(label: str, first: ProfileShape, last: ProfileShape) -> str:
    """How a run's block means moved from its first saved epoch to its last."""
    return (f"**{label}**: from epoch {first.epoch} to epoch {last.epoch}, the early blocks ({_blocks(EARLY)}) "
            f"went from {first.early:.1f} % to {last.early:.1f} %, the middle ones ({_blocks(MIDDLE)}) from "
            f"{first.middle:.1f} % to {last.middle:.1f} % and the late ones ({_blocks(LATE)}) from {first.late:.1f} % "
            f"to {last.late:.1f} %; the lowest block is now L{last.lowest_block} ({last.lowest:.1f} %).")


def claims_markdown(tested: Sequence[tuple[str, ClaimTest]]) -> str:
    """One row per (what was tested, claim): the difference, the margin and the verdict."""
    lines = ["| claim | tested on | difference (points of EED) | margin | verdict |", "| --- | --- | --- | --- | --- |"]
    for subject, test in tested:
        lines.append(f"| {test.claim} | {subject} | {test.difference:+.1f} | {test.margin:.1f} | "
                     f"{'holds' if test.holds else 'fails'} |")
    return "\n".join(lines)


def claims_summary(tested: Sequence[tuple[str, ClaimTest]]) -> str:
    """Which claims held and which failed, in one sentence."""
    held = [f"{test.claim} ({subject})" for subject, test in tested if test.holds]
    failed = [f"{test.claim} ({subject})" for subject, test in tested if not test.holds]
    return (f"Of {len(tested)} tests, {len(held)} held" + (f": {'; '.join(held)}" if held else "")
            + f", and {len(failed)} failed" + (f": {'; '.join(failed)}" if failed else "") + ".")


def knob_sentence(weights: Sequence[float], first: Sequence[ProfileShape], last: Sequence[ProfileShape]) -> str:
    """How the middle blocks' EED and the two gaps move along a knob sweep at its last saved
    epoch, against the same fit at the random initialisation (one shape per weight,
    ascending in weight)."""
    def moved(key: str, shapes: Sequence[ProfileShape], unit: str = " points") -> str:
        trend = knob_trend(weights, [getattr(shape, key) for shape in shapes])
        rho = "undefined" if math.isnan(trend.rank_correlation) else f"{trend.rank_correlation:+.2f}"
        sign = "+" if unit == " points" else ""
        return (f"from {getattr(shapes[0], key):{sign}.1f}{unit} at w = {weights[0]:g} to "
                f"{getattr(shapes[-1], key):{sign}.1f}{unit} at w = {weights[-1]:g} (the fitted line changes "
                f"{trend.change:+.1f} points over the knob; rank correlation {rho})")
    return (f"At epoch {last[0].epoch}, the middle blocks' EED ({_blocks(MIDDLE)}) goes {moved('middle', last, ' %')}; "
            f"early minus middle goes {moved('dip', last)}, and late minus middle {moved('reexpansion', last)}. "
            f"At the random initialisation, early minus middle goes {moved('dip', first)}.")
