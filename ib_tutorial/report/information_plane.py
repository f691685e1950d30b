"""Figures of the Information Bottleneck toy: information-plane trajectories and the EED
of every layer over training. Like every figure of the book, each carries a caption line
naming what produced it (:func:`ib_tutorial.report.captions.add_caption`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import SymLogNorm

from ..ib.estimators import bin_codes, binned_information, entropy_bits, independence_bias_bits
from ..ib.experiment import InformationPlane
from ..ib.model import LAYER_WIDTHS
from .plots import add_caption


def plot_information_planes(
    planes: Mapping[str, InformationPlane],
    caption: str,
    axes: Sequence[plt.Axes] | None = None,
    max_bits: float | None = None,
) -> list[plt.Axes]:
    r"""Information-plane trajectories, one panel per labelled plane (e.g. per activation).

    Each layer's path :math:`(I(X;T_l), I(T_l;Y))` over training is a grey line with one
    dot per recorded epoch, coloured by epoch on a shared log scale; the last epoch is
    labelled with the layer's name.

    Args:
        planes: panel title -> :class:`~ib_tutorial.ib.experiment.InformationPlane`.
        caption: what was run (preset, data, estimator settings); drawn under the figure
            (pass "" to leave it to the caller, e.g. for a figure with more panels).
        axes: one axes per plane; a new row of panels when omitted.
        max_bits: right end of the :math:`I(X;T)` axis (default: the largest value).
    """
    if axes is None:
        _, axes = plt.subplots(1, len(planes), figsize=(5.2 * len(planes), 4.2), layout="constrained", squeeze=False)
        axes = list(axes[0])
    last_epoch = max(plane.epochs[-1] for plane in planes.values())
    norm = SymLogNorm(linthresh=1, vmin=0, vmax=last_epoch)
    right = max_bits if max_bits is not None else max(float(p.i_xt.max()) for p in planes.values()) + 0.3
    for ax, (title, plane) in zip(axes, planes.items()):
        epochs = np.array(plane.epochs)
        for layer in range(plane.i_xt.shape[1]):
            x, y = plane.i_xt[:, layer].numpy(), plane.i_ty[:, layer].numpy()
            ax.plot(x, y, color="0.7", lw=0.8, zorder=1)
            points = ax.scatter(x, y, c=epochs, cmap="viridis", norm=norm, s=18, zorder=2)
            ax.annotate(f"T{layer + 1}", (x[-1], y[-1]), xytext=(3, -10), textcoords="offset points", fontsize="small")
        ax.set_xlim(0, right)
        ax.set_ylim(0, 1.1 * max(1.0, float(plane.i_ty.max())))
        ax.set_xlabel("I(X;T) (bits)")
        ax.set_ylabel("I(T;Y) (bits)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    colorbar = ax.figure.colorbar(points, ax=list(axes), label="epoch")
    colorbar.ax.tick_params(labelsize="small")
    if caption:
        add_caption(ax.figure, caption)
    return list(axes)


def plot_layer_eed(epochs: Sequence[int], eed: np.ndarray, caption: str, ax: plt.Axes | None = None,
                   title: str = "") -> plt.Axes:
    r"""EED :math:`N_\mathrm{eff}` of each toy layer against epoch, ``eed`` being [E, L].

    ``caption`` (what was run) goes under the figure; pass "" to leave it to the caller."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    epochs = np.asarray(epochs)
    for layer in range(np.asarray(eed).shape[1]):
        ax.plot(epochs, np.asarray(eed)[:, layer], marker=".", label=f"T{layer + 1} (D={LAYER_WIDTHS[layer]})")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(0, epochs[-1])
    ax.set_xlabel("epoch")
    ax.set_ylabel("EED N_eff (directions)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", ncol=2)
    if caption:
        add_caption(ax.figure, caption)
    return ax


#: Bin counts per unit over (-1, 1) that :func:`plot_binning_bias` sweeps.
BIN_COUNTS = (2, 3, 5, 8, 12, 20, 30, 50, 80, 130, 200, 400, 1000)


def plot_binning_bias(layers: Sequence, labels, shuffled, caption: str, shown: Sequence[int] = (0, 4),
                      bin_counts: Sequence[int] = BIN_COUNTS) -> tuple[plt.Figure, dict[tuple[int, int], float]]:
    r"""The binning estimator's bias against the number of bins, on an untrained network's layers.

    Left: :math:`I(X;T)` of each layer of ``shown`` (``layers``: each [N, D], tanh outputs in
    (-1, 1)) against the bin count. Right: :math:`I(T;Y)` with ``shuffled`` labels (truth: 0),
    measured, beside the independence bias :math:`(K_T - 1)/(2 N \ln 2)` bits of a table with
    :math:`K_T` occupied cells. Returns the figure and the spurious :math:`I(T;Y)` in bits by
    (layer, bins)."""
    fig, (ax_x, ax_y) = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
    spurious_at = {}
    for layer in shown:
        values = layers[layer]
        label = f"T{layer + 1} (D = {values.shape[1]})"
        i_xt, spurious, predicted = [], [], []
        for bins in bin_counts:
            i_xt.append(binned_information(values, labels, bins, value_range=(-1.0, 1.0)).i_xt)
            spurious_at[layer, bins] = binned_information(values, shuffled, bins, value_range=(-1.0, 1.0)).i_ty
            spurious.append(spurious_at[layer, bins])
            occupied = int(bin_codes(values, bins, value_range=(-1.0, 1.0)).max()) + 1
            predicted.append(independence_bias_bits(occupied, 2, len(labels)))
        ax_x.plot(bin_counts, i_xt, marker="o", label=label)
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
