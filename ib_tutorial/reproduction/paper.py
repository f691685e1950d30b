"""What the paper reports, as data, so that figures and tables can be checked against it.

Values are read off the paper's text for converged (100-epoch) DINO ViT-Small runs
(Awadhiya, arXiv 2512.07331). Where the paper gives a range ("about 58-60 %") we keep it; where
it gives one value ("about 30.5 %", "up to about 92.5 %") the band is ours: the value plus or
minus :data:`ABOUT_TOLERANCE` points. :attr:`ReportedProfile.quotes` keeps the paper's own words,
and tables print them beside the band. Blocks are 0-based: L0 is the first transformer block.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..data import DATASETS


@dataclass(frozen=True)
class ReportedProfile:
    """The paper's summary of one dataset's EED% profile.

    Attributes:
        early_blocks: the blocks the "early" value refers to.
        early_eed: (low, high) EED% in those blocks, or None if not reported.
        middle_blocks: where the minimum is reported to lie.
        minimum_eed: (low, high) EED% at the minimum, or None.
        late_blocks: the blocks the "late" value refers to.
        late_eed: (low, high) EED% of the late statistic, or None.
        flat_above: for a profile reported as flat, the EED% every block stays above.
        late_statistic: how the late blocks are summarised: "mean" of them, or "max", the
            highest of them (the paper's "up to" names the highest late block).
        quotes: the paper's words for each statistic ("early", "minimum", "late", "flat").
        tolerance_bands: the statistics whose band is our tolerance around the one value the
            paper states (:func:`about`), not a range of the paper's.
    """

    early_blocks: tuple[int, ...]
    early_eed: tuple[float, float] | None
    middle_blocks: tuple[int, ...]
    minimum_eed: tuple[float, float] | None
    late_blocks: tuple[int, ...]
    late_eed: tuple[float, float] | None
    flat_above: float | None = None
    late_statistic: str = "mean"
    quotes: dict[str, str] = field(default_factory=dict)
    tolerance_bands: tuple[str, ...] = ()

    def band_note(self, statistic: str, values: tuple[float, float] | None) -> str:
        """The paper's words for ``statistic`` and, where the band is ours, that it is."""
        quote = self.quotes.get(statistic)
        if quote is None or values is None:
            return ""
        ours = statistic in self.tolerance_bands
        return f"paper: \"{quote}\"" + (f"; ±{ABOUT_TOLERANCE:g} is our tolerance" if ours else "")


#: The blocks the paper calls early, middle (where it finds the minimum) and late.
EARLY, MIDDLE, LATE = (0, 1), (2, 3, 4), (9, 10, 11)

#: Our tolerance, in EED points, around a value the paper states as "about x": the band
#: (x - 1, x + 1). It is not the paper's: the paper gives no interval.
ABOUT_TOLERANCE = 1.0


def about(value: float) -> tuple[float, float]:
    """Our band around a value the paper gives as "about ``value``" (:data:`ABOUT_TOLERANCE`)."""
    return (value - ABOUT_TOLERANCE, value + ABOUT_TOLERANCE)


#: What the paper reports for each dataset it studied.
REPORTED: dict[str, ReportedProfile] = {
    # "about 58-60 %" early, "about 23 %" minimum in L2-L4, "rises again" late (no number).
    "cifar100": ReportedProfile(EARLY, (58.0, 60.0), MIDDLE, about(23.0), LATE, None,
                                quotes={"early": "about 58-60 %", "minimum": "about 23 %"},
                                tolerance_bands=("minimum",)),
    # "about 58-60 %" early, "about 30.5 %" minimum, "up to about 92.5 %" late: the highest late
    # block, about 92.5 (the paper states no lower value for the late blocks).
    "tiny-imagenet": ReportedProfile(EARLY, (58.0, 60.0), MIDDLE, about(30.5), LATE, about(92.5),
                                     late_statistic="max",
                                     quotes={"early": "about 58-60 %", "minimum": "about 30.5 %",
                                             "late": "up to about 92.5 %"},
                                     tolerance_bands=("minimum", "late")),
    # "flat, above 90 % at every depth".
    "uc-merced": ReportedProfile(EARLY, None, MIDDLE, None, LATE, None, flat_above=90.0,
                                 quotes={"flat": "above 90 % at every depth"}),
}


def late_value(reported: ReportedProfile, eed_percent) -> float:
    """The late blocks' statistic the paper reports (their mean, or their highest block)."""
    values = [eed_percent[b] for b in reported.late_blocks]
    return max(values) if reported.late_statistic == "max" else sum(values) / len(values)


def late_label(reported: ReportedProfile) -> str:
    """How :func:`late_value` summarises the late blocks, e.g. "highest of L9-L11"."""
    blocks = f"L{reported.late_blocks[0]}-L{reported.late_blocks[-1]}"
    return f"highest of {blocks}" if reported.late_statistic == "max" else f"mean of {blocks}"

PAPER_DATASETS = tuple(REPORTED)
# Beyond the paper: every other dataset of the registry (texture-centric real data, and the
# synthetic worlds with their knob).
EXTRA_DATASETS = tuple(name for name in DATASETS if name not in PAPER_DATASETS)
