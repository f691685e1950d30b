"""A knob sweep as a chapter renders it: table, figures with labelled axes and captions,
sentences and claims, in order, from runs whose values are known."""
import dataclasses
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from IPython.display import Markdown
from PIL import Image
from profile_records import bundle_run

from ib_tutorial.measure.bootstrap import StoredReplicates
from ib_tutorial.book.knob import factors_markdown, render_sweep, sweep_caption, sweep_claims, sweep_table
from ib_tutorial.book.plots import CAPTION_KEY
from ib_tutorial.book.bundles import Bundle
from ib_tutorial.book.knob import widest_sweep


def sweep(weights=(0, 0.5, 1), flat=()):
    """Runs whose k-NN rises 20 -> 25 %, or stays at 20 % for the weights in ``flat``."""
    runs = {}
    for weight in weights:
        spec = f"synthetic-mix:texture_weight={weight:g}@objective=supervised,epochs=2"
        run = bundle_run(spec)
        config = dataclasses.replace(run.config, dataset="synthetic-mix", dataset_options={"texture_weight": weight})
        runs[spec] = dataclasses.replace(run, config=config, summary={"raw_patch_n_eff": 9.0, "raw_patch_dim": 192},
                                         train=[{"images_per_s": 50.0}], pruning=[{"chance": 10.0}])
        if weight in flat:
            runs[spec] = dataclasses.replace(runs[spec], knn=[{"epoch": 0, "top1": 20.0}, {"epoch": 2, "top1": 20.2}])
    return widest_sweep("supervised", [Bundle("knob", Path("knob"), "laptop", runs)])


def test_a_sweep_renders_its_table_figures_and_verdicts_in_order():
    items = render_sweep(sweep())
    kinds = ["figure" if isinstance(item, plt.Figure) else "markdown" for item in items]
    assert kinds == ["markdown", "figure", "markdown", "figure", "markdown"]
    assert items[0].data.startswith("| w | learned | k-NN top-1 %") and items[0].data.count("\n| ") == 4
    assert items[-1].data.startswith("Of 10 tests, ")
    for figure in (item for item in items if isinstance(item, plt.Figure)):
        assert " ".join(figure.get_supxlabel().split()) == sweep_caption(sweep())  # wrapped to the width
        png = io.BytesIO()
        figure.savefig(png, format="png")  # as a notebook displays it: the caption rides in the PNG
        assert Image.open(png).info[CAPTION_KEY] == sweep_caption(sweep())
        for ax in figure.axes:
            assert ax.get_xlabel() and ax.get_ylabel()


def test_the_knn_figure_draws_chance_and_one_curve_per_weight():
    knn = render_sweep(sweep())[1]
    labels = [line.get_label() for line in knn.axes[0].get_lines()]
    assert labels == ["w = 0", "w = 0.5", "w = 1", "chance (10 %)"]


def test_the_caption_names_the_bundle_objective_weights_and_settings():
    caption = sweep_caption(sweep())
    assert caption.startswith("bundle knob: supervised, synthetic-mix at w = 0, 0.5, 1, settings epochs=2,objective=supervised")


def test_the_knob_is_tested_again_without_the_networks_that_did_not_learn():
    flat = sweep((0, 0.25, 0.5, 1), flat=(0,))
    assert flat.learned() == [0.25, 0.5, 1.0]
    sentence = next(item.data for item in render_sweep(flat) if isinstance(item, Markdown) and item.data.startswith("Learned"))
    assert "w = 0.25, w = 0.5, w = 1" in sentence and "Did not: w = 0," in sentence
    tested = [(subject, test.claim) for subject, test in sweep_claims(flat)]
    assert ("every weight, w = 0 to 1, epoch 2", "deeper for object data along the knob") in tested
    assert ("the weights that learned, w = 0.25, 0.5, 1", "deeper for object data along the knob") in tested
    everyone = render_sweep(sweep())
    assert any(isinstance(item, Markdown) and item.data.startswith("Every network of the sweep learned") for item in everyone)
    assert not any(subject.startswith("the weights that learned") for subject, _ in sweep_claims(sweep()))


