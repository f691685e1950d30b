"""What the paper reports, as data, so that figures and tables can be checked against it.

Values are read off the paper's text for converged (100-epoch) DINO ViT-Small runs
(Awadhiya, arXiv 2512.07331). They are approximate ("about"), so each is a range.
Blocks are 0-based: L0 is the first transformer block.
"""
from __future__ import annotations

from dataclasses import dataclass

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
        late_eed: (low, high) EED% in those blocks, or None.
        flat_above: for a profile reported as flat, the EED% every block stays above.
    """

    early_blocks: tuple[int, ...]
    early_eed: tuple[float, float] | None
    middle_blocks: tuple[int, ...]
    minimum_eed: tuple[float, float] | None
    late_blocks: tuple[int, ...]
    late_eed: tuple[float, float] | None
    flat_above: float | None = None


#: The blocks the paper calls early, middle (where it finds the minimum) and late.
EARLY, MIDDLE, LATE = (0, 1), (2, 3, 4), (9, 10, 11)

#: What the paper reports for each dataset it studied.
REPORTED: dict[str, ReportedProfile] = {
    # "about 58-60 %" early, "about 23 %" minimum in L2-L4, "rises again" late (no number).
    "cifar100": ReportedProfile(EARLY, (58.0, 60.0), MIDDLE, (22.0, 24.0), LATE, None),
    # "about 58-60 %" early, "about 30.5 %" minimum, "up to about 92.5 %" late.
    "tiny-imagenet": ReportedProfile(EARLY, (58.0, 60.0), MIDDLE, (29.5, 31.5), LATE, (85.0, 92.5)),
    # "flat, above 90 % at every depth".
    "uc-merced": ReportedProfile(EARLY, None, MIDDLE, None, LATE, None, flat_above=90.0),
}

PAPER_DATASETS = tuple(REPORTED)
# Beyond the paper: every other dataset of the registry (texture-centric real data, and the
# synthetic worlds with their knob).
EXTRA_DATASETS = tuple(name for name in DATASETS if name not in PAPER_DATASETS)
