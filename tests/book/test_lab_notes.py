"""The lab notes' tables, findings and figures, and the DINO chapter's compute figure and
values, from run directories written by hand with known values."""
import dataclasses
import json
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from ib_tutorial.presets import get_preset
from ib_tutorial.book import dino_chapter, lab_notes
from ib_tutorial.book.plots import CAPTION_KEY
from ib_tutorial.book.bundles import stored_entry
from ib_tutorial.book.recipes import recipe_settings
from ib_tutorial.training.run_config import RunConfig
from ib_tutorial.training.runs import RunDirectory

STEPS_PER_EPOCH = 4


def write_run(folder, top1, information=1.0, n_eval=1000, dataset="tiny-imagenet", **overrides):
    """A DINO run of the `ci` preset (batch 16, 4 steps an epoch) evaluated after each epoch at
    the accuracies ``top1`` (epoch 0 first), logging every step with a constant teacher
    information (or one value a step, a list)."""
    folder.mkdir(parents=True)
    options = {"folder": "dtd"} if dataset == "dtd" else {}
    config = RunConfig.resolve(dataset, get_preset("ci"), dict(out_dim=64, log_every=1, threads=1, **overrides), options)
    config = dataclasses.replace(config, steps_per_epoch=STEPS_PER_EPOCH)
    (folder / "config.json").write_text(json.dumps(config.to_dict()))
    steps = STEPS_PER_EPOCH * (len(top1) - 1)
    info = information if isinstance(information, list) else [information] * steps
    records = [{"kind": "knn", "epoch": e, "step": e * STEPS_PER_EPOCH, "top1": value, "top1_mean": value + 2,
                "n_eval": n_eval, "wall_s": 60.0 * e} for e, value in enumerate(top1)]
    records += [{"kind": "train", "epoch": (s - 1) // STEPS_PER_EPOCH, "step": s, "teacher_entropy": 3.0,
                 "teacher_information": info[s - 1], "images_per_s": 32.0} for s in range(1, steps + 1)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return config


@pytest.fixture
def rows(tmp_path):
    base = write_run(tmp_path / "runs" / "base", [20.0, 21.0, 22.0])
    write_run(tmp_path / "runs" / "faster", [20.0, 25.0, 30.0], lr=0.05)
    write_run(tmp_path / "runs" / "collapsed", [20.0, 25.0, 30.0], information=0.01, lr=0.05)
    reference = recipe_settings(base.train, base.view)
    return lab_notes.note_rows([tmp_path / "runs", tmp_path / "absent"], reference)


def test_a_table_has_one_line_a_run_with_its_interval_and_the_rule(rows):
    table = lab_notes.notes_table(rows).splitlines()
    assert len(table) == 2 + 3
    base, collapsed, faster = table[2:]  # by name
    assert "| base | (the reference) |" in base
    # 30 % of 1,000 images: its 95 % Wilson interval is [27.2, 32.9]; +10 points past the threshold.
    assert "20.0 -> 30.0 [27.2, 32.9]" in faster and "lr=0.05" in faster and faster.endswith("| yes (+10.0 / 2.9) |")
    # The same gain with a collapsed teacher is not learned.
    assert collapsed.startswith("| collapsed") and collapsed.endswith("| no (+10.0 / 2.9) |")
    assert base.endswith("| no (+2.0 / 2.6) |")


def test_a_row_read_at_a_step_stops_there(tmp_path):
    write_run(tmp_path / "run", [20.0, 21.0, 30.0], information=[1.0] * 4 + [2.0] * 4)
    row = lab_notes.note_row(tmp_path / "run", {}, until_step=STEPS_PER_EPOCH)
    assert row.steps == STEPS_PER_EPOCH and row.recipe.knn_cls == [20.0, 21.0] and row.information() == 1.0
    assert lab_notes.note_row(tmp_path / "run", {}).information(5) == 2.0


def test_the_spread_of_rows_is_compared_with_two_errors_of_a_difference(rows):
    spread, two_se = lab_notes.rows_spread(rows)
    assert spread == pytest.approx(8.0)
    errors = [100 * math.sqrt(p * (1 - p) / 1000) for p in (0.22, 0.30)]
    assert two_se == pytest.approx(2 * math.hypot(*errors))


def test_the_long_runs_findings_name_the_best_and_project_its_pace(rows):
    found = lab_notes.long_findings([row for row in rows if row.name != "collapsed"], cores_hours=1.0)
    assert found["long_best"].raw == "faster" and found["long_best_gain"].text == "+10.0"
    # 32 images/s for an hour in batches of 16 is 7,200 steps; +10 points in 8 steps, at that pace.
    assert found["long_cpu_steps"].raw == 7200 and found["long_projected"].raw == pytest.approx(10.0 * 7200 / 8)
    assert found["long_learned"].text == "`faster`"


def test_line_styles_never_repeat_and_say_when_they_run_out():
    styles = lab_notes.line_styles(25)
    assert len({(s["color"], s["linestyle"]) for s in styles}) == 25
    with pytest.raises(ValueError, match="at most 30"):
        lab_notes.line_styles(31)


def test_the_teacher_figure_draws_every_run_apart_and_carries_its_caption(rows):
    curves = {f"run {i}": row.train for i in range(4) for row in rows[:1]} | {row.name: row.train for row in rows}
    fig = lab_notes.plot_teacher_information(curves, "One sentence.", "where it came from", until_step=4,
                                             marks={"released": 2})
    lines = [line for line in fig.axes[0].get_lines() if not line.get_label().startswith("released")]
    assert len(lines) == len(curves) and all(max(line.get_xdata()) <= 4 for line in lines)
    assert len({(line.get_color(), line.get_linestyle()) for line in lines}) == len(lines)
    assert fig.axes[0].get_ylabel() == "teacher information (nats)" and fig._suptitle.get_text() == "One sentence."
    png = fig.canvas.print_png.keywords["metadata"]
    assert png[CAPTION_KEY] == "where it came from"
    plt.close(fig)


def test_student_tokens_count_every_view_and_its_class_token():
    assert lab_notes.student_tokens(32, 32, 4, 8) == 650  # the public curve: ten crops of 8 x 8 patches + 1
    assert lab_notes.student_tokens(32, 16, 8, 4) == 54  # the laptop tier: 2 x 17 + 4 x 5
    point = lab_notes.PUBLISHED[0]
    assert point.compute == 10 * 50_000 * 650 and point.gain_bound == pytest.approx(37.0)


def test_a_run_becomes_a_curve_of_gain_against_compute(tmp_path):
    write_run(tmp_path / "runs" / "a", [20.0, 23.0, 26.0])
    (curve,) = lab_notes.compute_curves([("tier", tmp_path / "runs"), ("none", tmp_path / "absent")])
    config = RunDirectory(tmp_path / "runs" / "a").read_config()
    tokens = lab_notes.student_tokens(config.view.img_size, config.view.local_crop_size, config.view.patch_size,
                                         config.train.local_crops_number)
    assert curve.label == "tier: tiny-imagenet, 2 epochs, seed 0" and curve.tokens_per_image == tokens
    assert curve.images_seen == [0, 64, 128] and curve.gains == [0.0, 3.0, 6.0] and curve.steps == 8
    assert curve.learned and curve.compute[-1] == 128 * tokens


def test_the_compute_figure_fills_the_end_of_runs_that_learned(tmp_path):
    write_run(tmp_path / "runs" / "a", [20.0, 23.0, 26.0])
    write_run(tmp_path / "runs" / "b", [20.0, 20.5, 20.0])
    curves = lab_notes.compute_curves([("tier", tmp_path / "runs")])
    fig = dino_chapter.plot_compute(curves, lab_notes.PUBLISHED, "provenance")
    ends = [line for line in fig.axes[0].get_lines() if line.get_markersize() == 8]
    assert [line.get_markerfacecolor() == "white" for line in ends] == [False, True]
    assert fig.axes[0].get_xscale() == "log" and "tokens" in fig.axes[0].get_xlabel()
    plt.close(fig)


def test_the_needs_values_state_the_compute_ratio_and_the_tiers_gains(rows, tmp_path):
    write_run(tmp_path / "dtd" / "dtd", [36.0, 38.0, 40.0], n_eval=144, dataset="dtd")
    tier = [row for row in rows if row.name == "faster"] + lab_notes.note_rows([tmp_path / "dtd"], {})
    found = dino_chapter.needs_values(lab_notes.PUBLISHED[0], get_preset("laptop"), tier, rows)
    # The laptop tier: 48 epochs of 78 batches of 64 images, 54 tokens each.
    assert found["tier_images"].text == "239,616" and found["tier_tokens"].text == "54"
    assert found["ratio"].raw == pytest.approx(325_000_000 / (239_616 * 54)) and found["ratio_words"].text == "twenty-fifth"
    assert found["tier_gains"].text == "+10.0" and found["tier_learned"].raw == 1
    assert found["other_images"].text == "144" and found["other_learned"].raw == 0


def test_the_gpu_plan_values_count_its_least_run(rows, tmp_path):
    write_run(tmp_path / "gpu" / "run", [23.0, 19.0])
    (gpu,) = lab_notes.compute_curves([("GPU", tmp_path / "gpu")])
    found = dino_chapter.gpu_plan_values(get_preset("paper"), 128, 4000, lab_notes.PUBLISHED[0], 1e7, gpu)
    # ViT-S/8 at 64 px with 8 local crops of 32 px: 2 x 65 + 8 x 17 tokens.
    assert found["gpu_tokens"].raw == 266 and found["gpu_images"].text == "512,000"
    assert found["gpu_times_laptop"].raw == pytest.approx(512_000 * 266 / 1e7)
    assert found["gpu_share_published"].text == "42 %" and found["gpu_run_gain"].text == "-4.0"


def test_the_toy_teacher_shows_both_collapses():
    rows = {(centred, temperature): (per_image, of_mean)
            for centred, temperature, per_image, of_mean in dino_chapter.centring_sharpening((0.02, 1.0), k=64)}
    log_k = math.log(64)
    assert rows[(False, 0.02)][1] < 0.2 * log_k  # one output wins for every image: one-hot collapse
    assert rows[(True, 1.0)][0] > 0.99 * log_k  # every image near uniform: uniform collapse
    per_image, of_mean = rows[(True, 0.02)]
    assert per_image < 0.6 * log_k < of_mean  # sharp per image, spread over the outputs


def test_the_preset_table_lists_what_differs_from_paper():
    table, differing = dino_chapter.preset_differences()
    assert {"arch", "out_dim", "epochs"} <= set(differing) and "lr" in table
    assert table.splitlines()[-1].startswith("| tiny-imagenet input / patch |")


def test_the_toy_table_has_a_row_per_teacher_and_temperature():
    table = dino_chapter.centring_table((0.02, 1.0), k=64).splitlines()
    assert len(table) == 2 + 4 and f"log K = {math.log(64):.2f}" in table[0]
    assert table[2].startswith("| not centred | 0.02 |") and table[-1].startswith("| centred | 1 |")


def test_the_profile_change_names_the_block_that_moved_most():
    from types import SimpleNamespace
    before, after = SimpleNamespace(eed_percent=[10.0, 20.0, 30.0]), SimpleNamespace(eed_percent=[11.0, 16.0, 30.0])
    text = dino_chapter.profile_change(before, after)
    assert "at most 4.00 EED points, at block L1 (20.00 % -> 16.00 %)" in text and "by -1.00 points" in text


def notes_of(rows, **investigations):
    """The lab notes with ``rows`` in every investigation not given."""
    parts = {"former": rows, "unfloored": rows, "floors": rows, "long": rows, "tier": {16: rows, 48: rows}}
    return lab_notes.DinoNotes(**(parts | investigations))


def test_without_committed_runs_a_section_gives_the_command_that_makes_them():
    section = lab_notes.unfloored_notes(None)
    assert lab_notes.TIER_COMMAND in section.table and not section.values and lab_notes.tier_figure(None) is None


def test_a_section_glues_its_findings_and_names_the_statements_the_runs_no_longer_support(rows):
    section = lab_notes.unfloored_notes(notes_of(rows))
    assert section.table == lab_notes.notes_table(rows) and section.values["notes_unfloored_learned_names"] == "`faster`"
    # `faster` learned, but the longest row (all ran as long: the first, `base`) did not.
    assert section.failed() == ["one run learned, the longest"]
    former = lab_notes.former_notes(notes_of(rows))
    assert "every run ended below its initialisation" in former.failed()
    long = lab_notes.long_notes(notes_of(rows))
    assert long.values["notes_long_best"] == "`collapsed`" and "only the best run learned" in long.failed()


@pytest.mark.skipif(not stored_entry("dino-tier-48").exists(), reason="the committed results are not next to this package")
def test_the_committed_runs_still_say_what_every_paragraph_of_the_notes_says():
    notes = lab_notes.committed_notes()
    for section in (lab_notes.former_notes, lab_notes.unfloored_notes, lab_notes.floor_notes, lab_notes.long_notes,
                    lab_notes.tier_notes, lab_notes.summary_notes):
        assert section(notes).failed() == [], section.__name__
    assert lab_notes.summary_notes(notes).values["notes_learned_runs"] == "4"
