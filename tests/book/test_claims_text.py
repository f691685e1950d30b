"""The claims' sentences and table state the computed numbers."""
import pytest
import torch
from profile_records import bootstrapped, make_record, seeded

from ib_tutorial.measure.bootstrap import BootstrapProfile
from ib_tutorial.book.claims import (
    change_markdown,
    claims_markdown,
    claims_summary,
    learning_markdown,
    lowest_text,
    seeds_markdown,
    shape_sentence,
    status_markdown,
)
from ib_tutorial.book.claims import (
    ShapeSummary,
    deepens,
    borrowed_test,
    late_reexpansion,
    mid_depth_minimum,
    on_learned,
    profile_shape,
)
from ib_tutorial.book.claims import SeedSpread


def shape(n_eff, epoch):
    """A profile of a width of 100, so its EED% equals its N_eff."""
    return profile_shape(make_record(epoch, dim=100, n_eff=n_eff))


FLAT = shape([4.0] * 12, 0)
DIP = shape([60, 60, 35, 30, 33, 45, 55, 65, 75, 85, 90, 92], 30)


def test_the_shape_sentence_states_the_shapes_the_block_means_and_the_lowest_block():
    sentence = shape_sentence("run A", FLAT, DIP)
    assert "run A" in sentence and "epoch 0 to epoch 30" in sentence
    assert "from a flat (middle dip +0.0 directions) to a U (middle dip +27.3 directions)" in sentence
    assert "from 4.0 % to 60.0 %" in sentence and "L3 (30.0 %)" in sentence


def test_the_lowest_block_is_named_with_every_block_within_the_margin_of_it():
    assert lowest_text(DIP) == "L3 (30.0 %)"
    near_tie = shape([60, 60, 35, 30, 30.1, 45, 55, 65, 75, 85, 90, 29.2], 30)
    assert lowest_text(near_tie) == "L11 (29.2 %; within 1 effective direction of it: L3 30.0 %, L4 30.1 %)"
    assert "the lowest block is now L11 (29.2 %; within" in shape_sentence("run A", FLAT, near_tie)


def test_the_table_and_summary_give_each_verdict():
    tested = [("run A", mid_depth_minimum(DIP)), ("run B", late_reexpansion(FLAT))]
    table = claims_markdown(tested)
    assert "| mid-depth minimum | run A | +27.3 | none (no bootstrap) | 1 | holds |" in table
    assert "| late re-expansion | run B | +0.0 | none (no bootstrap) | 1 | fails |" in table
    summary = claims_summary(tested)
    assert summary == ("Of 2 tests, 1 held: mid-depth minimum (run A), 1 failed: late re-expansion (run B), and 0 were "
                       "undetermined. 2 of them read a profile measured without a bootstrap, so their verdict rests on "
                       "the point value alone.")


def test_a_network_that_did_not_learn_gets_no_verdict_and_is_counted_apart():
    tested = [("run A", on_learned(mid_depth_minimum(DIP), learned=True)),
              ("run B", on_learned(late_reexpansion(FLAT), learned=False))]
    assert tested[0][1].verdict.value == "holds"
    assert "| late re-expansion | run B | +0.0 | none (no bootstrap) | 1 | not applicable (did not learn) |" \
        in claims_markdown(tested)
    summary = claims_summary(tested)
    assert summary.startswith("Of 1 tests on networks that learned, 1 held: mid-depth minimum (run A), 0 failed")
    assert summary.endswith("The other 1 read networks that did not learn, on which the paper's claims are not "
                            "applicable: late re-expansion (run B).")
    assert claims_summary(tested[1:]) == ("None of the 1 tests reads a network that learned, so the paper's claims "
                                          "are not applicable to any: late re-expansion (run B).")


def test_a_borrowed_interval_is_named_as_one():
    others = [mid_depth_minimum(ShapeSummary(30, tuple(DIP.n_eff), 100, bootstrapped(DIP.n_eff, 0.5, range(2, 5))))]
    tested = [("run A", borrowed_test(mid_depth_minimum(DIP), others))]
    assert "| mid-depth minimum | run A | +27.3 | ≈ +26.4 to +28.2, borrowed from 1 other runs | 1 | holds |" \
        in claims_markdown(tested)
    assert claims_summary(tested).endswith(" 1 of them read an approximate interval borrowed from other runs.")


