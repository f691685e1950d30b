"""The paper's claims on profiles whose shape is known by construction."""
import dataclasses

import pytest
import torch
from profile_records import bootstrapped, make_record

from ib_tutorial.measure.shape import ProfileShape, Verdict
from ib_tutorial.book.claims import (
    MARGIN,
    ShapeSummary,
    borrowed_test,
    deepens,
    deeper_for_objects,
    late_reexpansion,
    mid_depth_minimum,
    profile_shape,
)


def summary(n_eff, epoch=10, dim=100):
    return profile_shape(make_record(epoch, dim, n_eff))


# The paper's Tiny ImageNet shape (in directions of a width of 100): 59 early, 30 at L3, 92 late.
PAPER_LIKE = [59, 59, 35, 30, 33, 45, 55, 65, 75, 85, 90, 92]
FLAT = [40.0] * 12
FALLING = [32, 30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10]
# The supervised Tiny ImageNet run's shape: rises from L0 to a maximum at L7, falls to L11.
HUMP = [12.0, 12.5, 13.5, 14.5, 15.5, 16.0, 16.2, 16.3, 15.5, 14.8, 14.2, 13.8]
# A network that collapsed: its last block keeps about one direction.
COLLAPSE = [30, 28, 26, 25, 24, 22, 20, 16, 12, 8, 4, 1.1]


def test_the_summary_names_the_shape_and_reads_eed_from_the_width():
    shape = summary(PAPER_LIKE, dim=200)
    assert shape.shape is ProfileShape.U and shape.lowest_block == 3
    assert shape.early == pytest.approx(29.5) and shape.middle == pytest.approx(98 / 6) and shape.late == pytest.approx(89 / 2)
    assert shape.middle_dip == pytest.approx(59 - 98 / 3) and shape.late_rise == pytest.approx(89 - 98 / 3)
    assert shape.u_depth == shape.middle_dip
    assert [summary(v).shape for v in (FLAT, FALLING, HUMP, COLLAPSE)] == [
        ProfileShape.FLAT, ProfileShape.FALLING, ProfileShape.HUMP, ProfileShape.FALLING]


def test_a_record_without_an_epoch_is_the_initialisation():
    assert summary(FLAT, epoch=None).epoch == 0


@pytest.mark.parametrize("n_eff, verdict", [(PAPER_LIKE, Verdict.HOLDS), (FLAT, Verdict.FAILS), (FALLING, Verdict.FAILS),
                                            (HUMP, Verdict.FAILS), (COLLAPSE, Verdict.FAILS),
                                            # lowest at L3, but only half a direction below either side
                                            ([40.5] * 2 + [40, 39.9, 40] + [40.5] * 7, Verdict.FAILS),
                                            # a dip, but the lowest block is L7
                                            ([50, 50, 30, 30, 30, 40, 40, 20, 40, 45, 45, 45], Verdict.FAILS)])
def test_a_mid_depth_minimum_is_a_u_deeper_than_the_margin(n_eff, verdict):
    assert mid_depth_minimum(summary(n_eff)).verdict is verdict


def test_the_minimums_statistic_is_the_smaller_gap():
    n_eff = [50, 50, 30, 30, 30, 40, 40, 40, 40, 35, 35, 35]  # 20 directions below early, 5 below late
    test = mid_depth_minimum(summary(n_eff))
    assert test.holds and test.difference == pytest.approx(5) and test.interval is None


def test_deepening_compares_the_middle_dip_of_the_first_and_last_epoch():
    start, end = summary(FLAT, epoch=0), summary(PAPER_LIKE)
    assert deepens(start, end).holds and deepens(start, end).difference == pytest.approx(end.middle_dip)
    assert not deepens(end, start).holds
    assert not deepens(start, start).holds
    # A falling profile or a collapse: the middle lies above the late blocks, a negative dip.
    assert not deepens(start, summary(FALLING)).holds and not deepens(start, summary(COLLAPSE)).holds


def test_objects_deeper_than_textures_compares_middle_dips_not_early_minus_middle():
    objects, textures = summary(PAPER_LIKE), summary(FLAT)
    assert deeper_for_objects(objects, textures).holds
    assert not deeper_for_objects(textures, objects).holds
    # Two humps: early minus middle differs by 3 directions, but the dips (-3 and -2.25) do not.
    shallow_hump = [12, 12, 14, 15, 16, 17, 17, 17, 16, 15, 14, 13]
    assert deeper_for_objects(summary(shallow_hump), summary(HUMP)).verdict is Verdict.FAILS


def test_late_reexpansion_needs_a_minimum_in_the_middle_and_the_margin():
    assert late_reexpansion(summary(PAPER_LIKE)).holds
    assert not late_reexpansion(summary(FLAT)).holds
    assert not late_reexpansion(summary([10, 10, 12, 12, 12, 14, 16, 18, 20, 22, 24, 26])).holds  # rising, no fall
    half = [41, 41, 40, 39.9, 40, 40, 40, 40, 40, 40.5, 40.5, 40.5]
    assert not late_reexpansion(summary(half)).holds
    assert late_reexpansion(summary(half), margin=0.25).holds
    assert MARGIN == late_reexpansion(summary(FLAT)).margin == 1.0


def test_a_bootstrap_makes_the_verdict_three_valued():
    u = [12, 12, 10, 10, 10] + [13] * 7  # U-depth 2 directions
    narrow = ShapeSummary(10, tuple(u), 100, bootstrapped(u, 0.5))
    wide = ShapeSummary(10, tuple(u), 100, bootstrapped(u, 4.0))
    assert mid_depth_minimum(narrow).verdict is Verdict.HOLDS and mid_depth_minimum(narrow).interval is not None
    assert mid_depth_minimum(wide).verdict is Verdict.UNDETERMINED


