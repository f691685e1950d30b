"""Figures of per-block profiles. Every figure carries a caption line naming what produced it."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib import ticker
import numpy as np

from ..measure.block_profile import Profile
from ..reproduction.bundles import Bundle, BundleRun
from ..reproduction.claims import MARGIN, ShapeSummary, profile_shape
from ..reproduction.paper import ABOUT_TOLERANCE, ReportedProfile
from ..reproduction.learning import block_changes
from ..reproduction.records import ProfileRecord
from ..reproduction.seeds import SeedSpread
from .captions import add_caption, bundle_caption


def draw_reported(ax: plt.Axes, reported: ReportedProfile, color: str = "0.4", top: float = math.inf) -> None:
    """The paper's reported EED% ranges as a reference over the blocks they refer to: a grey
    box where the range lies under ``top`` (the axis's upper limit, when it is scaled to the
    data drawn), and for the ranges above it, their numbers and an arrow over the frame."""
    spans = [(reported.early_blocks, reported.early_eed), (reported.middle_blocks, reported.minimum_eed),
             (reported.late_blocks, reported.late_eed)]
    above = []
    for blocks, values in spans:
        if values is None:
            continue
        low, high = values
        if low < top:
            ax.fill_between([min(blocks) - 0.3, max(blocks) + 0.3], low, high, color=color, alpha=0.25, lw=0)
        else:
            above.append((min(blocks), f"L{min(blocks)}-L{max(blocks)} {low:g}-{high:g} %"))
    if reported.flat_above is not None:
        if reported.flat_above < top:
            ax.axhline(reported.flat_above, color=color, ls="--", lw=1)
        else:
            above.append((0, f"flat, above {reported.flat_above:g} % at every block"))
    if above:
        ax.annotate("\u2191 paper, above this axis: " + "; ".join(text for _, text in sorted(above)), xy=(0.5, 1.0),
                    xycoords="axes fraction", xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                    fontsize="x-small", color=color)
        ax.set_title(ax.get_title(), pad=14)  # room for the note above the frame
    if len(above) == len(spans) - [v for _, v in spans].count(None) + (reported.flat_above is not None):
        return  # nothing drawn inside the axes: no legend entry
    ours = any(key in reported.tolerance_bands for key in ("early", "minimum", "late"))
    ax.plot([], [], color=color, alpha=0.5, lw=6,
            label=f"paper's value (±{ABOUT_TOLERANCE:g} around an \"about\": our tolerance)" if ours else "paper's reported range")


def plot_block_profile(
    profiles: Mapping[str, Profile],
    caption: str,
    ax: plt.Axes | None = None,
    title: str = "Effective Encoding Dimension per block",
    reported: ReportedProfile | None = None,
    full_range: bool = False,
    what: str | None = None,
) -> plt.Axes:
    """EED% against block index, one line per labelled profile, the legend beside the axes.

    Args:
        profiles: label -> :class:`~ib_tutorial.measure.block_profile.Profile`. A label containing
            "random init" is drawn dashed and grey, so it stays visible under the others; the
            others each get a colour of their own (:func:`distinct_colours`).
        caption: what was run (preset, data, model, number of images); drawn under the axes.
        ax: axes to draw on; a new figure when omitted.
        reported: the paper's values for this dataset, drawn as a reference
            (:func:`draw_reported`): boxes inside the axis, numbers above it.
        full_range: a 0-100 % axis; by default the axis is scaled to the profiles drawn, so
            that small differences stay visible.
        what: the caption's sentence, what the figure shows (:func:`add_caption`).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
    trained = [label for label in profiles if "random init" not in label]
    colours = dict(zip(trained, distinct_colours(len(trained))))
    highest = 0.0
    for label, profile in profiles.items():
        style = line_style(label)
        if label in colours:
            style["color"] = colours[label]
        ax.plot(range(profile.depth), profile.eed_percent, label=label, **style)
        highest = max(highest, max(profile.eed_percent))
    depth = max(p.depth for p in profiles.values())
    ax.set_xticks(range(depth))
    ax.set_xlabel("block index l (0 = first transformer block)")
    ax.set_ylabel("EED (% of width D)")
    ax.set_ylim(0, 100 if full_range else min(100.0, 1.15 * highest + 1.0))
    ax.set_title(title)
    if reported is not None:
        draw_reported(ax, reported, top=ax.get_ylim()[1])
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if caption or what:
        add_caption(ax.figure, caption, what)
    return ax


