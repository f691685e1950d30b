"""Set a measured EED profile against what the paper reports, stating every deviation."""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ..training.run_spec import RunSpec
from .paper import REPORTED, ReportedProfile, late_label, late_value


@dataclass(frozen=True)
class ComparisonRow:
    """One summary statistic: ours, the paper's, and how they differ."""

    dataset: str
    statistic: str
    ours: float | None
    ours_text: str
    paper_text: str
    verdict: str  # "within", "above", "below", "qualitative match", "differs", "not reported"
    deviation: str


def _mean(values: list[float], blocks: tuple[int, ...]) -> float:
    return sum(values[b] for b in blocks) / len(blocks)


def _against_range(value: float, bounds: tuple[float, float] | None) -> tuple[str, str, str]:
    if bounds is None:
        return "not reported", "the paper gives no number", "-"
    low, high = bounds
    paper = f"{low:.1f}-{high:.1f} %" if low != high else f"{low:.1f} %"  # a band of ours where the paper gives one value (paper.about)
    if value < low:
        return paper, "below", f"{value - low:+.1f} points below the range"
    if value > high:
        return paper, "above", f"{value - high:+.1f} points above the range"
    return paper, "within", "inside the reported range"


def compare_profile(dataset: str, eed_percent: list[float]) -> list[ComparisonRow]:
    """Early-block, minimum and late-block EED%, and flatness, against the paper.

    ``eed_percent`` is the per-block profile (12 values, block 0 first). Datasets the
    paper did not study get the same rows with the verdict "not reported".
    """
    reported: ReportedProfile | None = REPORTED.get(dataset)
    ref = reported or REPORTED["tiny-imagenet"]  # block ranges are the same for every dataset
    rows = []

    def add(statistic, ours, ours_text, bounds, key):
        paper, verdict, deviation = _against_range(ours, bounds) if reported else ("not studied", "not reported", "-")
        note = reported.band_note(key, bounds) if reported else ""
        paper = f"{paper} ({note})" if note else paper
        rows.append(ComparisonRow(dataset, statistic, ours, ours_text, paper, verdict, deviation))

    early = _mean(eed_percent, ref.early_blocks)
    add(f"early EED% (mean of L{ref.early_blocks[0]}-L{ref.early_blocks[-1]})", early, f"{early:.1f} %",
        reported.early_eed if reported else None, "early")

    minimum = min(eed_percent)
    where = eed_percent.index(minimum)
    add("minimum EED%", minimum, f"{minimum:.1f} % at L{where}", reported.minimum_eed if reported else None, "minimum")
    if reported and reported.minimum_eed is not None:
        in_middle = where in reported.middle_blocks
        rows.append(ComparisonRow(
            dataset, "block of the minimum", float(where), f"L{where}",
            f"L{reported.middle_blocks[0]}-L{reported.middle_blocks[-1]}",
            "within" if in_middle else "differs",
            "inside the reported blocks" if in_middle else f"minimum at L{where}, outside the reported blocks",
        ))

    late = late_value(ref, eed_percent)  # the highest late block where the paper says "up to"
    add(f"late EED% ({late_label(ref)})", late, f"{late:.1f} %", reported.late_eed if reported else None,
        "late")
    if reported and reported.late_eed is None and reported.minimum_eed is not None:
        rises = where < min(ref.late_blocks) and late > minimum  # a minimum inside the late blocks is no rise
        rows[-1] = ComparisonRow(
            dataset, rows[-1].statistic, late, f"{late:.1f} %", "rises again after the minimum",
            "qualitative match" if rises else "differs",
            f"{late - minimum:+.1f} points above the minimum" if rises else "does not rise after the minimum",
        )

    if reported and reported.flat_above is not None:
        lowest = min(eed_percent)
        flat = lowest > reported.flat_above
        rows.append(ComparisonRow(
            dataset, "flatness (lowest block)", lowest,
            f"lowest {lowest:.1f} %, spread {max(eed_percent) - lowest:.1f} points",
            f"flat, above {reported.flat_above:.0f} % at every depth",
            "within" if flat else "below",
            "every block above the reported floor" if flat
            else f"{lowest - reported.flat_above:+.1f} points below the floor at L{eed_percent.index(lowest)}",
        ))
    return rows


def run_comparison(spec: str, eed_percent: list[float]) -> list[ComparisonRow]:
    """:func:`compare_profile` of one run of a reproduction, its rows named by the run's spec
    (``tiny-imagenet@arch=vit_small``) rather than its dataset."""
    return [replace(row, dataset=spec) for row in compare_profile(RunSpec.parse(spec).dataset, eed_percent)]


def comparison_records(rows: list[ComparisonRow]) -> list[dict]:
    return [asdict(r) for r in rows]
