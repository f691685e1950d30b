"""Runs that differ in their seed, side by side: each statistic with its interval."""
import dataclasses

import pytest
from profile_records import HUMP, INIT, make_record, seeded

from ib_tutorial.measure.shape import ProfileShape
from ib_tutorial.reproduction.seeds import SeedSpread, seed_run


def test_a_seed_run_reads_the_level_change_and_shape_with_their_intervals():
    run = seed_run(seeded(3))
    assert run.seed == 3
    assert run.last.shape is ProfileShape.HUMP and run.shape_share == 1.0
    middle = run.level("middle")
    assert middle.estimate == pytest.approx(100 * (50 + 56 + 60) / 3 / 384)  # L2-L4
    assert middle.low < middle.estimate < middle.high
    # The same resampled images at both ends: the change is exact.
    change = run.change("middle")
    assert change.estimate == pytest.approx(100 * ((50 + 56 + 60) / 3 - 10) / 384)
    assert (change.low, change.high) == pytest.approx((change.estimate, change.estimate))
    assert run.u_depth.estimate == 0.0  # a hump has no U
    assert run.hump_height.estimate == pytest.approx(64.0 - (48 + 44 + 42) / 3)  # L6 above the late mean (L9-L11)
    assert run.knn_last.low < 40.0 < run.knn_last.high


def test_the_spread_is_across_seeds_and_the_widest_interval_within_one():
    lower = [value - 3.84 for value in HUMP]  # 1 EED point lower everywhere
    spread = SeedSpread.of([seeded(2, lower), seeded(0), seeded(1, spread=2.0)])
    assert spread.seeds == [0, 1, 2]
    assert spread.shapes == [ProfileShape.HUMP] * 3
    assert spread.level_spread("middle") == pytest.approx(1.0)
    assert spread.change_spread("late") == pytest.approx(1.0)
    assert spread.widest_level_interval("middle") == pytest.approx(
        spread.runs[1].level("middle").high - spread.runs[1].level("middle").low)
    assert spread.knn_last_spread() == 0.0


def test_a_spread_refuses_one_seed_twice_and_runs_without_a_bootstrap():
    with pytest.raises(ValueError, match="at least two seeds"):
        SeedSpread.of([seeded(0)])
    with pytest.raises(ValueError, match="share a seed"):
        SeedSpread.of([seeded(0), seeded(0)])
    plain = dataclasses.replace(seeded(1), profiles=[make_record(0, 384, INIT), make_record(15, 384, HUMP)])
    with pytest.raises(ValueError, match="ib-tutorial profile RUN"):
        seed_run(plain)
    unsized = dataclasses.replace(seeded(1), knn=[{"epoch": 0, "top1": 20.0}, {"epoch": 15, "top1": 40.0}])
    with pytest.raises(ValueError, match="how many images"):
        seed_run(unsized)