def distinct_colours(count: int) -> list:
    """``count`` colours no two alike: the ten of the default cycle, or for more lines, as many
    evenly spaced along viridis (ordered, as epochs are)."""
    if count <= 10:
        return [f"C{index}" for index in range(count)]
    return [plt.cm.viridis(0.95 * index / (count - 1)) for index in range(count)]


def line_style(label: str) -> dict:
    """Matplotlib keywords for a labelled line: the random initialisation grey, dashed and with
    open squares (drawn above, so it stays visible under a trained line it meets); others
    the colour cycle with round markers."""
    if "random init" in label:
        return dict(color="0.45", linestyle="--", marker="s", markerfacecolor="none", zorder=3)
    return dict(marker="o")


def plot_datasets(
    profiles: Mapping[str, Mapping[str, Profile]],
    caption: str,
    reported: Mapping[str, ReportedProfile] | None = None,
) -> plt.Figure:
    """One panel per dataset (side by side, shared y axis), each with its labelled profiles
    and, where known, the paper's reported ranges."""
    reported = reported or {}
    fig, axes = panel_grid(len(profiles), 4.5, 3.6, sharey=not reported)
    for ax, (dataset, by_label) in zip(axes, profiles.items()):
        plot_block_profile(by_label, caption="", ax=ax, title=dataset, reported=reported.get(dataset))
    fig.suptitle("EED per block, by dataset")
    add_caption(fig, caption)
    return fig


def epoch_label(record: ProfileRecord) -> str:
    """``epoch N``, with ``(random init)`` for epoch 0: the legend entry of a stored profile."""
    return f"epoch {record.epoch}" + (" (random init)" if record.epoch == 0 else "")


def plot_bundle(bundle: Bundle) -> tuple[plt.Figure, plt.Figure]:
    """The two figures of a results bundle (:func:`~ib_tutorial.reproduction.bundles.load_bundle`): each
    dataset's profile at the random initialisation and at the last epoch, and every saved
    epoch as a heatmap; both captioned with what made the bundle."""
    profiles = {spec: {epoch_label(r): r.profile for r in (run.profiles[0], run.profiles[-1])}
                for spec, run in bundle.runs.items()}
    curves = plot_datasets(profiles, bundle_caption(bundle))
    heatmaps, axes = panel_grid(len(bundle.runs), 4.5, 3.8)
    for ax, (spec, run) in zip(axes, bundle.runs.items()):
        plot_eed_heatmap([r.epoch for r in run.profiles], [r.profile.eed_percent for r in run.profiles],
                         caption="", ax=ax, title=spec)
    add_caption(heatmaps, bundle_caption(bundle))
    return curves, heatmaps


