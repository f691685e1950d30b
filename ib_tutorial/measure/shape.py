r"""The shape of a profile over depth, named by one rule, and three-valued verdicts.

A profile is one value per block, :math:`v_0, \dots, v_{L-1}` (:math:`N_\mathrm{eff}` or
EED%). With :math:`b(f) = \lfloor f L + \tfrac12 \rfloor` the block boundary at depth
fraction :math:`f`, the **early** blocks are :math:`[0,\ b(1/6))`, the **middle**
:math:`[b(1/6),\ b(5/12))` and the **late** :math:`[b(3/4),\ L)`: for the paper's
:math:`L = 12`, L0-L1, L2-L4 and L9-L11. :math:`\bar v_E, \bar v_M, \bar v_L` are their
means. The verdicts read one smooth signed statistic, the **middle dip**
:math:`\mathrm{dip} = \min(\bar v_E, \bar v_L) - \bar v_M`, whose bootstrap replicates
spread continuously; where the lowest block lies is reported beside it
(:meth:`~ib_tutorial.measure.bootstrap.BootstrapProfile.middle_minimum_share`).

Naming a shape uses two statistics, both :math:`\ge 0`: the **U-depth**,
:math:`\max(0, \mathrm{dip})` where the lowest block is a middle one (else 0), and the
**hump**, :math:`\max\big(0,\ \max_l v_l - \max(\bar v_E, \bar v_L)\big)` where the highest block
is *inside*, neither early nor late (else 0). Gated and clipped at 0, U-depth names a shape
but is no statistic to put an interval on (its replicates pile up at 0).

:func:`classify_shape` names a profile by the first that applies, with a ``tolerance``
:math:`\tau` in the values' units: ``flat`` (range :math:`\le \tau`), ``U`` (U-depth
:math:`> \tau`), ``hump`` (hump :math:`> \tau`, Ansuini et al. 2019's "hunchback"),
``falling`` or ``rising`` (:math:`|\bar v_E - \bar v_L| > \tau`), else ``irregular``. The
default, :data:`DIRECTIONS`, is one effective direction; for EED% pass :math:`100\,\tau / D`.
"""
from __future__ import annotations

import enum
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

#: Where the early blocks end, the middle ones end and the late ones begin, as fractions of
#: the depth (L2-L4 the middle, L9-L11 the late blocks of 12, as in the paper).
EARLY_END, MIDDLE_END, LATE_START = Fraction(1, 6), Fraction(5, 12), Fraction(3, 4)
#: The default tolerance and margin: one effective direction.
DIRECTIONS = 1.0


class ProfileShape(enum.StrEnum):
    """The name :func:`classify_shape` gives a profile."""

    U = "U"
    HUMP = "hump"
    FALLING = "falling"
    RISING = "rising"
    FLAT = "flat"
    IRREGULAR = "irregular"


class Verdict(enum.StrEnum):
    """Whether a statistic exceeds its margin (:func:`verdict`); for a claim about what a
    network learned, ``not applicable`` where it did not learn (:func:`~ib_tutorial.book.claims.on_learned`)."""

    HOLDS = "holds"
    FAILS = "fails"
    UNDETERMINED = "undetermined"
    NOT_APPLICABLE = "not applicable (did not learn)"


@dataclass(frozen=True)
class DepthRegions:
    """The early, middle and late blocks of a profile of ``depth`` blocks (0-based)."""

    depth: int
    early: range
    middle: range
    late: range

    @property
    def inside(self) -> range:
        """The blocks neither early nor late."""
        return range(self.early.stop, self.late.start)


@functools.cache  # called for every profile a chapter reads, always with a handful of depths
def depth_regions(depth: int) -> DepthRegions:
    """The regions of a profile of ``depth`` (at least 4) blocks, as the module docstring
    defines them; the fractions are exact, so no boundary depends on round-off."""
    if depth < 4:
        raise ValueError(f"a profile needs at least 4 blocks to have early, middle and late ones, got {depth}")
    early_end, middle_end, late_start = (
        math.floor(f * depth + Fraction(1, 2)) for f in (EARLY_END, MIDDLE_END, LATE_START)
    )
    return DepthRegions(depth, range(0, early_end), range(early_end, middle_end), range(late_start, depth))


@dataclass(frozen=True)
class RegionMeans:
    """The means of a profile over its early, middle and late blocks (see :func:`depth_regions`)."""

    early: float
    middle: float
    late: float


def region_means(values: Sequence[float]) -> RegionMeans:
    """:class:`RegionMeans` of one value per block."""
    regions = depth_regions(len(values))
    return RegionMeans(*(sum(values[block] for block in blocks) / len(blocks)
                         for blocks in (regions.early, regions.middle, regions.late)))


def middle_dip(values: Sequence[float]) -> float:
    r"""The middle dip :math:`\min(\bar v_E, \bar v_L) - \bar v_M`, signed, in the units of
    ``values``: the statistic of every verdict on a U."""
    means = region_means(values)
    return min(means.early, means.late) - means.middle


def middle_is_lowest(values: Sequence[float]) -> bool:
    """Whether the lowest block is a middle one (:func:`depth_regions`)."""
    return min(range(len(values)), key=values.__getitem__) in depth_regions(len(values)).middle


def near_lowest(values: Sequence[float], tolerance: float = DIRECTIONS) -> list[int]:
    """The blocks other than the lowest within ``tolerance`` of it: those a sentence naming
    "the lowest block" must name beside it, as a resampling may put any of them lowest."""
    lowest = min(range(len(values)), key=values.__getitem__)
    return [block for block, value in enumerate(values) if block != lowest and value - values[lowest] <= tolerance]


def u_depth(values: Sequence[float]) -> float:
    """U-depth, as the module docstring defines it, in the units of ``values``."""
    return max(0.0, middle_dip(values)) if middle_is_lowest(values) else 0.0


def hump_height(values: Sequence[float]) -> float:
    """The hump, as the module docstring defines it, in the units of ``values``."""
    regions = depth_regions(len(values))
    highest = max(range(len(values)), key=values.__getitem__)
    if highest not in regions.inside:
        return 0.0
    means = region_means(values)
    return max(0.0, values[highest] - max(means.early, means.late))


def classify_shape(values: Sequence[float], tolerance: float = DIRECTIONS) -> ProfileShape:
    """The :class:`ProfileShape` of one value per block, by the rule in the module docstring."""
    if tolerance < 0:
        raise ValueError(f"the tolerance must be at least 0, got {tolerance}")
    if max(values) - min(values) <= tolerance:
        return ProfileShape.FLAT
    if u_depth(values) > tolerance:
        return ProfileShape.U
    if hump_height(values) > tolerance:
        return ProfileShape.HUMP
    means = region_means(values)
    if means.early - means.late > tolerance:
        return ProfileShape.FALLING
    if means.late - means.early > tolerance:
        return ProfileShape.RISING
    return ProfileShape.IRREGULAR


def verdict(interval_low: float, interval_high: float, margin: float = DIRECTIONS) -> Verdict:
    """The verdict on "the statistic exceeds ``margin``" from an interval of it: ``holds``
    when ``interval_low > margin``, ``fails`` when ``interval_high <= margin``, else ``undetermined``."""
    if interval_low > interval_high:
        raise ValueError(f"the interval's low end {interval_low} lies above its high end {interval_high}")
    if interval_low > margin:
        return Verdict.HOLDS
    if interval_high <= margin:
        return Verdict.FAILS
    return Verdict.UNDETERMINED
