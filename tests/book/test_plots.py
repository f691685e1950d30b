"""Figures from stored profile records: axes, lines and captions."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image
from profile_records import HUMP, bundle_run, make_record, seeded

from ib_tutorial.book.information_plane import plot_layer_eed
from ib_tutorial.book import plots
from ib_tutorial.book.plots import CAPTION_KEY
from ib_tutorial.book.paper import REPORTED
from ib_tutorial.book.claims import SeedSpread


def test_plots_build_from_stored_records(tmp_path):
    records = [make_record(epoch) for epoch in (0, 1, 2)]
    profiles = {f"epoch {r.epoch}": r.profile for r in records}
    ax = plots.plot_block_profile(profiles, "caption", reported=REPORTED["tiny-imagenet"])
    assert ax.get_xlabel().startswith("block index") and ax.get_ylabel().startswith("EED")
    assert len(ax.get_lines()) >= 3
    heat = plots.plot_eed_heatmap([0, 1, 2], [r.profile.eed_percent for r in records], "caption")
    assert heat.images[0].get_array().shape == (12, 3)


def test_every_figure_carries_its_caption_under_the_axes():
    profiles = {"epoch 0": make_record(0).profile}
    figures = [
        plots.plot_block_profile(profiles, "run A").figure,
        plots.plot_eed_heatmap([0, 1], [[10.0] * 12, [12.0] * 12], "run C").figure,
        plots.plot_knn_curves({"a": [{"epoch": 0, "top1": 10.0}, {"epoch": 1, "top1": 12.0}]}, "run E"),
        plot_layer_eed([0, 1, 10], np.ones((3, 6)), "run F").figure,
    ]
    for figure, caption in zip(figures, "ACEF"):
        assert figure.canvas.print_png.keywords["metadata"][CAPTION_KEY].endswith(f"run {caption}")


def test_a_caption_is_a_sentence_over_one_smaller_provenance_line():
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    plots.add_caption(fig, "preset laptop; tiny-imagenet; code abc", what="EED per block of one run.")
    assert fig.get_supxlabel().splitlines() == ["EED per block of one run.", " "]  # the blank line keeps room
    provenance = [text for text in fig.artists if text.get_text() == "preset laptop; tiny-imagenet; code abc"]
    assert len(provenance) == 1
    assert provenance[0].get_fontsize() < fig._supxlabel.get_fontsize()
    fig.canvas.draw()
    assert provenance[0].get_window_extent().y1 <= fig._supxlabel.get_window_extent().y1  # under the sentence


def test_many_lines_never_share_a_colour_and_the_legend_sits_beside_the_axes():
    profiles = {f"epoch {e}": make_record(e).profile for e in range(14)}
    ax = plots.plot_block_profile(profiles, "run")
    colours = [tuple(matplotlib.colors.to_rgba(line.get_color())) for line in ax.get_lines()]
    assert len(set(colours)) == len(colours) == 14
    legend = ax.get_legend()
    ax.figure.canvas.draw()
    assert legend.get_window_extent().x0 >= ax.get_window_extent().x1


def test_the_axis_follows_the_data_and_the_papers_bands_above_it_are_named_over_the_frame():
    profiles = {"epoch 4": make_record(4, n_eff=[10.0] * 12).profile}  # 2.6 % of 384
    ax = plots.plot_block_profile(profiles, "run", reported=REPORTED["tiny-imagenet"])
    assert ax.get_ylim()[1] < 10
    notes = [text.get_text() for text in ax.texts]
    assert notes == ["\u2191 paper, above this axis: L0-L1 58-60 %; L2-L4 29.5-31.5 %; L9-L11 91.5-93.5 %"]
    assert not ax.collections  # no band drawn off the axis
    high = {"epoch 4": make_record(4, n_eff=[230.0] * 12).profile}  # 60 %: the early and minimum bands inside
    ax = plots.plot_block_profile(high, "run", reported=REPORTED["tiny-imagenet"])
    assert len(ax.collections) == 2 and "L9-L11 91.5-93.5 %" in ax.texts[0].get_text()


def test_pruning_rows_are_titled_apart_and_log_axes_read_plain_numbers():
    block = {"ks": [1, 2, 5, 10, 20, 50, 100], "accuracy": [5, 8, 12, 15, 17, 18, 18], "n_eff": 12.0, "sufficient_k": 20}
    record = {"blocks": [dict(block, block=b) for b in range(12)], "keep_fraction": 0.95}
    fig = plots.plot_pruning({"seed 0": record, "seed 1": record}, "run")
    assert [sub._suptitle.get_text() for sub in fig.subfigs] == ["seed 0", "seed 1"]
    fig.canvas.draw()
    curves = fig.subfigs[0].axes[0]
    labels = [label.get_text() for label in curves.get_xticklabels() if label.get_text()]
    assert "10" in labels and not any("times" in label or "^" in label for label in labels)


def test_run_comparison_draws_both_runs_in_percent_and_in_directions():
    runs = {"dino": bundle_run("tiny-imagenet", width=192), "wide": bundle_run("tiny-imagenet@arch=vit_small", width=384)}
    fig = plots.plot_run_comparison(runs, "run G")
    percent, directions = fig.axes[:2]
    assert len(percent.get_lines()) == len(directions.get_lines()) == 4  # last and first epoch of each run
    assert percent.get_ylabel().startswith("EED") and directions.get_ylabel().startswith("N_eff")
    wide_last = directions.get_lines()[2]
    assert list(wide_last.get_ydata()) == runs["wide"].profiles[-1].profile.n_eff
    assert fig.get_supxlabel() == "run G"


def test_a_captioned_figure_saves_its_caption_in_the_png(tmp_path):
    profiles = {"epoch 0": make_record(0).profile}
    figure = plots.plot_block_profile(profiles, "run A on 12 images").figure
    figure.savefig(tmp_path / "captioned.png")
    plain, _ = plt.subplots()
    plain.savefig(tmp_path / "plain.png")
    with Image.open(tmp_path / "captioned.png") as captioned, Image.open(tmp_path / "plain.png") as uncaptioned:
        assert captioned.text[CAPTION_KEY] == "run A on 12 images"
        assert CAPTION_KEY not in uncaptioned.text


def test_seed_profiles_draw_each_seed_with_its_band_and_its_change():
    spread = SeedSpread.of([seeded(0), seeded(1, [value + 5 for value in HUMP])])
    fig = plots.plot_seed_profiles(spread, "caption.")
    levels, changes = fig.axes[:2]
    assert levels.get_ylabel().startswith("EED") and changes.get_ylabel().startswith("EED change")
    assert len(levels.collections) == 2 and len(changes.collections) == 2  # one band per seed
    # Each seed: its trained line and its random initialisation; the change is the difference.
    trained, init = levels.get_lines()[2:4]
    assert list(trained.get_ydata()) == spread.runs[1].last.eed_percent
    assert list(init.get_ydata()) == spread.runs[1].first.eed_percent
    change = changes.get_lines()[1].get_ydata()
    assert np.allclose(change, np.subtract(spread.runs[1].last.eed_percent, spread.runs[1].first.eed_percent))
    plt.close(fig)