MIDDLE = range(2, 5)


def test_a_borrowed_interval_widens_the_point_by_the_range_the_other_runs_cover():
    u = [12, 12, 10, 10, 10] + [13] * 7  # U-depth 2 directions
    point = mid_depth_minimum(summary(u))
    others = [mid_depth_minimum(ShapeSummary(10, tuple(u), 100, bootstrapped(u, spread, MIDDLE))) for spread in (0.2, 0.3)]
    width = max(o.interval.high for o in others) - min(o.interval.low for o in others)
    assert width == pytest.approx(2 * 0.9 * 0.3, abs=0.01)  # the wider run's 90 % interval
    narrow = borrowed_test(point, others)
    assert narrow.borrowed_from == 2 and narrow.verdict is Verdict.HOLDS
    assert (narrow.interval.low, narrow.interval.high) == pytest.approx((2 - width, 2 + width))
    # Other runs that vary more leave the same point undetermined.
    wide = borrowed_test(point, [mid_depth_minimum(ShapeSummary(10, tuple(u), 100, bootstrapped(u, 1.5, MIDDLE)))])
    assert wide.verdict is Verdict.UNDETERMINED and point.verdict is Verdict.HOLDS


def test_borrowing_needs_the_same_claim_with_intervals_and_a_test_without_one():
    u = [12, 12, 10, 10, 10] + [13] * 7
    point, with_interval = mid_depth_minimum(summary(u)), mid_depth_minimum(ShapeSummary(10, tuple(u), 100, bootstrapped(u, 1)))
    for test, others in [(point, []), (point, [point]), (point, [late_reexpansion(ShapeSummary(10, tuple(u), 100,
                                                                                               bootstrapped(u, 1)))]),
                         (with_interval, [with_interval])]:
        with pytest.raises(ValueError):
            borrowed_test(test, others)


def test_a_dip_whose_lowest_block_leaves_the_middle_in_some_replicates_is_undetermined():
    # A dip of 2 directions whose lowest block is L4 or L5 by a hair: the replicates split,
    # so the minimum's place, not the dip, leaves the claim undetermined.
    u = [12, 12, 10, 10, 9.95, 9.96, 11, 11, 11, 13, 13, 13]
    split = ShapeSummary(10, tuple(u), 100, bootstrapped(u, 0.05))
    test = mid_depth_minimum(split)
    assert test.interval.low > MARGIN and 0.1 < test.middle_minimum_share < 0.9
    assert test.verdict is Verdict.UNDETERMINED
    assert late_reexpansion(split).verdict is Verdict.UNDETERMINED


def test_seeds_give_a_verdict_only_where_every_seed_learned_and_all_agree():
    from ib_tutorial.book.claims import across_seeds
    holds, fails = mid_depth_minimum(summary(PAPER_LIKE)), mid_depth_minimum(summary(FLAT))
    assert across_seeds([holds, holds], [True, True], [0, 1]).verdict is Verdict.HOLDS
    assert across_seeds([fails, fails], [True, True], [0, 1]).verdict is Verdict.FAILS
    disagree = across_seeds([holds, fails], [True, True], [0, 1])
    assert disagree.verdict is Verdict.UNDETERMINED and disagree.reason == "holds on seed 0; fails on seed 1"
    unlearned = across_seeds([holds, holds], [True, False], [0, 1])
    assert unlearned.verdict is Verdict.UNDETERMINED and "seed 1 did not learn" in unlearned.reason
    assert across_seeds([holds, holds], [False, False], [0, 1]).verdict is Verdict.NOT_APPLICABLE
    assert across_seeds([holds, fails], [True, True], [0, 1]).difference == pytest.approx(
        (holds.difference + fails.difference) / 2)
    with pytest.raises(ValueError):
        across_seeds([holds, late_reexpansion(summary(FLAT))], [True, True], [0, 1])


def test_the_change_from_initialisation_is_paired_block_by_block():
    from ib_tutorial.book.claims import change_from_initialisation
    init = [10.0] * 12
    trained = [14, 14, 11, 11, 11, 12, 12, 12, 12, 15, 15, 15]  # the middle gained 1, the ends 4-5
    first = ShapeSummary(0, tuple(init), 100, bootstrapped(init, 0.5))
    last = ShapeSummary(10, tuple(trained), 100, bootstrapped(trained, 0.5))
    change = change_from_initialisation(first, last)
    assert change.n_eff == tuple(b - a for a, b in zip(init, trained)) and change.epoch == 10
    # The same shifts in both replicates cancel: the paired change is exact.
    assert (change.bootstrap.replicates == torch.tensor(change.n_eff, dtype=torch.float64)).all()
    test = mid_depth_minimum(change)
    assert test.difference == pytest.approx(3) and test.verdict is Verdict.HOLDS
    other_seed = dataclasses.replace(first.bootstrap, seed=1)
    with pytest.raises(ValueError, match="not paired"):
        change_from_initialisation(dataclasses.replace(first, bootstrap=other_seed), last)


def test_claims_about_a_u_need_a_u():
    # Two humps whose middles rise unequally: the dips differ by 3 directions, but no U is
    # deeper, and no hump deepens or re-expands.
    objects = [12, 12, 13, 13, 13, 14, 14, 14, 13, 12, 12, 12]  # dip -1
    textures = [12, 12, 16, 16, 16, 17, 17, 17, 16, 12, 12, 12]  # dip -4
    test = deeper_for_objects(summary(objects), summary(textures))
    assert test.difference == pytest.approx(3) and test.verdict is Verdict.FAILS
    assert deepens(summary(textures, epoch=0), summary(objects)).verdict is Verdict.FAILS
