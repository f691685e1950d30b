"""Figures and their captions: per-block profiles, the profile explorer, the EED chapter's spectra.

A figure's caption is one sentence of what it shows over one smaller line of provenance
(what was measured, on which data, by which code, whether the run was reduced):
:func:`add_caption` draws both; the ``*_caption`` functions write the provenance of stored results.

The explorer renders every epoch's figure to a PNG inside a ``Stack`` linked to the epoch
slider in the browser (``jslink``), so the slider works in the static book; changing dataset,
tokens or metric needs a live kernel.
"""
from __future__ import annotations

import functools
import io
import math
import textwrap
from collections import defaultdict
from collections.abc import Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib import ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Annotation

from ..measure import metrics
from ..measure.block_profile import Profile
from ..models import MODEL_NAMES
from ..presets import PRESETS
from .bundles import Bundle, BundleRun
from .claims import MARGIN, SeedSpread, ShapeSummary, block_changes, profile_shape
from .dataset_runs import DatasetRun
from .paper import ABOUT_TOLERANCE, REPORTED, ReportedProfile
from .records import ProfileRecord


def _reduced(preset: str) -> str:
    """The caption's flag for a run of an illustrative preset (:attr:`~ib_tutorial.presets.Preset.illustrative`)."""
    illustrative = preset in PRESETS and PRESETS[preset].illustrative
    return " (reduced: a few steps, illustrative)" if illustrative else ""


def profile_caption(record: ProfileRecord) -> str:
    """The caption line of a figure drawn from a profile record: preset (flagged when
    reduced), model and width, images, tokens, centring, and the code that measured it."""
    p, profile = record.provenance, record.profile
    reduced = _reduced(p.preset)
    model = MODEL_NAMES.get(profile.dim, "ViT")
    centring = "centred" if profile.center else "uncentred"
    what = record.label if record.label.startswith(p.dataset) else f"{p.dataset}: {record.label}"
    return (f"preset {p.preset}{reduced}; {what}; {model} (D = {profile.dim}), {p.n_images} held-out images, "
            f"{p.n_tokens:,} tokens ({profile.tokens}, {centring}); code {p.code_version[:10]}, {p.date[:10]}")


def pruning_caption(record: dict) -> str:
    """The caption line of a figure drawn from a pruning record: what was pruned, on which
    images, by which code."""
    p = record["provenance"]
    reduced = _reduced(p["preset"])
    return (f"preset {p['preset']}{reduced}; {p['dataset']}: teacher of epoch {record['epoch']}, {record['pool']}-pooled "
            f"features; directions fitted on {record['blocks'][0]['n_tokens']:,} training tokens; k-NN over "
            f"{p['n_images']:,} images (train against held-out); code {p['code_version'][:10]}")


def bundle_caption(bundle: Bundle) -> str:
    """What made the bundle, from the newest profile of its first run (see
    :func:`profile_caption`), with each run's held-out images where the runs differ in them,
    and each run's width where they differ in it (the first run's model would otherwise name
    them all)."""
    newest = next(iter(bundle.runs.values())).profiles[-1]
    counts = {spec: run.profiles[-1].provenance.n_images for spec, run in bundle.runs.items()}
    images = ("" if len(set(counts.values())) == 1 else
              "; held-out images per dataset: " + ", ".join(f"{spec} {n}" for spec, n in counts.items()))
    widths = {spec: run.profiles[-1].profile.dim for spec, run in bundle.runs.items()}
    if len(set(widths.values())) > 1:
        runs = ", ".join(f"{spec} {MODEL_NAMES.get(dim, 'ViT')} (D = {dim})" for spec, dim in widths.items())
        return f"bundle {bundle.name}, runs of several widths ({runs}); its first run: {profile_caption(newest)}{images}"
    return f"bundle {bundle.name}: {profile_caption(newest)}{images}"


def run_caption(entry: DatasetRun) -> str:
    """What made a dataset run's figures: the bundle, the run, and its last profile's
    provenance (:func:`profile_caption`)."""
    return f"bundle {entry.bundle.name}, run {entry.spec}: {profile_caption(entry.run.profiles[-1])}"


def published_caption(record: ProfileRecord) -> str:
    """The caption line of a figure drawn from a published model's profile record: the
    model, its weights (file or hub, with their SHA-256), input, data, tokens, centring
    and the code that measured it."""
    p, profile = record.provenance, record.profile
    centring = "centred" if profile.center else "uncentred"
    return (f"{p.model} (D = {profile.dim}), weights {p.weights} (SHA-256 {p.weights_sha256[:12]}), "
            f"{p.input_size} px; {p.dataset_spec}: {p.n_images} held-out images of preset {p.preset}, "
            f"{p.n_tokens:,} tokens ({profile.tokens}, {centring}); code {p.code_version[:10]}, {p.date[:10]}")


