"""Figures from stored profile records: axes, lines and captions."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from ib_tutorial import plots
from ib_tutorial.ib import plot_layer_eed
from ib_tutorial.paper import REPORTED
from ib_tutorial.results import profile_from_record

from profile_records import make_record


def test_plots_build_from_stored_records(tmp_path):
    records = [make_record(epoch) for epoch in (0, 1, 2)]
    profiles = {f"epoch {r['epoch']}": profile_from_record(r) for r in records}
    ax = plots.plot_block_profile(profiles, "caption", reported=REPORTED["tiny-imagenet"])
    assert ax.get_xlabel().startswith("block index") and ax.get_ylabel().startswith("EED")
    assert len(ax.get_lines()) >= 3
    heat = plots.plot_eed_heatmap([0, 1, 2], [r["profile"]["eed_percent"] for r in records], "caption")
    assert heat.images[0].get_array().shape == (12, 3)
    fig = plots.plot_datasets({"cifar100": profiles, "uc-merced": profiles}, "caption", reported=REPORTED)
    assert len(fig.axes) == 2
    comp = plots.plot_companions(profiles["epoch 0"], "caption")
    assert len(comp.get_lines()) == 2


def test_knob_plot_orders_points_by_texture_weight():
    ax = plots.plot_texture_knob([1.0, 0.0, 0.5], {"trained": [30.0, 10.0, 20.0], "random init": [5.0, 4.0, 6.0]},
                                 blocks=(2, 3, 4), caption="caption")
    trained = ax.get_lines()[0]
    assert list(trained.get_xdata()) == [0.0, 0.5, 1.0] and list(trained.get_ydata()) == [10.0, 20.0, 30.0]
    assert "L2-L4" in ax.get_ylabel() and ax.get_xlabel().startswith("texture_weight")


def test_every_figure_carries_its_caption_under_the_axes():
    profiles = {"epoch 0": profile_from_record(make_record(0))}
    figures = [
        plots.plot_block_profile(profiles, "run A").figure,
        plots.plot_datasets({"cifar100": profiles}, "run B"),
        plots.plot_eed_heatmap([0, 1], [[10.0] * 12, [12.0] * 12], "run C").figure,
        plots.plot_companions(profiles["epoch 0"], "run D").figure,
        plots.plot_knn_curves({"a": [{"epoch": 0, "top1": 10.0}, {"epoch": 1, "top1": 12.0}]}, "run E"),
        plot_layer_eed([0, 1, 10], np.ones((3, 6)), "run F").figure,
    ]
    for figure, caption in zip(figures, "ABCDEF"):
        assert figure.get_supxlabel() == f"run {caption}"


def test_a_captioned_figure_saves_its_caption_in_the_png(tmp_path):
    profiles = {"epoch 0": profile_from_record(make_record(0))}
    figure = plots.plot_block_profile(profiles, "run A on 12 images").figure
    figure.savefig(tmp_path / "captioned.png")
    plain, _ = plt.subplots()
    plain.savefig(tmp_path / "plain.png")
    with Image.open(tmp_path / "captioned.png") as captioned, Image.open(tmp_path / "plain.png") as uncaptioned:
        assert captioned.text[plots.CAPTION_KEY] == "run A on 12 images"
        assert plots.CAPTION_KEY not in uncaptioned.text
