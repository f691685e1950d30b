"""An explorer for stored profiles that works live and in the static book.

The figure for every epoch is rendered to a PNG ``Image`` widget inside a ``Stack``,
and the epoch slider is linked to the stack in the browser (``jslink``). So the epoch
slider works in the published book, where no Python runs; changing dataset, token
choice or metric re-renders the stack and needs a live kernel (Jupyter, Colab, Binder).
"""
from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Sequence

import ipywidgets as widgets
from matplotlib.figure import Figure

from ..reproduction.paper import REPORTED
from ..reproduction.records import ProfileRecord
from .captions import profile_caption
from .plots import add_caption, draw_reported

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
    """Explore stored profile records (see :mod:`ib_tutorial.reproduction.records`) by dataset, token
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
