"""The paper's claims on profiles whose shape is known by construction."""
import pytest

from ib_tutorial.reproduction.claims import (
    MARGIN,
    deepens,
    deeper_for_objects,
    late_reexpansion,
    mid_depth_minimum,
    profile_shape,
)


def record(eed: list[float], epoch: int = 10) -> dict:
    return {"epoch": epoch, "profile": {"eed_percent": eed}}


# The paper's Tiny ImageNet shape: 59 % early, 30 % at L3, back up to 90 % late.
PAPER_LIKE = [59, 59, 35, 30, 33, 45, 55, 65, 75, 85, 90, 92]
FLAT = [40.0] * 12
RISING = [10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32]


def test_the_block_means_follow_the_papers_block_groups():
    shape = profile_shape(record(PAPER_LIKE))
    assert shape.early == 59 and shape.middle == pytest.approx(98 / 3) and shape.late == pytest.approx(89)
    assert (shape.lowest_block, shape.lowest) == (3, 30)
    assert shape.dip == pytest.approx(59 - 98 / 3) and shape.reexpansion == pytest.approx(89 - 98 / 3)


def test_a_record_without_an_epoch_is_the_initialisation():
    assert profile_shape(record(FLAT, epoch=None)).epoch == 0


@pytest.mark.parametrize("eed, holds", [(PAPER_LIKE, True), (FLAT, False), (RISING, False),
                                        # lowest at L3, but only half a point below either side
                                        ([40.5] * 2 + [40, 39.9, 40] + [40.5] * 7, False),
                                        # a dip, but the lowest block is L7
                                        ([50, 50, 30, 30, 30, 40, 40, 20, 40, 45, 45, 45], False)])
def test_a_mid_depth_minimum_needs_the_lowest_block_in_the_middle_and_gaps_above_the_margin(eed, holds):
    assert mid_depth_minimum(profile_shape(record(eed))).holds is holds


def test_the_minimums_difference_is_the_smaller_gap():
    eed = [50, 50, 30, 30, 30, 40, 40, 40, 40, 35, 35, 35]  # 20 points below early, 5 below late
    test = mid_depth_minimum(profile_shape(record(eed)))
    assert test.holds and test.difference == pytest.approx(5)


def test_deepening_compares_the_dip_of_the_first_and_last_epoch():
    start, end = profile_shape(record(FLAT, epoch=0)), profile_shape(record(PAPER_LIKE))
    assert deepens(start, end).holds and deepens(start, end).difference == pytest.approx(end.dip)
    assert not deepens(end, start).holds
    assert not deepens(start, start).holds


def test_objects_deeper_than_textures_compares_their_dips():
    objects, textures = profile_shape(record(PAPER_LIKE)), profile_shape(record(FLAT))
    assert deeper_for_objects(objects, textures).holds
    assert not deeper_for_objects(textures, objects).holds


def test_late_reexpansion_and_its_margin():
    assert late_reexpansion(profile_shape(record(PAPER_LIKE))).holds
    assert not late_reexpansion(profile_shape(record(FLAT))).holds
    half_point = [40, 40, 40, 40, 40, 40, 40, 40, 40, 40.5, 40.5, 40.5]
    assert not late_reexpansion(profile_shape(record(half_point))).holds
    assert late_reexpansion(profile_shape(record(half_point)), margin=0.25).holds
    assert MARGIN == late_reexpansion(profile_shape(record(FLAT))).margin
