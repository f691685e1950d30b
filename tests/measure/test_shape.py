"""The shape rule, U-depth and three-valued verdicts on constructed profiles."""
import pytest

from ib_tutorial.measure.shape import (
    ProfileShape,
    Verdict,
    classify_shape,
    depth_regions,
    hump_height,
    middle_dip,
    near_lowest,
    middle_is_lowest,
    region_means,
    u_depth,
    verdict,
)
from ib_tutorial.book.paper import EARLY, LATE, MIDDLE

# Twelve blocks each (EED%), built to be one shape unambiguously.
PAPER_U = [59, 58, 31, 30, 31, 40, 50, 60, 70, 80, 88, 92]  # the paper's Tiny ImageNet
HUMP = [12.0, 12.5, 13.4, 14.2, 15.0, 15.6, 16.0, 16.3, 15.9, 15.1, 14.4, 13.8]  # supervised Tiny ImageNet
FALLING = [60 - 4 * block for block in range(12)]
RISING = [20 + 5 * block for block in range(12)]
FLAT = [91.0, 91.4, 90.8, 91.2, 91.1, 90.9, 91.3, 91.0, 91.2, 90.8, 91.1, 91.3]  # UC Merced
# Falls with depth and collapses to about one direction (in N_eff, D = 384) in its last block.
COLLAPSE = [230, 222, 119, 115, 119, 100, 80, 60, 40, 20, 5, 1.1]
COLLAPSE_START = [230, 225, 200, 196, 199, 197, 198, 200, 205, 210, 215, 220]


def test_regions_are_the_papers_at_twelve_blocks():
    regions = depth_regions(12)
    assert tuple(regions.early) == EARLY
    assert tuple(regions.middle) == MIDDLE
    assert tuple(regions.late) == LATE
    assert tuple(regions.inside) == tuple(range(2, 9))


@pytest.mark.parametrize("depth", [4, 5, 6, 8, 12, 16, 24, 32])
def test_regions_scale_with_depth(depth):
    regions = depth_regions(depth)
    assert len(regions.early) >= 1 and len(regions.middle) >= 1 and len(regions.late) >= 1
    assert regions.early.stop == regions.middle.start
    assert regions.middle.stop <= regions.late.start
    # The middle covers about a quarter of the depth, the late blocks the last quarter.
    assert abs(len(regions.middle) - depth / 4) <= 1
    assert abs(len(regions.late) - depth / 4) <= 1


def test_too_shallow_a_profile_is_refused():
    with pytest.raises(ValueError, match="at least 4 blocks"):
        depth_regions(3)


@pytest.mark.parametrize("values, shape", [
    (PAPER_U, ProfileShape.U),
    (HUMP, ProfileShape.HUMP),
    (FALLING, ProfileShape.FALLING),
    (RISING, ProfileShape.RISING),
    (FLAT, ProfileShape.FLAT),
    (COLLAPSE, ProfileShape.FALLING),
])
def test_constructed_profiles_get_their_shape(values, shape):
    assert classify_shape(values, tolerance=1.0) == shape


def test_shape_is_a_string():
    assert classify_shape(PAPER_U, 1.0) == "U"
    assert f"{classify_shape(HUMP, 1.0)}" == "hump"


def test_u_depth_is_the_lower_end_minus_the_middle():
    means = region_means(PAPER_U)
    assert (means.early, means.middle, means.late) == pytest.approx((58.5, 92 / 3, 260 / 3))
    assert u_depth(PAPER_U) == pytest.approx(58.5 - 92 / 3)


def test_a_profile_that_only_falls_has_no_u_depth():
    # Its middle lies far below its early blocks (the old "dip"), but its lowest block is late.
    means = region_means(FALLING)
    assert means.early - means.middle >= 10
    assert u_depth(FALLING) == 0.0


def test_a_minimum_outside_the_middle_is_no_u():
    dip_at_six = [60, 60, 58, 57, 56, 45, 30, 45, 56, 58, 60, 60]
    assert u_depth(dip_at_six) == 0.0
    assert classify_shape(dip_at_six, tolerance=1.0) == ProfileShape.IRREGULAR


