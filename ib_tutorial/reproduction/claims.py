"""The paper's claims about the shape of an EED% profile, tested on measured profiles.

The paper makes four claims about a ViT that has learned its data:

1. **mid-depth minimum**: the profile is lowest in the middle blocks (L2-L4);
2. **it deepens over training**: the middle blocks fall further below the early ones as
   the network learns;
3. **deeper for object data than for texture data**: object-centric data sets compress
   more in the middle blocks than texture-centric ones, which stay flat;
4. **late re-expansion**: the late blocks (L9-L11) rise above the middle ones again.

Claim 3 is also tested along ``synthetic-mix``'s texture knob (:func:`deeper_along_knob`),
where the data change from objects to textures and nothing else does.

Each is reduced to the block means of :mod:`~ib_tutorial.reproduction.paper` (early
L0-L1, middle L2-L4, late L9-L11) and holds when its difference exceeds ``margin``
percentage points of EED (default :data:`MARGIN`), so that a profile flat to within
measurement noise does not count as having a shape. The numbers come back with every
verdict, so a reader can apply a stricter or looser margin.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .knob import knob_trend
from .paper import EARLY, LATE, MIDDLE

#: Percentage points of EED a difference must exceed to count: a choice (the paper gives
#: none), small beside the paper's own gaps (about 28 points from early to middle blocks).
MARGIN = 1.0


def _mean(values: Sequence[float], blocks: tuple[int, ...]) -> float:
    return sum(values[block] for block in blocks) / len(blocks)


@dataclass(frozen=True)
class ProfileShape:
    """The block means of one saved epoch's EED% profile.

    Attributes:
        epoch: the saved epoch (0: the random initialisation).
        early, middle, late: mean EED% over :data:`~ib_tutorial.reproduction.paper.EARLY`,
            :data:`~ib_tutorial.reproduction.paper.MIDDLE` and :data:`~ib_tutorial.reproduction.paper.LATE`.
        lowest_block: the block with the lowest EED%.
        lowest: its EED%.
    """

    epoch: int
    early: float
    middle: float
    late: float
    lowest_block: int
    lowest: float

    @property
    def dip(self) -> float:
        """Points the middle blocks sit below the early ones (negative: above)."""
        return self.early - self.middle

    @property
    def reexpansion(self) -> float:
        """Points the late blocks sit above the middle ones (negative: below)."""
        return self.late - self.middle


def profile_shape(record: dict) -> ProfileShape:
    """The :class:`ProfileShape` of a profile record (``profiles/<epoch>.json``)."""
    eed = record["profile"]["eed_percent"]
    lowest_block = min(range(len(eed)), key=eed.__getitem__)
    return ProfileShape(record["epoch"] or 0, _mean(eed, EARLY), _mean(eed, MIDDLE), _mean(eed, LATE),
                        lowest_block, eed[lowest_block])


@dataclass(frozen=True)
class ClaimTest:
    """One claim tested on measured profiles.

    Attributes:
        claim: which (``"mid-depth minimum"``, ``"deepens over training"``,
            ``"deeper for object data"``, ``"late re-expansion"``).
        holds: whether the difference exceeds the margin (and, for the minimum, the lowest
            block is a middle one).
        difference: the difference tested, in points of EED.
        margin: the margin it was tested against.
    """

    claim: str
    holds: bool
    difference: float
    margin: float


def mid_depth_minimum(shape: ProfileShape, margin: float = MARGIN) -> ClaimTest:
    """The lowest block is a middle one, and the middle mean lies more than ``margin``
    below both the early and the late mean; ``difference`` is the smaller of the two gaps."""
    gap = min(shape.dip, shape.reexpansion)
    return ClaimTest("mid-depth minimum", shape.lowest_block in MIDDLE and gap > margin, gap, margin)


def deepens(first: ProfileShape, last: ProfileShape, margin: float = MARGIN) -> ClaimTest:
    """The dip (early minus middle) grew by more than ``margin`` from ``first`` to ``last``."""
    growth = last.dip - first.dip
    return ClaimTest("deepens over training", growth > margin, growth, margin)


def deeper_for_objects(objects: ProfileShape, textures: ProfileShape, margin: float = MARGIN) -> ClaimTest:
    """The object data's dip exceeds the texture data's by more than ``margin``."""
    difference = objects.dip - textures.dip
    return ClaimTest("deeper for object data", difference > margin, difference, margin)


def late_reexpansion(shape: ProfileShape, margin: float = MARGIN) -> ClaimTest:
    """The late mean lies more than ``margin`` above the middle mean."""
    return ClaimTest("late re-expansion", shape.reexpansion > margin, shape.reexpansion, margin)


def deeper_along_knob(weights: Sequence[float], shapes: Sequence[ProfileShape], margin: float = MARGIN) -> ClaimTest:
    """Claim 3 along ``synthetic-mix``'s knob (:mod:`~ib_tutorial.reproduction.knob`): the
    dip's least-squares line over ``weights`` falls by more than ``margin`` from the
    objects' end to the textures' end; ``difference`` is that fall."""
    fall = -knob_trend(weights, [shape.dip for shape in shapes]).change
    return ClaimTest("deeper for object data along the knob", fall > margin, fall, margin)
