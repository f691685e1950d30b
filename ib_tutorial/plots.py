"""Figures of per-block profiles. Every figure carries a caption line naming what produced it."""
from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from .paper import ReportedProfile
from .probe import Profile


def _caption(ax: plt.Axes, caption: str, y: float = -0.2) -> None:
    ax.annotate(textwrap.fill(caption, 90), xy=(0, y), xycoords="axes fraction", fontsize="small",
                color="0.35", va="top")


def draw_reported(ax: plt.Axes, reported: ReportedProfile, color: str = "0.4") -> None:
    """The paper's reported EED% ranges as grey boxes over the blocks they refer to."""
    spans = [(reported.early_blocks, reported.early_eed, "paper: early"),
             (reported.middle_blocks, reported.minimum_eed, "paper: minimum"),
             (reported.late_blocks, reported.late_eed, "paper: late")]
    for blocks, values, _name in spans:
        if values is None:
            continue
        low, high = values
        ax.fill_between([min(blocks) - 0.3, max(blocks) + 0.3], low, high, color=color, alpha=0.25, lw=0)
    if reported.flat_above is not None:
        ax.axhline(reported.flat_above, color=color, ls="--", lw=1)
    ax.plot([], [], color=color, alpha=0.5, lw=6, label="paper's reported range")


def plot_block_profile(
    profiles: Mapping[str, Profile],
    caption: str,
    ax: plt.Axes | None = None,
    title: str = "Effective Encoding Dimension per block",
    reported: ReportedProfile | None = None,
) -> plt.Axes:
    """EED% against block index, one line per labelled profile.

    Args:
        profiles: label -> :class:`~ib_tutorial.probe.Profile`.
        caption: what was run (preset, data, model, number of images); drawn under the axes.
        ax: axes to draw on; a new figure when omitted.
        reported: the paper's values for this dataset, drawn as reference boxes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    if reported is not None:
        draw_reported(ax, reported)
    for label, profile in profiles.items():
        ax.plot(range(profile.depth), profile.eed_percent, marker="o", label=label)
    depth = max(p.depth for p in profiles.values())
    ax.set_xticks(range(depth))
    ax.set_xlabel("block index l (0 = first transformer block)")
    ax.set_ylabel("EED (% of width D)")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    _caption(ax, caption)
    return ax


def plot_datasets(
    profiles: Mapping[str, Mapping[str, Profile]],
    caption: str,
    reported: Mapping[str, ReportedProfile] | None = None,
) -> plt.Figure:
    """One panel per dataset (side by side, shared y axis), each with its labelled profiles
    and, where known, the paper's reported ranges."""
    reported = reported or {}
    fig, axes = plt.subplots(1, len(profiles), figsize=(4.5 * len(profiles), 4), sharey=True,
                             layout="constrained", squeeze=False)
    for ax, (dataset, by_label) in zip(axes[0], profiles.items()):
        plot_block_profile(by_label, caption="", ax=ax, title=dataset, reported=reported.get(dataset))
    fig.suptitle("EED per block, by dataset")
    _caption(axes[0][0], caption, y=-0.25)
    return fig


def plot_eed_heatmap(epochs: Sequence[int], eed_by_epoch: Sequence[Sequence[float]], caption: str,
                     ax: plt.Axes | None = None, title: str = "EED over training") -> plt.Axes:
    """Block x epoch heatmap of EED%: how the profile changes as training goes on.

    Args:
        epochs: the epoch of each profile (x axis), ascending.
        eed_by_epoch: ``eed_by_epoch[i][l]`` is the EED% of block ``l`` at ``epochs[i]``.
    """
    values = np.asarray(eed_by_epoch, dtype=float).T  # [blocks, epochs]
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    image = ax.imshow(values, aspect="auto", origin="lower", cmap="viridis", vmin=0, vmax=100)
    ax.set_xticks(range(len(epochs)), [str(e) for e in epochs])
    ax.set_yticks(range(values.shape[0]))
    ax.set_xlabel("epoch (0 = random initialisation)")
    ax.set_ylabel("block index l")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="EED (% of width D)")
    _caption(ax, caption)
    return ax


def plot_companions(profile: Profile, caption: str, ax: plt.Axes | None = None,
                    title: str = "EED beside its companions") -> plt.Axes:
    """N_eff and every companion measure stored in ``profile``, in dimensions, per block
    (log scale: the measures differ by orders of magnitude)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    names = {"rankme": "RankMe", "participation_ratio": "participation ratio", "twonn": "TwoNN intrinsic dim."}
    ax.plot(range(profile.depth), profile.n_eff, marker="o", label="N_eff (EED)")
    for key, values in profile.companions.items():
        ax.plot(range(profile.depth), values, marker="s", label=names.get(key, key))
    ax.set_yscale("log")
    ax.set_xticks(range(profile.depth))
    ax.set_xlabel("block index l (0 = first transformer block)")
    ax.set_ylabel("dimensions (of D = %d)" % profile.dim)
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")
    _caption(ax, caption)
    return ax
