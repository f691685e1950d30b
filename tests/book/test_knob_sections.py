"""The knob chapter's and lab notes' sections: a table, figures, glued values and the
statements their paragraphs make, from runs whose values are known and from the committed
results the book quotes."""
import dataclasses
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest
from knob_runs import write_row
from profile_records import bundle_run, make_record

from ib_tutorial.book.knob import dino_section, seeds_section, supervised_section, u_section
from ib_tutorial.book.knob_rows import rows_table, step_notes
from ib_tutorial.book.tables import ResultSection
from ib_tutorial.book.bundles import Bundle
from ib_tutorial.book.knob import DINO_HUE_SWEEP, DINO_TIER_ENDS, recipe_sweep, widest_sweep
from ib_tutorial.book.knob_rows import read_row
from ib_tutorial.book.bundles import stored_entry

RISING = [10.0 + 2 * block for block in range(12)]
U_AT_L3 = [30.0, 26.0, 22.0, 20.0, 23.0, 26.0, 28.0, 30.0, 32.0, 34.0, 36.0, 38.0]


def sweep_with(last_profiles):
    """A supervised sweep whose k-NN rises 20 -> 25 % at every weight, each weight's last profile
    given in effective directions of a width of 192 (its initialisation flat at 10)."""
    runs = {}
    for weight, n_eff in last_profiles.items():
        spec = f"synthetic-mix:texture_weight={weight:g}@objective=supervised,epochs=2"
        run = bundle_run(spec, width=192)
        config = dataclasses.replace(run.config, dataset="synthetic-mix", dataset_options={"texture_weight": weight})
        runs[spec] = dataclasses.replace(run, config=config, profiles=[make_record(0, 192, [10.0] * 12), make_record(2, 192, n_eff)])
    return widest_sweep("supervised", [Bundle("knob", Path("knob"), "laptop", runs)])


def test_a_section_names_every_statement_the_data_no_longer_supports():
    section = ResultSection("| a |", values={"x": 1.5}, statements={"it rose": True, "it fell": False, "it stayed": False})
    assert section.failed() == ["it fell", "it stayed"]
    with pytest.raises(AssertionError, match="no longer say: it fell; it stayed. Rewrite"):
        section.check()
    glued = []
    ResultSection("| a |", values={"x": 1.5}, statements={"it rose": True}).show(lambda name, value: glued.append((name, value)))
    assert glued == [("x", 1.5)]


def test_the_u_section_finds_the_one_u_and_counts_the_claims_that_held():
    section = u_section(sweep_with({0: RISING, 0.5: U_AT_L3, 1: RISING}))
    assert section.failed() == []
    assert section.values["knob_u_weight"] == "0.5" and section.values["knob_u_lowest"] == "L3"
    assert section.values["knob_u_dip"] == "+6.33"  # the early blocks' mean 28 (L0-L1) less the middle's 21.67 (L2-L4)
    assert section.values["knob_held"] == 3 and section.values["knob_tests"] == 10
    assert section.table.count("| w = 0.5, epoch 2 |") == 3 and len(section.figures) == 1
    without = u_section(sweep_with({0: RISING, 1: RISING}))
    assert without.failed() == ["one network ends as a U"]


def test_absent_results_give_the_command_that_makes_them():
    for section in (supervised_section(None), u_section(None), seeds_section(None), dino_section(None, None)):
        assert section.table.startswith("No committed") and "ib-tutorial reproduce --preset laptop" in section.table
        assert section.statements == {} and section.figures == ()


def test_every_row_is_one_line_of_its_table(tmp_path):
    reference = write_row(tmp_path / "hue", [(0, 20.0), (6, 15.0), (8, 12.0)], [0.5] * 16)
    write_row(tmp_path / "o1", [(0, 20.0), (6, 30.0)], [0.0] * 12, color_strength=2.5)
    rows = {"the hue recipe": read_row(tmp_path / "hue", reference), "o1": read_row(tmp_path / "o1", reference)}
    lines = rows_table(rows).splitlines()
    assert len(lines) == 4 and lines[0].startswith("| run | changed (against the hue recipe) | steps |")
    assert lines[2].startswith("| the hue recipe | (the hue recipe) | 800 | 20.0 -> 12.0 [")
    assert lines[3].startswith("| o1 | color_strength=2.5 | 600 | 20.0 -> 30.0 [") and lines[3].endswith("| 30.0, 0.00 | no |")


@pytest.fixture(scope="module")
def committed():
    if not stored_entry("knob-dino").exists():
        pytest.skip("no committed results next to this package")
    folders = [stored_entry("knob-supervised"), stored_entry("knob-dino")]
    return widest_sweep("supervised", folders), recipe_sweep(DINO_TIER_ENDS, folders), recipe_sweep(DINO_HUE_SWEEP, folders)


def test_the_chapter_quotes_the_u_and_the_texture_end_that_learned(committed):
    supervised, tier, hue = committed
    u, dino = u_section(supervised), dino_section(tier, hue)
    assert u.failed() == [] and dino.failed() == []
    assert (u.values["knob_u_weight"], u.values["knob_tests"], u.values["knob_held"]) == ("0.05", 19, 3)
    assert (u.values["knob_u_lowest"], u.values["knob_u_dip"], u.values["knob_u_rise"]) == ("L2", "+1.55", "+9.2")
    assert dino.values["knob_dino_texture_seed0"] == "25.2 -> 68.4" and dino.values["knob_dino_texture_seed1"] == "27.3 -> 61.4"
    assert dino.table.count("| yes |") == 2  # the texture end's two seeds, and no other DINO run


def test_the_lab_notes_rows_still_say_what_their_paragraph_says(committed):
    section = step_notes(committed[2], stored_entry("knob-dino-rows"))
    assert section.failed() == [] and section.table.count("\n| ") == 13  # the hue recipe, the colour row, 5 o and 5 g rows
