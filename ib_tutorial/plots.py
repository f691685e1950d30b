"""Figures of per-block profiles. Every figure carries a caption line naming what produced it."""
from __future__ import annotations

import textwrap
from collections.abc import Mapping

import matplotlib.pyplot as plt

from .probe import Profile


def plot_block_profile(
    profiles: Mapping[str, Profile],
    caption: str,
    ax: plt.Axes | None = None,
    title: str = "Effective Encoding Dimension per block",
) -> plt.Axes:
    """EED% against block index, one line per labelled profile.

    Args:
        profiles: label -> :class:`~ib_tutorial.probe.Profile`.
        caption: what was run (preset, data, model, number of images); drawn under the axes.
        ax: axes to draw on; a new figure when omitted.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
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
    ax.annotate(textwrap.fill(caption, 90), xy=(0, -0.2), xycoords="axes fraction", fontsize="small", color="0.35", va="top")
    return ax