#: The PNG text keyword (one the PNG standard defines) under which :func:`add_caption`
#: also saves a figure's caption: drawn into the pixels, it cannot be read from a built page.
CAPTION_KEY = "Description"


def add_caption(figure: plt.Figure, provenance: str, what: str | None = None) -> None:
    """Caption ``figure`` under its axes: ``what`` it shows, one sentence, and under it
    ``provenance`` (what was run) on a smaller grey line, wrapped only where it is wider than
    the figure. Without ``what`` the provenance line alone. The constrained layout leaves room
    for both without squeezing the axes.

    On an Agg canvas (pyplot's, and a notebook's inline display) every PNG of the figure
    also carries the caption as text under :data:`CAPTION_KEY`, so a check of the built
    book (``tests/book_pages.py``) can tell a captioned figure from one without."""
    width = figure.get_figwidth()
    lines = textwrap.wrap(provenance, width=int(width * 16), break_on_hyphens=False) or [""]
    if what is None:
        figure.supxlabel("\n".join(lines), fontsize="x-small", color="0.35")
    else:
        # The sentence is the figure's x label; blank lines under it keep the provenance's room,
        # and the provenance is anchored to the sentence, so the layout moves both together.
        said = textwrap.wrap(what, width=int(width * 13), break_on_hyphens=False)
        sentence = figure.supxlabel("\n".join(said + [" "] * len(lines)), fontsize="small")
        figure.add_artist(Annotation("\n".join(lines), xy=(0.5, 0), xycoords=sentence, xytext=(0, 1),
                                     textcoords="offset points", ha="center", va="bottom", fontsize="x-small",
                                     color="0.35", annotation_clip=False))
    text = provenance if what is None else f"{what} {provenance}"
    # Matplotlib takes PNG metadata only as an argument of each save: the figure's own
    # canvas supplies it by default (an explicit ``metadata=`` still wins). A Figure made
    # without pyplot has no such canvas; saving it borrows a new one, without the caption.
    if isinstance(figure.canvas, FigureCanvasAgg):
        figure.canvas.print_png = functools.partial(figure.canvas.print_png, metadata={CAPTION_KEY: text})


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


