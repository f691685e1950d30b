"""What training did: changes from the random initialisation, with paired intervals."""
import pytest
import torch
from profile_records import seeded

from ib_tutorial.measure.bootstrap import BootstrapProfile, wilson_interval
from ib_tutorial.measure.shape import ProfileShape
from ib_tutorial.book.claims import ShapeSummary
from ib_tutorial.book.claims import LearningSummary, block_changes, knn_interval, region_change

DIM, DEPTH = 50, 12


def summary(n_eff, noise, seed=0, epoch=0):
    """A profile whose replicates are ``n_eff`` plus the same per-replicate ``noise`` [R, 1]
    in every block: what one set of resampled images does to every block alike."""
    replicates = torch.tensor([n_eff], dtype=torch.float64) + noise
    return ShapeSummary(epoch, tuple(n_eff), DIM, BootstrapProfile(list(n_eff), replicates, DIM, 0.9, "basic", "tokens", seed))


@pytest.fixture
def noise():
    return torch.randn(200, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def test_a_change_on_the_same_resampled_images_is_exact(noise):
    before = [10.0] * DEPTH
    after = [10.0] * DEPTH
    after[3] = 15.0
    changes = block_changes(summary(before, noise), summary(after, noise, epoch=5))
    assert changes[3].estimate == pytest.approx(10.0)  # 5 directions of 50: 10 EED points
    assert (changes[3].low, changes[3].high) == pytest.approx((10.0, 10.0))
    assert all(c.estimate == 0 and c.low == pytest.approx(0) and c.high == pytest.approx(0)
               for block, c in enumerate(changes) if block != 3)


def test_a_region_change_is_the_change_of_its_mean(noise):
    before, after = [10.0] * DEPTH, [10.0] * DEPTH
    after[2:5] = [16.0, 16.0, 16.0]  # the middle region of 12 blocks: L2-L4
    middle = region_change(summary(before, noise), summary(after, noise), "middle")
    assert middle.estimate == pytest.approx(12.0)
    assert region_change(summary(before, noise), summary(after, noise), "late").estimate == pytest.approx(0.0)
    with pytest.raises(ValueError, match="unknown region 'centre'"):
        region_change(summary(before, noise), summary(after, noise), "centre")


def test_independent_replicates_widen_the_interval(noise):
    other = torch.randn(200, 1, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    change = region_change(summary([10.0] * DEPTH, noise), summary([10.0] * DEPTH, other), "early")
    assert change.high - change.low > 1.0


def test_a_change_needs_both_bootstraps_on_the_same_seed(noise):
    plain = ShapeSummary(0, tuple([10.0] * DEPTH), DIM)
    with pytest.raises(ValueError, match="ib-tutorial profile RUN"):
        block_changes(plain, summary([10.0] * DEPTH, noise))
    with pytest.raises(ValueError, match="same seed"):
        block_changes(summary([10.0] * DEPTH, noise, seed=0), summary([10.0] * DEPTH, noise, seed=1))


def test_knn_interval_is_the_wilson_interval_in_points():
    interval = knn_interval({"top1": 50.0, "n_eval": 200}, level=0.9)
    share = wilson_interval(100, 200, 0.9)
    assert (interval.estimate, interval.low, interval.high) == pytest.approx((50.0, 100 * share.low, 100 * share.high))
    assert 44 < interval.low < 45 and 55 < interval.high < 56
    assert knn_interval({"top1": 50.0}) is None  # runs made before n_eval was recorded


def test_a_summary_reads_the_level_change_and_shape_with_their_intervals():
    run = LearningSummary.of(seeded(3))
    assert run.seed == 3
    assert run.last.shape is ProfileShape.HUMP and run.shape_share == 1.0
    middle = run.level("middle")
    assert middle.estimate == pytest.approx(100 * (50 + 56 + 60) / 3 / 384)  # L2-L4
    assert middle.low < middle.estimate < middle.high
    # The same resampled images at both ends: the change is exact.
    change = run.change("middle")
    assert change.estimate == pytest.approx(100 * ((50 + 56 + 60) / 3 - 10) / 384)
    assert (change.low, change.high) == pytest.approx((change.estimate, change.estimate))
    assert run.middle_dip.estimate < 0  # a hump: its middle lies above an end
    assert run.hump_height.estimate == pytest.approx(64.0 - (48 + 44 + 42) / 3)  # L6 above the late mean (L9-L11)
    assert run.knn_last.low < 40.0 < run.knn_last.high
