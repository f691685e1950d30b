"""Runs that differ in their seed, side by side: each statistic with its interval."""
import dataclasses

import pytest
from profile_records import HUMP, INIT, make_record, seeded

from ib_tutorial.measure.shape import ProfileShape
from ib_tutorial.book.claims import LearningSummary
from ib_tutorial.book.claims import SeedSpread


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
        LearningSummary.of(plain)
    unsized = dataclasses.replace(seeded(1), knn=[{"epoch": 0, "top1": 20.0}, {"epoch": 15, "top1": 40.0}])
    with pytest.raises(ValueError, match="how many images"):
        LearningSummary.of(unsized)
