"""Figures and their captions: per-block profiles, the profile explorer, the EED chapter's spectra.

A caption is one sentence of what a figure shows over a smaller line of provenance
(:func:`add_caption`); the ``*_caption`` functions write the provenance of stored results.
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
    """The caption's flag for an illustrative preset (:attr:`~ib_tutorial.presets.Preset.illustrative`)."""
    illustrative = preset in PRESETS and PRESETS[preset].illustrative
    return " (reduced: a few steps, illustrative)" if illustrative else ""


def profile_caption(record: ProfileRecord) -> str:
    """The provenance line of a figure drawn from a profile record."""
    p, profile = record.provenance, record.profile
    reduced = _reduced(p.preset)
    model = MODEL_NAMES.get(profile.dim, "ViT")
    centring = "centred" if profile.center else "uncentred"
    what = record.label if record.label.startswith(p.dataset) else f"{p.dataset}: {record.label}"
    return (f"preset {p.preset}{reduced}; {what}; {model} (D = {profile.dim}), {p.n_images} held-out images, "
            f"{p.n_tokens:,} tokens ({profile.tokens}, {centring}); code {p.code_version[:10]}, {p.date[:10]}")


def pruning_caption(record: dict) -> str:
    """The provenance line of a figure drawn from a pruning record."""
    p = record["provenance"]
    reduced = _reduced(p["preset"])
    return (f"preset {p['preset']}{reduced}; {p['dataset']}: teacher of epoch {record['epoch']}, {record['pool']}-pooled "
            f"features; directions fitted on {record['blocks'][0]['n_tokens']:,} training tokens; k-NN over "
            f"{p['n_images']:,} images (train against held-out); code {p['code_version'][:10]}")


def bundle_caption(bundle: Bundle) -> str:
    """The bundle's first run's newest profile, and each run's images and width where they differ."""
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
    """The bundle, the run, and its last profile's provenance (:func:`profile_caption`)."""
    return f"bundle {entry.bundle.name}, run {entry.spec}: {profile_caption(entry.run.profiles[-1])}"


def published_caption(record: ProfileRecord) -> str:
    """The provenance line of a figure drawn from a published model's profile record."""
    p, profile = record.provenance, record.profile
    centring = "centred" if profile.center else "uncentred"
    return (f"{p.model} (D = {profile.dim}), weights {p.weights} (SHA-256 {p.weights_sha256[:12]}), "
            f"{p.input_size} px; {p.dataset_spec}: {p.n_images} held-out images of preset {p.preset}, "
            f"{p.n_tokens:,} tokens ({profile.tokens}, {centring}); code {p.code_version[:10]}, {p.date[:10]}")


#: The PNG text keyword (one the PNG standard defines) under which :func:`add_caption`
#: also saves a figure's caption: drawn into the pixels, it cannot be read from a built page.
CAPTION_KEY = "Description"


def add_caption(figure: plt.Figure, provenance: str, what: str | None = None) -> None:
    """Caption ``figure`` under its axes: ``what`` it shows, one sentence, over ``provenance``
    on a smaller grey line (alone without ``what``).

    On an Agg canvas every PNG of the figure also carries the caption under
    :data:`CAPTION_KEY`, so a check of the built book (``tests/book_pages.py``) can tell a
    captioned figure from one without."""
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
    """The paper's reported EED% ranges over their blocks: a grey box where a range lies under
    ``top`` (the axis's upper limit), else its numbers over the frame."""
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


def plot_block_profile(profiles: Mapping[str, Profile], caption: str, ax: plt.Axes | None = None,
                       title: str = "Effective Encoding Dimension per block", reported: ReportedProfile | None = None,
                       full_range: bool = False) -> plt.Axes:
    """EED% against block index, one line per labelled profile, the legend beside the axes.

    A label containing "random init" is drawn grey, dashed and above the others, so it stays
    visible under them. The axis is scaled to the profiles drawn (small differences stay
    visible), or 0-100 % with ``full_range``; ``reported`` is drawn by :func:`draw_reported`.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
    trained = [label for label in profiles if "random init" not in label]
    colours = dict(zip(trained, distinct_colours(len(trained))))
    for label, profile in profiles.items():
        if label in colours:
            style = dict(marker="o", color=colours[label])
        else:
            style = dict(color="0.45", linestyle="--", marker="s", markerfacecolor="none", zorder=3)
        ax.plot(range(profile.depth), profile.eed_percent, label=label, **style)
    highest = max(max(profile.eed_percent) for profile in profiles.values())
    block_axes(ax, max(p.depth for p in profiles.values()), EED_LABEL, title)
    ax.set_ylim(0, 100 if full_range else min(100.0, 1.15 * highest + 1.0))
    if reported is not None:
        draw_reported(ax, reported, top=ax.get_ylim()[1])
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if caption:
        add_caption(ax.figure, caption)
    return ax


BLOCK_LABEL = "block index l (0 = first transformer block)"
EED_LABEL = "EED (% of width D)"


def block_axes(ax: plt.Axes, depth: int, ylabel: str, title: str | None = None) -> None:
    """One tick a block, the axes' labels and title, and a light grid."""
    ax.set_xticks(range(depth))
    ax.set(xlabel=BLOCK_LABEL, ylabel=ylabel)
    if title is not None:
        ax.set_title(title)
    ax.grid(alpha=0.3)


