"""The Information Bottleneck chapter's figures: the worked example, the estimators against
their resolution, and the experiment's planes beside the EED."""
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch

from ib_tutorial import ib
from ib_tutorial.presets import get_preset
from ib_tutorial.book.information_plane import (
    experiment_caption,
    plot_encoders,
    plot_kde_scale,
    plot_planes_beside_eed,
    plot_squashing,
)


@pytest.fixture(scope="module")
def untrained():
    """The first 512 training inputs of the toy task through an untrained tanh network."""
    task = ib.toy_task(seed=0)
    x, y = task.inputs[:512], task.labels[:512]
    with torch.no_grad():
        layers = ib.InformationNetwork("tanh", torch.Generator().manual_seed(0)).layer_outputs(x)
    return layers, y


def test_encoders_are_drawn_at_their_exact_points_beside_the_noisy_channel():
    x = torch.arange(8)
    y = (x >= 4).long()
    points = {"T = X (copy)": ib.discrete_information(x, y), "T = 0 (constant)": ib.discrete_information(0 * x, y)}
    channel = [ib.flipped_label_information(y, eps) for eps in (0.0, 0.25, 0.5)]
    ax = plot_encoders(points, channel).axes[0]
    dots = np.concatenate([collection.get_offsets() for collection in ax.collections])
    assert np.allclose(dots, [[3.0, 1.0], [0.0, 0.0]])
    assert ax.lines[0].get_xdata()[0] == pytest.approx(1.0) and ax.get_xlim()[1] > 3


def test_more_noise_means_fewer_distinguishable_inputs(untrained):
    layers, y = untrained
    fig = plot_kde_scale(layers, y, 1e-3, "test", variances=(1e-5, 1e-2, 1.0))
    upper_bounds = [line.get_ydata() for line in fig.axes[0].lines[:2]]  # T1 and T5, before the preset's marker
    assert all(np.all(np.diff(values) < 0) for values in upper_bounds)
    assert upper_bounds[0][0] == pytest.approx(np.log2(len(y)), abs=0.05)  # small noise: every input distinct


def test_an_invertible_squashing_moves_both_estimates(untrained):
    layers, y = untrained
    fig, estimates = plot_squashing(layers[4], y, 30, 1e-3, "test", gains=(1, 3, 100))
    assert set(estimates) == {1, 3, 100} and len(fig.axes[0].lines) == 3
    for column in (0, 1):  # moderate gain raises the estimate, saturation makes it fall by bits
        assert estimates[3][column] > estimates[1][column] > estimates[100][column] + 1


def experiment(activation: str, epochs: list[int], labels: torch.Tensor):
    planes = {"binning": ib.InformationPlane(activation, "binning", epochs, torch.rand(len(epochs), 6) * 10,
                                             torch.rand(len(epochs), 6))}
    trajectory = SimpleNamespace(epochs=epochs, labels=labels)
    return SimpleNamespace(trajectory=trajectory, planes=planes, eed=torch.ones(len(epochs), 6))


def test_the_experiment_figure_has_a_plane_and_an_eed_panel_per_activation():
    runs = {name: experiment(name, [0, 1, 10], torch.zeros(7)) for name in ("tanh", "relu")}
    fig = plot_planes_beside_eed(runs, "test")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["tanh: binning", "tanh: EED of each layer", "relu: binning", "relu: EED of each layer"]


def test_the_experiment_caption_names_the_preset_and_what_was_recorded():
    preset = get_preset("ci")
    caption = experiment_caption(preset, experiment("tanh", [0, 1, 10], torch.zeros(7)))
    assert caption.startswith("preset ci") and f"{preset.ib.epochs} epochs" in caption
    assert "7 training inputs" in caption and "3 recorded epochs" in caption