def plot_run_comparison(runs: Mapping[str, BundleRun], caption: str) -> plt.Figure:
    """Runs of one dataset that differ in one setting (objective, width), block by block:
    EED% of the width (left) and N_eff in directions (right), each run's last teacher solid
    and its random initialisation dashed in the same colour."""
    fig, (percent, directions) = panel_grid(2, 5.0, 3.8)
    for index, (label, run) in enumerate(runs.items()):
        color = f"C{index}"
        for record, style in ((run.profiles[-1], "-"), (run.profiles[0], "--")):
            name = f"{label}, {epoch_label(record)}"
            for ax, values in ((percent, record.profile.eed_percent), (directions, record.profile.n_eff)):
                ax.plot(range(len(values)), values, style, color=color, marker="o" if style == "-" else "s",
                        markerfacecolor=None if style == "-" else "none", label=name)
    depth = next(iter(runs.values())).profiles[-1].profile.depth
    for ax, ylabel in ((percent, "EED (% of width D)"), (directions, "N_eff (directions)")):
        ax.set_xticks(range(depth))
        ax.set_xlabel("block index l (0 = first transformer block)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    percent.set_title("EED per block, as a share of the width")
    directions.set_title("effective directions per block")
    fig.legend(*percent.get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
    add_caption(fig, caption)
    return fig


def plot_run_epochs(records: Sequence[ProfileRecord], caption: str, title: str = "",
                    reported: ReportedProfile | None = None,
                    what: str = "EED of every block at every saved epoch of one run, as lines and as a heatmap.",
                    ) -> plt.Figure:
    """One run's profile at every saved epoch (``records``, epoch 0 the random
    initialisation): EED% per block, one line per epoch, beside the block x epoch heatmap of
    the same numbers; with the paper's ranges when ``reported`` is given."""
    # One panel a row, each the page's width: side by side, the heatmap's numbers shrank below legibility.
    fig, (curves, heatmap) = plt.subplots(2, 1, figsize=(7.5, 9.5), layout="constrained")
    plot_block_profile({epoch_label(r): r.profile for r in records}, caption="", ax=curves,
                       title=f"{title}: EED per block, every saved epoch" if title else "EED per block, every saved epoch",
                       reported=reported)
    plot_eed_heatmap([r.epoch for r in records], [r.profile.eed_percent for r in records], caption="",
                     ax=heatmap, title=f"{title}: EED over training" if title else "EED over training")
    add_caption(fig, caption, what)
    return fig


def plot_pruning(records: Mapping[str, dict], caption: str, blocks: Sequence[int] = (0, 3, 6, 11),
                 what: str = "k-NN accuracy after projecting each block's tokens onto their top k principal "
                             "directions, and the fewest directions that keep most of it.") -> plt.Figure:
    """Spectral pruning (:mod:`ib_tutorial.measure.pruning`), one row per labelled record, the
    record's label over its row: k-NN accuracy against the number of principal directions
    kept for a few blocks, each block's N_eff marked on its curve; and per block, the fewest
    directions that keep 95 % of the unpruned accuracy beside N_eff. Log axes are labelled in
    plain numbers (1, 10, 100)."""
    fig = plt.figure(figsize=(10, 3.6 * len(records)), layout="constrained")
    rows = np.atleast_1d(fig.subfigures(len(records), 1))
    for row, (label, record) in zip(rows, records.items()):
        curves, sufficient = row.subplots(1, 2)
        row.suptitle(label, fontsize="medium")
        by_block = {b["block"]: b for b in record["blocks"]}
        for index, block in enumerate(blocks):
            entry = by_block[block]
            line, = curves.plot(entry["ks"], entry["accuracy"], label=f"L{block}", color=f"C{index}")
            curves.axvline(entry["n_eff"], color=line.get_color(), linestyle=":", lw=1)
        curves.set_xscale("log")
        curves.set(xlabel="principal directions kept, k (dotted: N_eff)", ylabel="k-NN top-1 (%)",
                   title="accuracy of pruned features")
        curves.legend(fontsize="x-small", title="block", title_fontsize="x-small", loc="upper left",
                      bbox_to_anchor=(1.01, 1.0))
        order = sorted(by_block)
        sufficient.plot(order, [by_block[b]["sufficient_k"] for b in order], marker="o", color="C0",
                        label=f"fewest k keeping {record['keep_fraction']:.0%}\nof the accuracy")
        sufficient.plot(order, [by_block[b]["n_eff"] for b in order], marker="s", linestyle="--", color="C1",
                        label="N_eff of the tokens")
        sufficient.set(xlabel="block index l", ylabel="directions", title="directions needed", yscale="log")
        sufficient.set_xticks(order)
        sufficient.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
        for ax, axis in ((curves, curves.xaxis), (sufficient, sufficient.yaxis)):
            axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
            axis.set_minor_formatter(ticker.NullFormatter())
            ax.grid(alpha=0.3, which="both")
    add_caption(fig, caption, what)
    return fig


def plot_measurements(profiles: Mapping[str, Sequence[ProfileRecord]], caption: str, ax: plt.Axes | None = None,
                      title: str = "") -> plt.Axes:
    """The same teachers measured several ways (label -> profile records by epoch): each
    measurement's EED% per block at the random initialisation (dashed) and at the last
    epoch (solid), in one colour per measurement."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    for colour, (label, records) in zip(distinct_colours(len(profiles)), profiles.items()):
        first, last = records[0], records[-1]
        ax.plot(last.profile.eed_percent, marker="o", color=colour, label=f"{label}, epoch {last.epoch}")
        ax.plot(first.profile.eed_percent, linestyle="--", color=colour, alpha=0.7)
    ax.plot([], [], linestyle="--", color="0.4", label="dashed: random init")
    ax.set(xlabel="block index l (0 = first transformer block)", ylabel="EED (% of width D)", title=title)
    ax.set_xticks(range(last.profile.depth))
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if caption:
        add_caption(ax.figure, caption)
    return ax


def plot_texture_knob(
    texture_weights: Sequence[float],
    eed_by_label: Mapping[str, Sequence[float]],
    blocks: Sequence[int],
    caption: str,
    ax: plt.Axes | None = None,
) -> plt.Axes:
    """Mean EED% over ``blocks`` against the synthetic worlds' ``texture_weight`` (0 = objects,
    1 = textures), one series per labelled set of profiles (e.g. random init and trained),
    styled as in :func:`plot_block_profile`. Points are joined only when there are three or
    more: two measured worlds say nothing about the values between them."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    order = np.argsort(texture_weights)
    for label, values in eed_by_label.items():
        style = line_style(label)
        if len(texture_weights) < 3:
            style["linestyle"] = "none"
        ax.plot(np.asarray(texture_weights)[order], np.asarray(values)[order], label=label, **style)
    ax.set_xlim(-0.05, 1.05)
    ax.set_xlabel("texture_weight (0 = object world, 1 = texture world)")
    ax.set_ylabel(f"mean EED of blocks L{min(blocks)}-L{max(blocks)} (% of width D)")
    ax.set_title("Middle-block EED across the texture knob")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if caption:
        add_caption(ax.figure, caption)
    return ax


def knob_colours(weights: Sequence[float]) -> list:
    """One colour per ``texture_weight``, from the object end (dark) to the texture end
    (light), evenly spaced by rank: weights dense near 0 stay apart."""
    ranks, steps = sorted(weights), max(len(weights) - 1, 1)
    return [plt.cm.viridis(0.9 * ranks.index(weight) / steps) for weight in weights]


def plot_knob_profiles(runs: Mapping[float, Sequence[ProfileRecord]], caption: str) -> plt.Figure:
    """A knob sweep block by block, one colour per weight: each ``texture_weight``'s last saved
    profile (solid) and its random initialisation (dashed), EED% of the width (left), and what
    training changed in each block (right: last minus initialisation, with its paired
    bootstrap band where both profiles carry replicates), which sets learning apart from the
    input's own statistics that the initialisation already shows.

    Args:
        runs: ``texture_weight`` -> the run's profile records by epoch, ascending in weight.
    """
    fig, (levels, changes) = panel_grid(2, 5.2, 4.0)
    level = None
    for colour, (weight, records) in zip(knob_colours(list(runs)), runs.items()):
        last, first = records[-1], records[0]
        blocks = range(last.profile.depth)
        levels.plot(blocks, last.profile.eed_percent, marker="o", color=colour, label=f"w = {weight:g}, {epoch_label(last)}")
        levels.plot(blocks, first.profile.eed_percent, linestyle="--", color=colour, alpha=0.6)
        level = draw_block_changes(changes, profile_shape(first), profile_shape(last), colour, f"w = {weight:g}") or level
    levels.plot([], [], linestyle="--", color="0.4", label="dashed: each one's random init")
    changes.axhline(0, color="0.4", lw=1)
    for ax, title, ylabel in ((levels, "EED per block", "EED (% of width D)"),
                              (changes, "what training changed", "EED change from random init (points)")):
        ax.set_xticks(range(last.profile.depth))
        ax.set(xlabel="block index l (0 = first transformer block)", ylabel=ylabel, title=title)
        ax.grid(alpha=0.3)
    levels.set_ylim(bottom=0)
    fig.suptitle("synthetic-mix along the texture knob w (0 = objects, 1 = textures)")
    # Beside the panels, where it covers no curve (inside, it hid the upper ones).
    fig.legend(*levels.get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    add_caption(fig, caption + (f" Bands: {level:.0%} paired bootstrap intervals over the images." if level else ""))
    return fig


def draw_block_changes(ax: plt.Axes, first: ShapeSummary, last: ShapeSummary, color, label: str) -> float | None:
    """Each block's EED change (points) from ``first`` to ``last`` on ``ax``, with its paired
    bootstrap band when both profiles carry replicates; returns the band's level (None without)."""
    blocks = range(len(last.n_eff))
    level = None
    if first.bootstrap is not None and last.bootstrap is not None:
        gained = block_changes(first, last)
        ax.fill_between(blocks, [c.low for c in gained], [c.high for c in gained], color=color, alpha=0.25, lw=0)
        level = gained[0].level
    ax.plot(blocks, np.subtract(last.eed_percent, first.eed_percent), "-o", color=color, label=label)
    return level


def plot_knob_knn(curves: Mapping[float, Sequence[Mapping]], chance: float | None, caption: str) -> plt.Figure:
    """k-NN top-1 on the CLS token against epoch for each ``texture_weight`` of a sweep, in
    the colours of :func:`plot_knob_profiles`, with chance (grey; in percent, when known)."""
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    for colour, (weight, records) in zip(knob_colours(list(curves)), curves.items()):
        ax.plot([r["epoch"] for r in records], [r["top1"] for r in records], marker="o", color=colour,
                label=f"w = {weight:g}")
    if chance is not None:
        ax.axhline(chance, color="0.6", lw=1.5, label=f"chance ({chance:g} %)")
    ax.set(xlabel="epoch (0 = random init)", ylabel="k-NN top-1 on the CLS token (%)",
           title="Learning along the texture knob")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    add_caption(fig, caption)
    return fig


def plot_profile_shapes(shapes: Mapping[str, Sequence[ShapeSummary]], caption: str, margin: float = MARGIN) -> plt.Figure:
    """The claims' two statistics at every saved epoch, one line per labelled run: the
    middle dip (left; the paper's Tiny ImageNet profile: about 107 directions of 384) and the
    late rise (right), in effective directions, with the margin a claim must exceed
    shaded."""
    fig, (dip, rise) = panel_grid(2, 5.0, 3.6)
    for colour, (label, run) in zip(distinct_colours(len(shapes)), shapes.items()):
        epochs = [shape.epoch for shape in run]
        dip.plot(epochs, [shape.middle_dip for shape in run], marker="o", color=colour, label=label)
        rise.plot(epochs, [shape.late_rise for shape in run], marker="o", color=colour, label=label)
    style_gap_axes(dip, rise, margin, "epoch (0 = random init)")
    add_caption(fig, caption)
    return fig


def style_gap_axes(dip: plt.Axes, rise: plt.Axes, margin: float, xlabel: str) -> None:
    """Titles, labels, zero line and the shaded margin of the two panels (middle dip and
    late rise, both signed); the first panel's legend beside the panels, off the data."""
    for ax, title, ylabel in (
            (dip, "middle dip", "min(early, late) - middle (directions)"),
            (rise, "late rise", "late - middle (directions)")):
        ax.axhspan(-margin, margin, color="0.85", lw=0, label=f"within the margin ({margin:g} direction)")
        ax.axhline(0, color="0.4", lw=1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3)
    dip.figure.legend(*dip.get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")


def plot_seed_profiles(spread: SeedSpread, caption: str) -> plt.Figure:
    """Runs that differ only in their seed, block by block: each seed's last profile (solid,
    with its bootstrap band) and random initialisation (dashed) in EED% (left), and what
    training changed in each block, with its paired bootstrap band (right). Bands wider apart
    than they are wide are differences between the networks, not between the images."""
    fig, (levels, changes) = panel_grid(2, 5.0, 3.8)
    for index, run in enumerate(spread.runs):
        color, blocks = f"C{index}", range(len(run.last.n_eff))
        bands = run.last.bootstrap.intervals(percent=True)
        levels.fill_between(blocks, [b.low for b in bands], [b.high for b in bands], color=color, alpha=0.25, lw=0)
        levels.plot(blocks, run.last.eed_percent, "-o", color=color, label=f"seed {run.seed}, epoch {run.last.epoch}")
        levels.plot(blocks, run.first.eed_percent, "--s", color=color, markerfacecolor="none",
                    label=f"seed {run.seed}, random init")
        draw_block_changes(changes, run.first, run.last, color, f"seed {run.seed}")
    changes.axhline(0, color="0.4", lw=1)
    for ax, title, ylabel in ((levels, "EED per block, each seed", "EED (% of width D)"),
                              (changes, "what training changed", "EED change from random init (points)")):
        ax.set_xticks(range(len(spread.runs[0].last.n_eff)))
        ax.set_xlabel("block index l (0 = first transformer block)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3)
    # One legend beside the panels: the right panel's lines are the left's seeds, in the same colours.
    fig.legend(*levels.get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
    levels.set_ylim(bottom=0)
    add_caption(fig, caption + f" Bands: {spread.runs[0].last.bootstrap.level:.0%} bootstrap intervals over the images.")
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
    # The colour range follows the data (small changes stay visible); the numbers are printed
    # in the cells when there are few enough epochs to read them.
    image = ax.imshow(values, aspect="auto", origin="lower", cmap="viridis")
    if values.shape[1] <= 12:
        middle = (values.min() + values.max()) / 2
        for (block, column), value in np.ndenumerate(values):
            ax.text(column, block, f"{value:.1f}", ha="center", va="center",
                    fontsize="small" if values.shape[1] <= 8 else "x-small",
                    color="white" if value < middle else "black")
    ax.set_xticks(range(len(epochs)), [str(e) for e in epochs])
    ax.set_yticks(range(values.shape[0]))
    ax.set_xlabel("epoch (0 = random initialisation)")
    ax.set_ylabel("block index l")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="EED (% of width D)")
    if caption:
        add_caption(ax.figure, caption)
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
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if caption:
        add_caption(ax.figure, caption)
    return ax


def plot_knn_curves(
    curves: Mapping[str, Sequence[Mapping]],
    caption: str,
    chance: Mapping[str, float] | None = None,
    what: str = "k-NN top-1 accuracy of each run's frozen features at every evaluation, from the random initialisation.",
) -> plt.Figure:
    """k-NN top-1 accuracy against epoch, one panel per labelled run: the CLS token (solid)
    and mean-pooled patch tokens (dashed), the random initialisation (epoch 0) marked by a
    dotted line, chance by a grey band edge.

    Args:
        curves: label -> the run's ``"knn"`` records of ``metrics.jsonl``.
        chance: label -> chance accuracy in percent (100 / number of classes).
    """
    fig, axes = panel_grid(len(curves), 6.5 if len(curves) == 1 else 4.5, 3.2)  # one panel: the page's width
    for ax, (label, records) in zip(axes, curves.items()):
        epochs = [r["epoch"] for r in records]
        ax.plot(epochs, [r["top1"] for r in records], marker="o", label="CLS token")
        if all("top1_mean" in r for r in records):
            ax.plot(epochs, [r["top1_mean"] for r in records], marker="s", linestyle="--", label="mean patch token")
        ax.axhline(records[0]["top1"], color="0.4", linestyle=":", lw=1, label="CLS at random init")
        if chance and label in chance:
            ax.axhline(chance[label], color="0.7", lw=1, label="chance")
        ax.set_xlabel("epoch")
        ax.set_ylabel("k-NN top-1 (%)")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("k-NN accuracy over training (of the teacher, for DINO runs)")
    add_caption(fig, caption, what)
    return fig


def panel_grid(count: int, width: float, height: float, sharey: bool = False) -> tuple[plt.Figure, list[plt.Axes]]:
    """``count`` panels of ``width`` x ``height`` inches, at most two a row, so a figure of
    several datasets stays legible at the page's width; unused cells are hidden."""
    columns = min(count, 2)
    rows = -(-count // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), sharey=sharey,
                             layout="constrained", squeeze=False)
    flat = list(axes.flat)
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]
