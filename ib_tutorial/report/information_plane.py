"""Figures of the Information Bottleneck toy: information-plane trajectories and the EED
of every layer over training. Like every figure of the book, each carries a caption line
naming what produced it (:func:`ib_tutorial.report.captions.add_caption`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import SymLogNorm

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