def test_the_learning_table_states_each_rule_and_its_numbers():
    from ib_tutorial.book.learned import Learned
    from ib_tutorial.book.learned import plateau

    knn = [{"epoch": e, "top1": v} for e, v in [(0, 20), (12, 38), (21, 39.8), (24, 40.0), (30, 40.1)]]
    rising = plateau([{"epoch": 0, "top1": 20}, {"epoch": 4, "top1": 30}])
    # A run that stood at the threshold before it fell back (DINO on DTD's 144 images) says so.
    peaked = plateau([{"epoch": 0, "top1": 36.1, "n_eval": 144}, {"epoch": 16, "top1": 44.4, "n_eval": 144},
                      {"epoch": 40, "top1": 43.2, "n_eval": 144}, {"epoch": 48, "top1": 43.1, "n_eval": 144}])
    table = learning_markdown({"run A": Learned(plateau(knn), None, None), "run B": Learned(rising, None, None),
                               "D": Learned(peaked, 2.63, 0.42), "E": Learned(plateau(knn), 0.1, 0.42)})
    rows = table.splitlines()[2:]
    assert rows[0] == "| run A | +20.1 | 1.0 | - | yes | +0.3 (epoch 21-30) | reached |"
    assert rows[1].endswith("| still learning |")
    assert rows[2] == "| D | +7.0 (best +8.3 at epoch 16) | 8.3 | 2.63 (floor 0.42) | no | -1.3 (epoch 16-48) | reached |"
    assert "| 0.10 (floor 0.42) | no |" in rows[3]  # a collapsed teacher: not learned, whatever the k-NN did

def test_the_change_table_reads_each_region_with_its_paired_interval():
    n_eff = [10.0] * 12
    trained = [10.0, 10.0, 16.0, 16.0, 16.0] + [10.0] * 7  # the middle blocks gain 6 directions of 100
    shifts = torch.tensor([[-1.0], [0.0], [1.0]], dtype=torch.float64)

    def summary(values, epoch):
        replicates = torch.tensor([values], dtype=torch.float64) + shifts
        return ShapeSummary(epoch, tuple(values), 100, BootstrapProfile(values, replicates, 100, 0.9, "basic", "tokens", 0))

    rows = change_markdown(summary(n_eff, 0), summary(trained, 15)).splitlines()
    assert rows[0] == "| blocks | EED% at epoch 0 | EED% at epoch 15 | change (points) [90% interval] |"
    assert rows[2:] == ["| early | 10.0 | 10.0 | +0.0 [+0.0, +0.0] |", "| middle | 10.0 | 16.0 | +6.0 [+6.0, +6.0] |",
                        "| late | 10.0 | 10.0 | +0.0 [+0.0, +0.0] |"]


def test_the_seeds_tables_have_a_row_per_seed_with_every_number_and_its_interval():
    spread = SeedSpread.of([seeded(1, top1=(21.0, 38.0)), seeded(0)])
    learning, levels = seeds_markdown(spread).split("\n\n")[:2]
    rows = [line for line in learning.splitlines()[2:]]
    assert [row.split("|")[1].strip() for row in rows] == ["0", "1"]
    second = spread.runs[1]
    assert f"| {second.knn_first.estimate:.1f} [{second.knn_first.low:.1f}, {second.knn_first.high:.1f}] | 38.0 [" in rows[1]
    assert "hump (100%)" in rows[1]
    middle, change = second.level("middle"), second.change("middle")
    assert (f"{middle.estimate:.1f} [{middle.low:.1f}, {middle.high:.1f}], {change.estimate:+.1f} "
            f"[{change.low:+.1f}, {change.high:+.1f}]") in levels.splitlines()[3]
    assert "90%" in seeds_markdown(spread)


def test_the_status_table_puts_each_verdict_in_its_network_row_and_claim_column():
    tested = [("dip run", mid_depth_minimum(DIP)), ("flat run", mid_depth_minimum(FLAT)),
              ("dip run", deepens(FLAT, DIP)), ("flat run", on_learned(late_reexpansion(FLAT), False))]
    lines = status_markdown(tested).splitlines()
    assert lines[0] == "| network | mid-depth minimum | deepens over training | late re-expansion |"
    assert lines[2] == "| dip run | holds | holds | - |"
    assert lines[3] == "| flat run | fails | - | n/a |"
    assert lines[-1].startswith("n/a: not applicable (did not learn)")
    assert "n/a:" not in status_markdown(tested[:3])


def test_the_status_table_refuses_a_claim_tested_twice_on_one_network():
    with pytest.raises(ValueError, match="tested twice"):
        status_markdown([("run", mid_depth_minimum(DIP)), ("run", mid_depth_minimum(FLAT))])


def test_the_level_spread_table_sets_the_seeds_spread_against_one_seeds_interval():
    from types import SimpleNamespace

    from ib_tutorial.book.claims import level_spread_markdown

    spread = SimpleNamespace(level_spread=lambda region: {"early": 2.0, "middle": 1.0, "late": 0.5}[region],
                             widest_level_interval=lambda region: 0.5)
    table, ratios = level_spread_markdown(spread)
    assert ratios == {"early": 4.0, "middle": 2.0, "late": 1.0}
    assert "| middle | 1.00 | 0.50 | 2.0 |" in table.splitlines()