def distinct_colours(count: int) -> list:
    """``count`` colours no two alike: the default cycle's ten, or beyond, evenly spaced along viridis."""
    if count <= 10:
        return [f"C{index}" for index in range(count)]
    return [plt.cm.viridis(0.95 * index / (count - 1)) for index in range(count)]


def epoch_label(record: ProfileRecord) -> str:
    """``epoch N``, with ``(random init)`` for epoch 0."""
    return f"epoch {record.epoch}" + (" (random init)" if record.epoch == 0 else "")


def plot_run_comparison(runs: Mapping[str, BundleRun], caption: str) -> plt.Figure:
    """Runs that differ in one setting: EED% and N_eff per block, last solid, random init dashed."""
    fig, (percent, directions) = panel_grid(2, 5.0, 3.8)
    for index, (label, run) in enumerate(runs.items()):
        color = f"C{index}"
        for record, style in ((run.profiles[-1], "-"), (run.profiles[0], "--")):
            name = f"{label}, {epoch_label(record)}"
            for ax, values in ((percent, record.profile.eed_percent), (directions, record.profile.n_eff)):
                ax.plot(range(len(values)), values, style, color=color, marker="o" if style == "-" else "s",
                        markerfacecolor=None if style == "-" else "none", label=name)
    depth = next(iter(runs.values())).profiles[-1].profile.depth
    block_axes(percent, depth, EED_LABEL, "EED per block, as a share of the width")
    block_axes(directions, depth, "N_eff (directions)", "effective directions per block")
    for ax in (percent, directions):
        ax.set_ylim(bottom=0)
    fig.legend(*percent.get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
    add_caption(fig, caption)
    return fig


def plot_run_epochs(records: Sequence[ProfileRecord], caption: str, title: str = "",
                    reported: ReportedProfile | None = None) -> plt.Figure:
    """One run's EED% per block at every saved epoch, a line an epoch, over their heatmap."""
    # One panel a row, each the page's width: side by side, the heatmap's numbers shrank below legibility.
    fig, (curves, heatmap) = plt.subplots(2, 1, figsize=(7.5, 9.5), layout="constrained")
    plot_block_profile({epoch_label(r): r.profile for r in records}, caption="", ax=curves,
                       title=f"{title}: EED per block, every saved epoch" if title else "EED per block, every saved epoch",
                       reported=reported)
    plot_eed_heatmap([r.epoch for r in records], [r.profile.eed_percent for r in records], caption="",
                     ax=heatmap, title=f"{title}: EED over training" if title else "EED over training")
    add_caption(fig, caption, "EED of every block at every saved epoch of one run, as lines and as a heatmap.")
    return fig


def plot_pruning(records: Mapping[str, dict], caption: str) -> plt.Figure:
    """Spectral pruning (:mod:`ib_tutorial.measure.pruning`), one row per labelled record: k-NN
    accuracy against the principal directions kept for blocks 0, 3, 6 and 11, N_eff dotted; and
    per block, the fewest directions that keep most of the accuracy beside N_eff."""
    fig = plt.figure(figsize=(10, 3.6 * len(records)), layout="constrained")
    rows = np.atleast_1d(fig.subfigures(len(records), 1))
    for row, (label, record) in zip(rows, records.items()):
        curves, sufficient = row.subplots(1, 2)
        row.suptitle(label, fontsize="medium")
        by_block = {b["block"]: b for b in record["blocks"]}
        for index, block in enumerate((0, 3, 6, 11)):
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
    add_caption(fig, caption, "k-NN accuracy after projecting each block's tokens onto their top k principal "
                "directions, and the fewest directions that keep most of it.")
    return fig


def plot_measurements(profiles: Mapping[str, Sequence[ProfileRecord]], caption: str, ax: plt.Axes | None = None,
                      title: str = "") -> plt.Axes:
    """The same teachers measured several ways: EED% per block at init (dashed) and at the end."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    for colour, (label, records) in zip(distinct_colours(len(profiles)), profiles.items()):
        first, last = records[0], records[-1]
        ax.plot(last.profile.eed_percent, marker="o", color=colour, label=f"{label}, epoch {last.epoch}")
        ax.plot(first.profile.eed_percent, linestyle="--", color=colour, alpha=0.7)
    ax.plot([], [], linestyle="--", color="0.4", label="dashed: random init")
    block_axes(ax, last.profile.depth, EED_LABEL, title)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if caption:
        add_caption(ax.figure, caption)
    return ax


def knob_colours(weights: Sequence[float]) -> list:
    """One colour per ``texture_weight``, objects dark to textures light, spaced by rank."""
    ranks, steps = sorted(weights), max(len(weights) - 1, 1)
    return [plt.cm.viridis(0.9 * ranks.index(weight) / steps) for weight in weights]


def plot_knob_profiles(runs: Mapping[float, Sequence[ProfileRecord]], caption: str) -> plt.Figure:
    """A knob sweep (``texture_weight`` -> records by epoch): EED% at the end (solid) and at init
    (dashed), and what training changed in each block, apart from the input's own statistics."""
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
    """The two panels of EED% and of its change from the random initialisation."""
    changes.axhline(0, color="0.4", lw=1)
    block_axes(levels, depth, EED_LABEL, levels_title)
    block_axes(changes, depth, "EED change from random init (points)", "what training changed")
    levels.set_ylim(bottom=0)


def draw_block_changes(ax: plt.Axes, first: ShapeSummary, last: ShapeSummary, color, label: str) -> float | None:
    """Each block's EED change (points) from ``first`` to ``last``, with its paired bootstrap
    band when both carry replicates; returns the band's level (None without)."""
    blocks = range(len(last.n_eff))
    level = None
    if first.bootstrap is not None and last.bootstrap is not None:
        gained = block_changes(first, last)
        ax.fill_between(blocks, [c.low for c in gained], [c.high for c in gained], color=color, alpha=0.25, lw=0)
        level = gained[0].level
    ax.plot(blocks, np.subtract(last.eed_percent, first.eed_percent), "-o", color=color, label=label)
    return level


def plot_knob_knn(curves: Mapping[float, Sequence[Mapping]], chance: float | None, caption: str) -> plt.Figure:
    """CLS k-NN top-1 against epoch for each ``texture_weight`` of a sweep, with chance (%) when known."""
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


def plot_profile_shapes(shapes: Mapping[str, Sequence[ShapeSummary]], caption: str) -> plt.Figure:
    """The claims' two statistics at every saved epoch, a line a run, in effective directions:
    the middle dip (left; the paper's Tiny ImageNet profile: about 107 directions of 384) and
    the late rise (right), with the :data:`~ib_tutorial.book.claims.MARGIN` a claim must exceed shaded."""
    fig, (dip, rise) = panel_grid(2, 5.0, 3.6)
    for colour, (label, run) in zip(distinct_colours(len(shapes)), shapes.items()):
        epochs = [shape.epoch for shape in run]
        dip.plot(epochs, [shape.middle_dip for shape in run], marker="o", color=colour, label=label)
        rise.plot(epochs, [shape.late_rise for shape in run], marker="o", color=colour, label=label)
    for ax, title, ylabel in ((dip, "middle dip", "min(early, late) - middle (directions)"),
                              (rise, "late rise", "late - middle (directions)")):
        ax.axhspan(-MARGIN, MARGIN, color="0.85", lw=0, label=f"within the margin ({MARGIN:g} direction)")
        ax.axhline(0, color="0.4", lw=1)
        ax.set(xlabel="epoch (0 = random init)", ylabel=ylabel, title=title)
        ax.grid(alpha=0.3)
    fig.legend(*dip.get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
    add_caption(fig, caption)
    return fig


def plot_seed_profiles(spread: SeedSpread, caption: str) -> plt.Figure:
    """Runs that differ only in their seed: each seed's last profile (solid, with its bootstrap
    band) and random initialisation (dashed) in EED%, and what training changed in each block.
    Bands wider apart than they are wide are differences between the networks, not the images."""
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
    """Block x epoch heatmap of EED% (``eed_by_epoch[i][l]``: block ``l`` at ``epochs[i]``)."""
    values = np.asarray(eed_by_epoch, dtype=float).T  # [blocks, epochs]
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    image = ax.imshow(values, aspect="auto", origin="lower", cmap="viridis")
    if values.shape[1] <= 12:
        middle = (values.min() + values.max()) / 2
        for (block, column), value in np.ndenumerate(values):
            ax.text(column, block, f"{value:.1f}", ha="center", va="center",
                    fontsize="small" if values.shape[1] <= 8 else "x-small",
                    color="white" if value < middle else "black")
    ax.set_xticks(range(len(epochs)), [str(e) for e in epochs])
    ax.set_yticks(range(values.shape[0]))
    ax.set(xlabel="epoch (0 = random initialisation)", ylabel="block index l", title=title)
    ax.figure.colorbar(image, ax=ax, label=EED_LABEL)
    if caption:
        add_caption(ax.figure, caption)
    return ax


def plot_knn_curves(curves: Mapping[str, Sequence[Mapping]], caption: str, chance: Mapping[str, float] | None = None
                    ) -> plt.Figure:
    """k-NN top-1 against epoch, a panel per run (label -> its ``"knn"`` records): the CLS token
    (solid), mean-pooled patch tokens (dashed), the random initialisation dotted, chance grey."""
    fig, axes = panel_grid(len(curves), 6.5 if len(curves) == 1 else 4.5, 3.2)  # one panel: the page's width
    for ax, (label, records) in zip(axes, curves.items()):
        epochs = [r["epoch"] for r in records]
        ax.plot(epochs, [r["top1"] for r in records], marker="o", label="CLS token")
        if all("top1_mean" in r for r in records):
            ax.plot(epochs, [r["top1_mean"] for r in records], marker="s", linestyle="--", label="mean patch token")
        ax.axhline(records[0]["top1"], color="0.4", linestyle=":", lw=1, label="CLS at random init")
        if chance and label in chance:
            ax.axhline(chance[label], color="0.7", lw=1, label="chance")
        ax.set(xlabel="epoch", ylabel="k-NN top-1 (%)", title=label)
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("k-NN accuracy over training (of the teacher, for DINO runs)")
    add_caption(fig, caption, "k-NN top-1 accuracy of each run's frozen features at every evaluation, from the "
                "random initialisation.")
    return fig


def panel_grid(count: int, width: float, height: float) -> tuple[plt.Figure, list[plt.Axes]]:
    """``count`` panels of ``width`` x ``height`` inches, at most two a row; unused cells hidden."""
    columns = min(count, 2)
    rows = -(-count // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), layout="constrained",
                             squeeze=False)
    flat = list(axes.flat)
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


METRIC_LABELS = {
    "eed_percent": EED_LABEL,
    "n_eff": "N_eff (dimensions)",
    "rankme": "RankMe (dimensions)",
    "participation_ratio": "participation ratio (dimensions)",
    "twonn": "TwoNN intrinsic dimension",
}


def _metric_values(record: ProfileRecord, metric: str) -> list[float]:
    profile = record.profile
    return getattr(profile, metric) if metric in ("eed_percent", "n_eff") else profile.companions[metric]


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
    label = METRIC_LABELS.get(metric, metric)
    block_axes(ax, len(values), label, f"{dataset}: {label} per block")
    if metric == "eed_percent":
        ax.set_ylim(0, 100)
    ax.legend(fontsize="small")
    add_caption(fig, profile_caption(record))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


def profile_explorer(records: Sequence[ProfileRecord]) -> widgets.VBox:
    """Explore profile records by dataset, token choice, metric and epoch.

    Every epoch's figure is rendered to a PNG in a ``Stack`` linked to the epoch slider in the
    browser (``jslink``), so the slider works in the static book; the other controls need a kernel."""
    if not records:
        raise ValueError("no profile records to explore; run `ib-tutorial profile RUN_DIR` first")
    index: dict[tuple[str, str], dict[int, ProfileRecord]] = defaultdict(dict)  # no epoch: epoch 0
    for record in records:
        index[(record.provenance.dataset, record.profile.tokens)][record.epoch or 0] = record
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
    feature matrix (name -> [N, D]) on a log axis, labelled with its :math:`N_\mathrm{eff}`."""
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