def with_bootstraps(knob, n_eval=1000):
    """``knob`` with every profile bootstrapped (replicates: the profile shifted by -2 ... +2
    directions, the same shifts at every epoch) and the held-out images counted."""
    shifts = [-2.0, -1.0, 0.0, 1.0, 2.0]
    runs = {}
    for spec, run in knob.bundle.runs.items():
        profiles = [dataclasses.replace(record, bootstrap=StoredReplicates(
            "tokens", 0, [[value + shift for value in record.profile.n_eff] for shift in shifts])) for record in run.profiles]
        runs[spec] = dataclasses.replace(run, profiles=profiles, knn=[{**r, "n_eval": n_eval} for r in run.knn])
    return widest_sweep("supervised", [Bundle("knob", Path("knob"), "laptop", runs)])


def test_the_sweep_table_gives_each_weight_its_change_from_the_initialisation():
    rows = sweep_table(sweep()).splitlines()
    assert rows[0].startswith("| w | learned | k-NN top-1 %") and len(rows) == 2 + 3
    # without bootstraps or image counts: no intervals, a dash for the change's
    assert rows[2].startswith("| 0 | yes | 20.0 -> 25.0 | ") and rows[2].endswith("| +0.0 (no bootstrap) |")
    boot = sweep_table(with_bootstraps(sweep())).splitlines()
    # 25 % of 1,000 images: a Wilson interval of about +-2.3 points; the same profile at both
    # epochs on the same resampled images: a change of exactly 0
    assert "| 20.0 -> 25.0 [22.8, 27.3] |" in boot[2]
    assert boot[2].endswith("| +0.0 [+0.0, +0.0] |")
    assert "(100%)" in boot[2]


def test_the_factors_table_reads_each_run_from_its_initialisation_to_its_last_measured_epoch():
    record = {"epochs": {"0": {"cls": {"class": 20.0, "object value": 92.0}}, "2": {"cls": {"class": 12.0, "object value": 100.0}},
                         "4": {"cls": {"class": 11.0, "object value": 99.0}}},
              "chance": {"object value": 51.8}, "held_out": 2000, "constant": [], "thresholds": {"object value": 0.5}}
    table = factors_markdown({"object end": record, "unmeasured": None})
    lines = table.splitlines()
    assert lines[0] == "| run (cls token) | class | object value |" and len(lines) == 4  # the unmeasured run has no row
    assert lines[2].startswith("| object end | 20.0 -> 11.0 [") and "92.0 -> 99.0 [98." in lines[2]
    assert lines[3] == "| chance | | 51.8 |"
    assert "No run here" in factors_markdown({"unmeasured": None})


def test_the_objective_pair_reads_each_run_from_its_own_initialisation():
    from ib_tutorial.book.bundles import load_bundles
    from ib_tutorial.book.claims import profile_shape
    from ib_tutorial.book.claims import region_change
    from ib_tutorial.book.knob import objective_pair

    runs = [run for bundle in load_bundles(["laptop-knob-objects", "laptop-knob-dino"]) for run in bundle.runs.values()
            if run.config.dataset_options.get("texture_weight") == 1 and run.config.seed == 0][:2]
    pair = {"first": runs[0], "second": runs[1]}
    control = objective_pair(pair)
    assert control.markdown.count("\n- **") == 1 and control.markdown.startswith("- **first**: k-NN ")
    for name, run in pair.items():
        first, last = profile_shape(run.profiles[0]), profile_shape(run.profiles[-1])
        assert control.changes[name]["middle"] == region_change(first, last, "middle")
        assert control.shapes[name][1].shape == last.shape and f"last profile {last.shape}" in control.markdown
