"""The comparison table against the paper, on profiles with known summaries."""
import pytest

from ib_tutorial.report.tables import comparison_markdown
from ib_tutorial.reproduction.comparison import compare_profile


def u_shape(early, minimum, at, late):
    profile = [early, early] + [50.0] * 10
    profile[at] = minimum
    profile[9:] = [late] * 3
    return profile


def by_statistic(rows):
    return {row.statistic.split(" (")[0]: row for row in rows}


def test_a_profile_matching_tiny_imagenet_is_within_every_range():
    rows = by_statistic(compare_profile("tiny-imagenet", u_shape(59.0, 30.5, 3, 92.5)))
    assert rows["early EED%"].verdict == "within"
    assert rows["minimum EED%"].verdict == "within"
    assert rows["block of the minimum"].verdict == "within"
    assert rows["late EED%"].verdict == "within"


def test_tiny_imagenet_late_value_is_the_highest_late_block_within_our_tolerance():
    """The paper: "up to about 92.5 %", so the highest of L9-L11 is compared with 92.5 ± 1 (ours)."""
    profile = u_shape(59.0, 30.5, 3, 60.0)
    profile[9:] = [70.0, 80.0, 92.0]  # mean 80.7, highest 92.0
    late = [row for row in compare_profile("tiny-imagenet", profile) if row.statistic.startswith("late")][0]
    assert late.statistic == "late EED% (highest of L9-L11)" and late.ours == 92.0 and late.verdict == "within"
    assert late.paper_text == '91.5-93.5 % (paper: "up to about 92.5 %"; ±1 is our tolerance)'
    profile[11] = 88.0
    late = [row for row in compare_profile("tiny-imagenet", profile) if row.statistic.startswith("late")][0]
    assert late.verdict == "below" and late.deviation.startswith("-3.5 points")


def test_deviations_are_stated_with_their_size():
    rows = by_statistic(compare_profile("tiny-imagenet", u_shape(40.0, 35.0, 7, 60.0)))
    assert rows["early EED%"].verdict == "below"
    assert rows["early EED%"].deviation.startswith("-18.0 points")
    assert rows["minimum EED%"].verdict == "above"
    assert rows["minimum EED%"].deviation.startswith("+3.5 points")
    assert rows["minimum EED%"].ours_text == "35.0 % at L7"
    assert rows["block of the minimum"].verdict == "differs"
    assert rows["late EED%"].verdict == "below"


def test_cifar_late_blocks_are_judged_qualitatively():
    rows = by_statistic(compare_profile("cifar100", u_shape(59.0, 23.0, 2, 40.0)))
    assert rows["late EED%"].verdict == "qualitative match"
    no_rise = by_statistic(compare_profile("cifar100", [59.0, 59.0] + [50.0 - b for b in range(10)]))
    assert no_rise["late EED%"].verdict == "differs"


def test_uc_merced_flatness():
    flat = by_statistic(compare_profile("uc-merced", [95.0] * 12))
    assert flat["flatness"].verdict == "within"
    dipped = by_statistic(compare_profile("uc-merced", [95.0] * 5 + [70.0] + [95.0] * 6))
    assert dipped["flatness"].verdict == "below"
    assert "L5" in dipped["flatness"].deviation


def test_datasets_beyond_the_paper_are_marked_not_reported():
    rows = compare_profile("synthetic-objects", u_shape(59.0, 30.5, 3, 90.0))
    assert rows and all(row.verdict == "not reported" for row in rows)
    table = comparison_markdown(rows)
    assert table.count("\n") == len(rows) + 2
    assert "synthetic-objects" in table


@pytest.mark.parametrize("dataset", ["cifar100", "tiny-imagenet", "uc-merced"])
def test_every_paper_dataset_has_rows(dataset):
    assert len(compare_profile(dataset, [60.0] * 12)) >= 3
