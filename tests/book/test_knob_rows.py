"""The knob's DINO rows read from run directories written by hand with known values, and the
committed rows split by their world."""
import math

import pytest
from knob_runs import write_row

from ib_tutorial.book.knob import DINO_HUE_SWEEP, recipe_sweep
from ib_tutorial.book.knob_rows import ROWS_AT, folder_rows, object_end_rows, read_row, rows_named
from ib_tutorial.book.bundles import stored_entry


def test_a_row_reads_its_changes_steps_interval_and_teacher(tmp_path):
    reference = write_row(tmp_path / "reference", [(0, 20.0), (8, 12.0)], [0.5] * 16)
    # The k-NN rises ten points while the teacher collapses: the rule's first half passes, its second does not.
    information = [0.8, 0.3, 0.04] + [0.0] * 17
    write_row(tmp_path / "o1-colour", [(0, 20.0), (4, 28.0), (7, 30.0), (10, 30.0)], information,
              color_strength=2.5, local_crops_number=0, local_crop_size=8)
    row = read_row(tmp_path / "o1-colour", reference)
    assert row.name == "o1-colour" and row.steps == 1000
    assert row.changes == {"color_strength": 2.5, "local_crops_number": 0}  # no local crops: their size is moot
    assert row.end.estimate == 30.0 and row.end.low == pytest.approx(27.6, abs=0.1) and row.end.high == pytest.approx(32.5, abs=0.1)
    assert row.early.epochs == [0, 4] and row.early.knn_cls[-1] == 28.0  # read again at step ROWS_AT
    assert ROWS_AT // 100 == 6 and row.early.teacher_information == 0.0  # the last tenth of steps 50-600: step 600
    assert row.information_at(0) == 0.8 and row.information_at(101) == 0.04
    assert row.lowest_information() == 0.0 and row.lowest_information(until=100) == 0.3
    assert row.learned.knn.learned_beyond_noise and not row.learned.learned
    assert row.learned.teacher_floor == pytest.approx(0.05 * math.log(64)) and row.factors is None


def test_rows_are_named_by_their_letter_and_number():
    rows = dict.fromkeys(["the hue recipe", "t1-tone", "o2-colour", "g1-grey", "tokens", "t2-half"])
    assert list(rows_named(rows, ("t",))) == ["t1-tone", "t2-half"]
    assert list(rows_named(rows, ("o", "g"))) == ["o2-colour", "g1-grey"]


@pytest.fixture(scope="module")
def hue_sweep():
    if not stored_entry("knob-dino").exists():
        pytest.skip("no committed results next to this package")
    return recipe_sweep(DINO_HUE_SWEEP, [stored_entry("knob-dino")])


def test_the_committed_rows_are_read_against_the_hue_recipe_and_split_by_world(hue_sweep):
    own = object_end_rows(hue_sweep)
    assert list(own) == ["the hue recipe", "row 1", "row 2", "row 3"] and own["the hue recipe"].changes == {}
    same = folder_rows(stored_entry("knob-dino-rows"), hue_sweep)
    grey = folder_rows(stored_entry("knob-dino-rows"), hue_sweep, same_world=False)
    assert list(grey) == ["p1-grey-palette", "p2-grey-palette-whole"]
    assert len(same) == 16 and all(name[0] in "ogt" for name in same)
    assert same["t6-tone-curves-no-decay"].changes == {"tone_curve": 1.0, "weight_decay": 0.0, "weight_decay_end": 0.0}