def test_u_depth_is_never_negative():
    # The lowest block is a middle one, but another middle block lifts the middle's mean above the early one.
    values = [40, 40, 39, 60, 60, 62, 64, 66, 68, 70, 72, 74]
    assert u_depth(values) == 0.0


def test_middle_dip_is_signed_and_ungated():
    assert middle_dip(PAPER_U) == pytest.approx(58.5 - 92 / 3)
    # A falling profile: the late blocks lie lowest, so the middle sits above the lower end.
    means = region_means(FALLING)
    assert middle_dip(FALLING) == pytest.approx(means.late - means.middle) and middle_dip(FALLING) < 0
    # Where U-depth clips to 0 the dip keeps its sign and size.
    values = [40, 40, 39, 60, 60, 62, 64, 66, 68, 70, 72, 74]
    assert middle_dip(values) == pytest.approx(40 - 53)


def test_middle_dip_moves_continuously_where_the_lowest_block_changes():
    # Two profiles that differ by 0.002 directions in L5: the lowest block moves out of the
    # middle, U-depth jumps from 1.5 to 0, the dip moves by nothing.
    before = [12.0, 12.0, 10.5, 10.5, 10.5, 10.501, 11.0, 11.0, 11.0, 12.0, 12.0, 12.0]
    after = [*before[:5], 10.499, *before[6:]]
    assert middle_is_lowest(before) and not middle_is_lowest(after)
    assert u_depth(before) == pytest.approx(1.5) and u_depth(after) == 0.0
    assert middle_dip(before) == middle_dip(after) == pytest.approx(1.5)


def test_hump_height_counts_only_an_inside_maximum():
    assert hump_height(HUMP) == pytest.approx(16.3 - (15.1 + 14.4 + 13.8) / 3)
    assert hump_height(RISING) == 0.0


def test_tolerance_decides_between_flat_and_a_shape():
    assert classify_shape(PAPER_U, tolerance=100) == ProfileShape.FLAT
    shallow_u = [50, 50, 49.5, 49.4, 49.5, 49.8, 49.9, 50, 50, 50, 50, 50]
    assert classify_shape(shallow_u, tolerance=0.1) == ProfileShape.U
    assert classify_shape(shallow_u, tolerance=0.7) == ProfileShape.FLAT
    with pytest.raises(ValueError, match="at least 0"):
        classify_shape(PAPER_U, tolerance=-1)


def test_deepens_does_not_hold_for_a_collapsing_network():
    # The test the claim "the U deepens over training" is built on: the U-depth grows. The
    # early-minus-middle dip grows here (from 28 to 111 directions), but the network collapses
    # rather than forming a U, and the U-depth does not grow.
    assert region_means(COLLAPSE).early - region_means(COLLAPSE).middle > 100
    growth = u_depth(COLLAPSE) - u_depth(COLLAPSE_START)
    assert u_depth(COLLAPSE) == 0.0
    assert verdict(growth, growth, margin=1.0) == Verdict.FAILS


@pytest.mark.parametrize("low, high, expected", [
    (1.5, 3.0, Verdict.HOLDS),
    (-2.0, 0.5, Verdict.FAILS),
    (-2.0, 1.0, Verdict.FAILS),  # all of it at or below the margin
    (0.5, 1.5, Verdict.UNDETERMINED),
    (1.0, 1.5, Verdict.UNDETERMINED),  # the low end on the margin: not shown to exceed it
])
def test_verdict_is_three_valued(low, high, expected):
    assert verdict(low, high, margin=1.0) == expected


def test_verdict_refuses_an_inverted_interval():
    with pytest.raises(ValueError, match="low end"):
        verdict(2.0, 1.0)


def test_near_lowest_names_the_blocks_within_the_tolerance_of_the_minimum():
    values = [9.0, 8.0, 5.0, 5.6, 6.2, 5.0 + 1.0, 7.0]
    assert near_lowest(values) == [3, 5]  # 0.6 and exactly 1.0 above the minimum; 6.2 is not
    assert near_lowest(values, tolerance=0.5) == []
    assert near_lowest([3.0, 3.0, 4.5]) == [1]  # a tie: the first is the lowest, the other is named
