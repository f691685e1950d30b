"""The Data chapter's figures of the synthetic worlds: one panel per class or weight, captioned."""
import matplotlib

matplotlib.use("Agg")

from ib_tutorial.presets import get_preset
from ib_tutorial.book import synthetic_worlds as worlds
from ib_tutorial.book.plots import CAPTION_KEY

CI = get_preset("ci")
CLASSES = CI.worlds.num_classes


def caption(figure):
    return figure.canvas.print_png.keywords["metadata"][CAPTION_KEY]


def test_outlines_and_spectra_draw_one_panel_a_class():
    outlines = worlds.plot_shape_outlines(CLASSES)
    assert sum(1 for ax in outlines.axes if ax.patches) == CLASSES
    spectra = worlds.plot_texture_spectra(CLASSES, size=16)
    assert sum(len(ax.images) for ax in spectra.axes if ax.get_visible()) == CLASSES
    assert "cycles per pixel" in caption(spectra)


def test_samples_and_the_knob_show_every_class():
    samples = worlds.plot_world_samples("synthetic-objects", CI, columns=2)
    assert sum(len(ax.images) for ax in samples.axes) == 2 * CLASSES
    knob = worlds.plot_knob_images(CI, weights=(0.0, 1.0))
    assert sum(len(ax.images) for ax in knob.axes) == 2 * CLASSES
    assert [ax.get_title() for ax in knob.axes[:2]] == ["w = 0", "w = 1"]


def test_the_probe_figure_has_one_line_a_probe_and_chance():
    figure = worlds.plot_cue_accuracies([0.0, 1.0], {"patch": [0.2, 0.8], "colour": [0.2, 0.3]}, CI)
    ax = figure.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["patch", "colour", "chance"]
    assert "preset ci" in caption(figure)
