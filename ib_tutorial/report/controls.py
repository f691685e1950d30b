"""One saved network in front of its controls, as "Networks that learned" and the claims
chapter read it: the measurements ``ib-tutorial measure`` committed for a run
(:mod:`~ib_tutorial.reproduction.measurement`), what the controls show, how far the ways of
measuring the paper leaves open move the levels against the gap to the paper's, and how far
fewer images (fewer token rows) move them.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..reproduction.measurement import INPUTS, LEVELS, MeasurementResult, measurement_path
from ..reproduction.paper import REPORTED
from .claims import interval_text


def run_measurements(run_folder: str | os.PathLike, images: int | None = None) -> dict[int, MeasurementResult]:
    """The measurements of a run's saved networks by epoch, ascending: on the default number
    of images (``measurement/<epoch>.json``), or on ``images`` where given and measured."""
    folder = Path(run_folder) / "measurement"
    epochs = sorted(int(path.stem) for path in folder.glob("*.json") if path.stem.isdigit())
    paths = {epoch: measurement_path(run_folder, epoch, images) if images else measurement_path(run_folder, epoch)
             for epoch in epochs}
    return {epoch: MeasurementResult.load(path) for epoch, path in paths.items() if path.exists()}


def level(result: MeasurementResult, source: str, which: str) -> float:
    """The paper's level ``which`` (early, middle, late) of input ``source``, default measurement, in EED%."""
    return result.get(source).levels()[which].estimate


@dataclass(frozen=True)
class ControlFindings:
    """What the controls show of one network, at its random initialisation and trained.

    Attributes:
        scrambled_gap: the largest gap, in EED points, between the images and their
            phase-scrambled versions over the three levels, both networks.
        shapes: by (``"init"`` or ``"trained"``, input), the profile's shape.
        noise_ratio: white noise's early level over the images', at the initialisation.
        levels: by (network, input, level), EED%.
    """

    scrambled_gap: float
    shapes: dict[tuple[str, str], str]
    noise_ratio: float
    levels: dict[tuple[str, str, str], float]


def control_findings(init: MeasurementResult, trained: MeasurementResult) -> ControlFindings:
    """:class:`ControlFindings` of one network measured at its initialisation and trained."""
    networks = {"init": init, "trained": trained}
    gap = max(abs(level(r, "images", which) - level(r, "phase-scrambled", which)) for r in networks.values()
              for which in LEVELS)
    shapes = {(name, source): r.get(source).shape()[0] for name, r in networks.items() for source in INPUTS}
    levels = {(name, source, which): level(r, source, which) for name, r in networks.items() for source in INPUTS
              for which in LEVELS}
    return ControlFindings(gap, shapes, levels["init", "noise", "early"] / levels["init", "images", "early"], levels)


def paper_level(which: str, reference: str = "tiny-imagenet") -> float:
    """The middle of the paper's reported range for a level, in EED%."""
    reported = REPORTED[reference]
    low, high = {"early": reported.early_eed, "middle": reported.minimum_eed, "late": reported.late_eed}[which]
    return (low + high) / 2


@dataclass(frozen=True)
class VariantSpan:
    """How far the ways of measuring move one level, against the gap to the paper's.

    Attributes:
        span: the largest over the smallest estimate of the level across every measurement
            of the images (a factor).
        gap: the paper's level (:func:`paper_level`) over the default measurement's (a factor).
    """

    span: float
    gap: float


def variant_spans(result: MeasurementResult, reference: str = "tiny-imagenet") -> dict[str, VariantSpan]:
    """By level, :class:`VariantSpan` of every measurement of ``result``'s images."""
    spans = {}
    for which in LEVELS:
        values = [m.levels()[which].estimate for m in result.profiles if m.input == INPUTS[0]]
        spans[which] = VariantSpan(max(values) / min(values), paper_level(which, reference) / level(result, "images", which))
    return spans


def variants_sentence(spans: Mapping[str, VariantSpan]) -> str:
    """What the spans say, level by level: the choices move each level by their factor, and
    by less or more than the gap to the paper's."""
    def said(which: str, span: VariantSpan) -> str:
        compared = "less than" if span.span < span.gap else "more than"
        return f"the {which} level by a factor of {span.span:.1f}, {compared} the factor of {span.gap:.1f} to the paper's"
    moved = "; ".join(said(which, span) for which, span in spans.items())
    more = [which for which, span in spans.items() if span.span >= span.gap]
    close = (f"for the {' and '.join(more)} level the choices move it further than the gap, for the others less"
             if more else "no choice of measurement moves a level as far as its gap")
    return f"The choices the paper leaves open move {moved}: {close}."


@dataclass(frozen=True)
class RowsComparison:
    """One network measured on the default number of images and on fewer.

    Attributes:
        markdown: a row per epoch and number of images: the three levels with intervals, the shape.
        largest_shift: the largest change of any level, in EED points, from many images to few.
        same_shapes: whether every epoch keeps its shape on fewer images.
        images: the two numbers of images, many then few.
    """

    markdown: str
    largest_shift: float
    same_shapes: bool
    images: tuple[int, int]


def rows_comparison(many: Mapping[int, MeasurementResult], few: Mapping[int, MeasurementResult]) -> RowsComparison:
    """:class:`RowsComparison` of the epochs measured both ways (``many`` and ``few``, by epoch)."""
    rows = ["| network | images | early EED% | middle (min) EED% | late (max) EED% | shape (share of replicates) |",
            "| --- | ---: | --- | --- | --- | --- |"]
    shifts, same = [], True
    for epoch, fewer in few.items():
        for result in (many[epoch], fewer):
            levels, (shape, share) = result.get("images").levels(), result.get("images").shape()
            rows.append(f"| epoch {epoch} | {result.images} | "
                        + " | ".join(f"{levels[name].estimate:.1f} {interval_text(levels[name])}" for name in LEVELS)
                        + f" | {shape} ({share:.0%}) |")
        shifts += [level(fewer, "images", which) - level(many[epoch], "images", which) for which in LEVELS]
        same &= fewer.get("images").shape()[0] == many[epoch].get("images").shape()[0]
    epoch = next(iter(few))
    return RowsComparison("\n".join(rows), max(map(abs, shifts)), same, (many[epoch].images, few[epoch].images))