def epoch_label(record: ProfileRecord) -> str:
    """``epoch N``, with ``(random init)`` for epoch 0: the legend entry of a stored profile."""
    return f"epoch {record.epoch}" + (" (random init)" if record.epoch == 0 else "")


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
    style_change_axes(levels, changes, last.profile.depth, "EED per block")
    fig.suptitle("synthetic-mix along the texture knob w (0 = objects, 1 = textures)")
    # Beside the panels, where it covers no curve (inside, it hid the upper ones).
    fig.legend(*levels.get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    add_caption(fig, caption + (f" Bands: {level:.0%} paired bootstrap intervals over the images." if level else ""))
    return fig


def style_change_axes(levels: plt.Axes, changes: plt.Axes, depth: int, levels_title: str) -> None:
    """Blocks, labels and grid of the two panels of EED% (from 0) and its change from the
    random initialisation (around a zero line)."""
    changes.axhline(0, color="0.4", lw=1)
    for ax, title, ylabel in ((levels, levels_title, "EED (% of width D)"),
                              (changes, "what training changed", "EED change from random init (points)")):
        ax.set_xticks(range(depth))
        ax.set(xlabel="block index l (0 = first transformer block)", ylabel=ylabel, title=title)
        ax.grid(alpha=0.3)
    levels.set_ylim(bottom=0)


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
    style_change_axes(levels, changes, len(spread.runs[0].last.n_eff), "EED per block, each seed")
    # One legend beside the panels: the right panel's lines are the left's seeds, in the same colours.
    fig.legend(*levels.get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
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


METRIC_LABELS = {
    "eed_percent": "EED (% of width D)",
    "n_eff": "N_eff (dimensions)",
    "rankme": "RankMe (dimensions)",
    "participation_ratio": "participation ratio (dimensions)",
    "twonn": "TwoNN intrinsic dimension",
}


def _metric_values(record: ProfileRecord, metric: str) -> list[float]:
    profile = record.profile
    return getattr(profile, metric) if metric in ("eed_percent", "n_eff") else profile.companions[metric]


def _index_records(records: Sequence[ProfileRecord]) -> dict[tuple[str, str], dict[int, ProfileRecord]]:
    """(dataset, tokens) -> {epoch: record}; a record without an epoch counts as epoch 0."""
    index: dict[tuple[str, str], dict[int, ProfileRecord]] = defaultdict(dict)
    for record in records:
        index[(record.provenance.dataset, record.profile.tokens)][record.epoch or 0] = record
    return dict(index)


def render_profile_png(by_epoch: dict[int, ProfileRecord], epoch: int, metric: str, dataset: str) -> bytes:
    """PNG of one metric per block at ``epoch``, the other epochs drawn faintly for context."""
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    for other, record in sorted(by_epoch.items()):
        if other != epoch:
            ax.plot(_metric_values(record, metric), color="0.8", lw=1)
    record = by_epoch[epoch]
    values = _metric_values(record, metric)
    if metric == "eed_percent" and dataset in REPORTED:
        draw_reported(ax, REPORTED[dataset])
    ax.plot(values, marker="o", color="C0", label=f"epoch {epoch}")
    ax.plot([], [], color="0.8", label="other epochs")
    ax.set_xticks(range(len(values)))
    ax.set_xlabel("block index l (0 = first transformer block)")
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    if metric == "eed_percent":
        ax.set_ylim(0, 100)
    ax.set_title(f"{dataset}: {METRIC_LABELS.get(metric, metric)} per block")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    add_caption(fig, profile_caption(record))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


def profile_explorer(records: Sequence[ProfileRecord]) -> widgets.VBox:
    """Explore stored profile records (see :mod:`ib_tutorial.book.records`) by dataset, token
    choice, metric and epoch."""
    if not records:
        raise ValueError("no profile records to explore; run `ib-tutorial profile RUN_DIR` first")
    index = _index_records(records)
    dataset = widgets.Dropdown(options=sorted({d for d, _ in index}), description="dataset")
    tokens = widgets.Dropdown(description="tokens")
    metric = widgets.Dropdown(description="metric")
    epoch = widgets.SelectionSlider(options=[0], description="epoch", continuous_update=True)
    stack = widgets.Stack()
    widgets.jslink((epoch, "index"), (stack, "selected_index"))

    updating = False

    def refresh(_change=None):
        """Make the token and metric choices fit the dataset, then render every epoch."""
        nonlocal updating
        if updating:
            return
        updating = True
        try:
            token_choices = sorted(t for d, t in index if d == dataset.value)
            if tokens.value not in token_choices:
                tokens.options = token_choices
                tokens.value = token_choices[0]
            by_epoch = index[(dataset.value, tokens.value)]
            shared = set.intersection(*(set(r.profile.companions) for r in by_epoch.values()))
            metric_choices = ["eed_percent", "n_eff", *sorted(shared)]
            if list(metric.options) != [(METRIC_LABELS.get(m, m), m) for m in metric_choices]:
                previous = metric.value
                metric.options = [(METRIC_LABELS.get(m, m), m) for m in metric_choices]
                metric.value = previous if previous in metric_choices else "eed_percent"
            epochs = sorted(by_epoch)
            stack.children = [widgets.Image(value=render_profile_png(by_epoch, e, metric.value, dataset.value),
                                            format="png") for e in epochs]
            epoch.options = epochs
            epoch.index = len(epochs) - 1
            stack.selected_index = epoch.index
        finally:
            updating = False

    for control in (dataset, tokens, metric):
        control.observe(refresh, "value")
    refresh()
    return widgets.VBox([widgets.HBox([dataset, tokens, metric]), epoch, stack])


#: The floor below which a share of variance is drawn, so that exact zeros stay on the log axis.
FLOOR = 1e-8


def plot_spectra(samples: Mapping[str, torch.Tensor]) -> plt.Figure:
    r"""The normalised covariance spectrum :math:`p_k = \lambda_k / \sum_j \lambda_j` of each
    feature matrix of ``samples`` (name -> [N, D]) on a log axis, labelled with its
    :math:`N_\mathrm{eff}`; shares below :data:`FLOOR` are drawn at it."""
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for name, features in samples.items():
        spectrum = metrics.covariance_spectrum(features)
        shares = (spectrum / spectrum.sum()).clamp_min(FLOOR)
        n_eff = metrics.effective_encoding_dimension(features)
        ax.semilogy(range(1, len(shares) + 1), shares, marker=".", label=f"{name} (N_eff = {n_eff:.1f})")
    ax.set(xlabel="principal direction k (sorted by variance)", ylabel="share of total variance p_k",
           title="Normalised covariance spectra and their effective dimension")
    ax.legend()
    n, d = next(iter(samples.values())).shape
    add_caption(fig, f"{n} Gaussian samples per spectrum, D = {d}; values below {FLOOR:g} drawn at {FLOOR:g}")
    return fig
