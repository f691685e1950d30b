"""Figures of the Information Bottleneck toy: the worked example's encoders, the estimators'
dependence on their resolution, information-plane trajectories and the EED of every layer
over training, each with a caption line naming what produced it."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import SymLogNorm

from ..ib.estimators import (InformationEstimate, bin_codes, binned_information, entropy_bits, independence_bias_bits,
    kde_information)
from ..ib.experiment import InformationExperiment, InformationPlane
from ..ib.model import LAYER_WIDTHS
from ..presets import Preset
from .plots import add_caption


def plot_encoders(points: Mapping[str, InformationEstimate], channel: Sequence[InformationEstimate]) -> plt.Figure:
    """The worked example: each deterministic encoder of ``points`` as a dot labelled by its name's
    part before " (", and the noisy ``channel`` (the label flipped ever more often) as a grey line."""
    fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    ax.plot([p.i_xt for p in channel], [p.i_ty for p in channel], color="0.6", label="T = Y flipped with probability eps")
    for name, p in points.items():
        ax.scatter(p.i_xt, p.i_ty, zorder=3)
        ax.annotate(name.split(" (")[0], (p.i_xt, p.i_ty), xytext=(4, 4), textcoords="offset points", fontsize="small")
    top = max(p.i_ty for p in [*points.values(), *channel])
    ax.set(xlabel="I(X;T) (bits)", ylabel="I(T;Y) (bits)", title="Deterministic encoders and a noisy channel",
           xlim=(-0.2, max(p.i_xt for p in points.values()) + 0.6), ylim=(-0.08, 1.2 * top))
    ax.legend(fontsize="small", loc="center right")
    ax.grid(alpha=0.3)
    add_caption(fig, "exact mutual informations of each deterministic encoder (points) and of the noisy channel (grey line)")
    return fig


def experiment_caption(preset: Preset, experiment: InformationExperiment) -> str:
    """The caption line of the tanh-against-ReLU figures."""
    settings, run = preset.ib, experiment.trajectory
    batch = "full batch" if settings.batch_size is None else f"batches of {settings.batch_size}"
    reduced = " (reduced: set IB_TUTORIAL_PRESET=laptop for the long run)" if preset.illustrative else ""
    return (f"preset {preset.name}{reduced}: {settings.epochs} epochs of Adam, lr {settings.learning_rate:g}, {batch}; "
            f"{len(run.labels)} training inputs of the 12-bit task; {len(run.epochs)} recorded epochs")


def plot_information_planes(planes: Mapping[str, InformationPlane], caption: str,
                            axes: Sequence[plt.Axes] | None = None) -> list[plt.Axes]:
    r"""Information-plane trajectories, one panel per titled plane (on ``axes``, else a new row):
    each layer's path a grey line with one dot per recorded epoch, coloured by epoch on a log scale
    (``caption`` "": the caller's)."""
    if axes is None:
        _, axes = plt.subplots(1, len(planes), figsize=(5.2 * len(planes), 4.2), layout="constrained", squeeze=False)
        axes = list(axes[0])
    norm = SymLogNorm(linthresh=1, vmin=0, vmax=max(plane.epochs[-1] for plane in planes.values()))
    right = max(float(p.i_xt.max()) for p in planes.values()) + 0.3
    for ax, (title, plane) in zip(axes, planes.items()):
        epochs = np.array(plane.epochs)
        for layer in range(plane.i_xt.shape[1]):
            x, y = plane.i_xt[:, layer].numpy(), plane.i_ty[:, layer].numpy()
            ax.plot(x, y, color="0.7", lw=0.8, zorder=1)
            points = ax.scatter(x, y, c=epochs, cmap="viridis", norm=norm, s=18, zorder=2)
            ax.annotate(f"T{layer + 1}", (x[-1], y[-1]), xytext=(3, -10), textcoords="offset points", fontsize="small")
        ax.set(xlim=(0, right), ylim=(0, 1.1 * max(1.0, float(plane.i_ty.max()))), xlabel="I(X;T) (bits)",
               ylabel="I(T;Y) (bits)", title=title)
        ax.grid(alpha=0.3)
    colorbar = ax.figure.colorbar(points, ax=list(axes), label="epoch")
    colorbar.ax.tick_params(labelsize="small")
    if caption:
        add_caption(ax.figure, caption)
    return list(axes)


def plot_layer_eed(epochs: Sequence[int], eed: np.ndarray, caption: str, ax: plt.Axes | None = None,
                   title: str = "") -> plt.Axes:
    r"""EED :math:`N_\mathrm{eff}` [E, L] of each toy layer against epoch (``caption`` "": the caller's)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    epochs = np.asarray(epochs)
    for layer in range(np.asarray(eed).shape[1]):
        ax.plot(epochs, np.asarray(eed)[:, layer], marker=".", label=f"T{layer + 1} (D={LAYER_WIDTHS[layer]})")
    ax.set_xscale("symlog", linthresh=1)
    # Headroom above the data for the legend.
    ax.set(xlim=(0, epochs[-1]), ylim=(0.8, 1.4 * float(np.nanmax(eed))), xlabel="epoch",
           ylabel="EED N_eff (directions)", title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", ncol=3, loc="upper center")
    if caption:
        add_caption(ax.figure, caption)
    return ax


def plot_binning_bias(layers: Sequence, labels, shuffled, caption: str, shown: Sequence[int] = (0, 4),
                      bin_counts: Sequence[int] = (2, 3, 5, 8, 12, 20, 30, 50, 80, 130, 200, 400, 1000),
                      ) -> tuple[plt.Figure, dict[tuple[int, int], float]]:
    r"""The binning estimator's bias against the number of bins, on an untrained tanh network's
    layers of ``shown``: :math:`I(X;T)`, and :math:`I(T;Y)` with ``shuffled`` labels (truth: 0)
    beside the independence bias; returns the figure and that spurious :math:`I(T;Y)` (bits)
    by (layer, bins)."""
    fig, (ax_x, ax_y) = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
    spurious_at = {}
    for layer in shown:
        values = layers[layer]
        label = f"T{layer + 1} (D = {values.shape[1]})"
        i_xt, predicted = [], []
        for bins in bin_counts:
            i_xt.append(binned_information(values, labels, bins, value_range=(-1.0, 1.0)).i_xt)
            spurious_at[layer, bins] = binned_information(values, shuffled, bins, value_range=(-1.0, 1.0)).i_ty
            occupied = int(bin_codes(values, bins, value_range=(-1.0, 1.0)).max()) + 1
            predicted.append(independence_bias_bits(occupied, 2, len(labels)))
        ax_x.plot(bin_counts, i_xt, marker="o", label=label)
        spurious = [spurious_at[layer, b] for b in bin_counts]
        line = ax_y.plot(bin_counts, spurious, marker="o", label=f"{label}: measured")[0]
        ax_y.plot(bin_counts, predicted, ls="--", color=line.get_color(), label=f"{label}: (K_T - 1)/(2N ln 2)")
    ax_x.axhline(np.log2(len(labels)), color="0.4", ls=":", label="log2 N")
    ax_y.axhline(entropy_bits(torch.bincount(labels)), color="0.4", ls=":", label="H(Y)")
    for ax, title in ((ax_x, "I(X;T) of the untrained network"), (ax_y, "I(T;Y) with shuffled labels (truth: 0)")):
        ax.set(xscale="log", xlabel="bins per unit over (-1, 1)", ylabel="bits", title=title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    ax_y.set_ylim(-0.05, 1.1)
    add_caption(fig, caption)
    return fig, spurious_at


def plot_kde_scale(layers: Sequence, shuffled, noise_variance: float, caption: str, shown: Sequence[int] = (0, 4),
                   variances: Sequence[float] = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)) -> plt.Figure:
    r"""The kernel estimate against its noise variance :math:`\sigma^2`, on an untrained network's
    layers of ``shown``: the bound on :math:`I(X;T)`, and :math:`I(T;Y)` with ``shuffled`` labels
    (truth: 0); a dotted line marks the preset's ``noise_variance``."""
    fig, (ax_x, ax_y) = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
    for layer in shown:
        values = layers[layer]
        estimates = [kde_information(values, shuffled, variance) for variance in variances]
        label = f"T{layer + 1} (D = {values.shape[1]})"
        ax_x.plot(variances, [e.i_xt for e in estimates], marker="o", label=label)
        ax_y.plot(variances, [e.i_ty for e in estimates], marker="o", label=label)
    for ax, title in ((ax_x, "KDE upper bound on I(X;T)"), (ax_y, "KDE I(T;Y) with shuffled labels (truth: 0)")):
        ax.axvline(noise_variance, color="0.4", ls=":", label=f"preset's sigma^2 = {noise_variance:g}")
        ax.set(xscale="log", xlabel="noise variance sigma^2 (activation units squared)", ylabel="bits", title=title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    add_caption(fig, caption)
    return fig


def plot_squashing(layer, labels, bins: int, noise_variance: float, caption: str,
                   gains: Sequence[int] = (1, 3, 10, 30, 100)) -> tuple[plt.Figure, dict[int, tuple[float, float]]]:
    r"""Both estimates of :math:`I(X;T)` of ``layer`` squashed through the invertible
    :math:`t \mapsto \tanh(k t)` (the true information does not change), against the gain
    :math:`k`; returns the figure and (binned, kernel) bits by gain."""
    estimates = {}
    for gain in gains:
        squashed = torch.tanh(gain * layer)
        estimates[gain] = (binned_information(squashed, labels, bins, value_range=(-1.0, 1.0)).i_xt,
                           kde_information(squashed, labels, noise_variance).i_xt)
    fig, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
    for column, label in enumerate((f"binned, {bins} bins over (-1, 1)", f"KDE bound, sigma^2 = {noise_variance:g}")):
        ax.plot(list(gains), [estimates[gain][column] for gain in gains], marker="o", label=label)
    ax.axhline(np.log2(len(labels)), color="0.4", ls=":", label="log2 N")
    ax.set(xscale="log", xlabel="gain k of tanh(k t) (dimensionless)", ylabel="estimated I(X;T) (bits)",
           title="An invertible squashing of T5")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower left")
    add_caption(fig, caption)
    return fig, estimates


def plot_planes_beside_eed(experiments: Mapping[str, InformationExperiment], caption: str) -> plt.Figure:
    """One row per activation: its binned information plane beside the EED of each layer."""
    fig, axes = plt.subplots(len(experiments), 2, figsize=(9, 3.6 * len(experiments)), layout="constrained",
                             squeeze=False)
    for row, (name, experiment) in zip(axes, experiments.items()):
        plot_information_planes({f"{name}: binning": experiment.planes["binning"]}, caption="", axes=[row[0]])
        plot_layer_eed(experiment.trajectory.epochs, experiment.eed.numpy(), caption="", ax=row[1],
                       title=f"{name}: EED of each layer")
    add_caption(fig, caption)
    return fig
