"""The claims chapter's figure of the two statistics keeps its legend off the data."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from ib_tutorial.book.plots import plot_profile_shapes
from ib_tutorial.book.claims import ShapeSummary


def test_the_legend_of_the_middle_dip_figure_sits_outside_the_panels():
    run = [ShapeSummary(epoch, tuple([10.0 + epoch] * 12), 192) for epoch in (0, 10)]
    figure = plot_profile_shapes({"run A": run, "run B": run}, caption="Two runs.")
    assert all(ax.get_legend() is None for ax in figure.axes)
    [legend] = figure.legends
    assert [text.get_text() for text in legend.get_texts()][:2] == ["run A", "run B"]
    figure.canvas.draw()
    box = legend.get_window_extent()
    assert not any(box.overlaps(ax.get_window_extent()) for ax in figure.axes)
    plt.close(figure)
