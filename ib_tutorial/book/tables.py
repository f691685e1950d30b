"""Markdown tables of computed results, and one section of a chapter (:class:`ResultSection`).

A section is a table, figures, the values its paragraph glues and the statements that
paragraph makes, each checked against the data: when committed results change so that a
statement no longer holds, :meth:`ResultSection.show` raises and ``pytest --nbval`` fails
until the paragraph is rewritten.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from ..files import atomic_write
from ..models import ARCHITECTURES, MODEL_NAMES
from ..presets import get_preset
from ..training.cost import RunTimeEstimate, crop_pixels
from ..training.run_config import RunSpec, resolve_settings
from ..training.runs import RunDirectory
from .bundles import Bundle, middle_eed
from .paper import ComparisonRow, MIDDLE, run_comparison


@dataclass(frozen=True)
class ResultSection:
    """What one section of a chapter shows: Markdown, then figures; ``values`` glued for the
    paragraph; ``statements``: what it says -> whether the data still says it; ``details``:
    Markdown a chapter shows folded."""

    table: str
    figures: tuple[plt.Figure, ...] = ()
    values: dict[str, float | str] = field(default_factory=dict)
    statements: dict[str, bool] = field(default_factory=dict)
    details: str = ""

    def failed(self) -> list[str]:
        """The statements the data no longer supports."""
        return [statement for statement, holds in self.statements.items() if not holds]

    def check(self) -> None:
        """Raise ``AssertionError`` naming every statement the data no longer supports."""
        failed = self.failed()
        if failed:
            raise AssertionError("the committed results no longer say: " + "; ".join(failed)
                                 + ". Rewrite the paragraph after this cell.")

    def show(self, glue: Callable[[str, float | str], None]) -> None:
        """Check the statements, glue the values with ``glue``, and display the table and figures."""
        self.check()
        for name, value in self.values.items():
            glue(name, value)
        display(Markdown(self.table))
        for figure in self.figures:
            display(figure)
        plt.close("all")  # displayed above, not again at the cell's end


def absent(command: str, what: str) -> ResultSection:
    """A section whose committed runs are not next to this package: the command that makes them."""
    return ResultSection(f"No committed {what} next to this package (clone the repository to read `results/`). "
                         f"This command makes it:\n\n```bash\n{command}\n```")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    """A Markdown table: the header, its rule, then one line per row of cells."""
    return "\n".join("| " + " | ".join(map(str, cells)) + " |" for cells in [header, ["---"] * len(header), *rows])


def comparison_markdown(rows: list[ComparisonRow]) -> str:
    """The rows as a Markdown table; when no row is like for like
    (:func:`~ib_tutorial.book.paper.setting_difference`), under the reason and without verdicts."""
    if rows and all(r.unlike for r in rows):
        reasons = "\n\n".join(dict.fromkeys(r.unlike for r in rows))
        table = markdown_table(["dataset", "statistic", "ours", "paper's value, for reference"],
                               [(r.dataset, r.statistic, r.ours_text, r.paper_text) for r in rows])
        return reasons + "\n\n" + table + "\n"
    return markdown_table(["dataset", "statistic", "ours", "paper", "verdict", "deviation"],
                          [(r.dataset, r.statistic, r.ours_text, r.paper_text, r.verdict, r.deviation) for r in rows]) + "\n"


def bundle_markdown(bundle: Bundle) -> str:
    """One row per run, labelled by what sets it apart (:func:`run_labels`): k-NN top-1 and EED%
    from init to the end, the raw-patch baseline, wall time and median throughput."""
    blocks = f"L{MIDDLE[0]}-L{MIDDLE[-1]}"
    labels, shared = run_labels([run.spec for run in bundle.runs.values()])
    rows = []
    for label, run in zip(labels, bundle.runs.values()):
        cls, mean = [r["top1"] for r in run.knn], [r.get("top1_mean") for r in run.knn]
        mean_text = "-" if None in mean else f"{mean[0]:.1f} -> {mean[-1]:.1f} ({max(mean):.1f})"
        first, last = run.profiles[0], run.profiles[-1]
        rates = sorted(r["images_per_s"] for r in run.train)
        wall = f"{run.knn[-1]['wall_s'] / 60:.0f} min" if "wall_s" in run.knn[-1] else "-"
        rows.append((label, f"{cls[0]:.1f} -> {cls[-1]:.1f} ({max(cls):.1f})", mean_text,
                     f"{run.summary['raw_patch_n_eff']:.1f} of {run.summary['raw_patch_dim']}",
                     f"{middle_eed(first):.1f} -> {middle_eed(last):.1f}",
                     f"{first.profile.eed_percent[-1]:.1f} -> {last.profile.eed_percent[-1]:.1f}",
                     wall, f"{rates[len(rates) // 2]:.0f}"))
    header = [f"`{bundle.name}`", "k-NN top-1 %, CLS: init -> end (best)", "k-NN top-1 %, mean patch: init -> end (best)",
              "raw patches N_eff", f"middle EED% ({blocks}): init -> end", "last block EED%: init -> end", "wall time",
              "images/s"]
    intro = f"Every run of `{bundle.name}`: {shared}.\n\n" if shared else ""
    return intro + markdown_table(header, rows)


def run_labels(specs: Sequence[RunSpec]) -> tuple[list[str], str]:
    """Short labels for runs named by their specs (``DATASET[:OPTIONS][@SETTINGS]``): what sets
    each apart, in the spec's own syntax, and, once, what they all share."""
    def items(values: dict) -> dict[str, str]:
        return {key: f"{key}={_setting(value)}" for key, value in values.items()}

    options, overrides = [items(spec.options) for spec in specs], [items(spec.overrides) for spec in specs]

    def common(per_run: list[dict[str, str]]) -> list[str]:
        return [text for key, text in per_run[0].items() if all(run.get(key) == text for run in per_run)]

    shared_options, shared_overrides = common(options), common(overrides)
    one_dataset = len({spec.dataset for spec in specs}) == 1
    labels = []
    for spec, own_options, own_overrides in zip(specs, options, overrides):
        apart = [text for text in own_options.values() if text not in shared_options]
        settings = [text for text in own_overrides.values() if text not in shared_overrides]
        label = ",".join(apart) if one_dataset and apart else spec.dataset + (f":{','.join(apart)}" if apart else "")
        if settings:
            label += "@" + ",".join(settings)
        labels.append(f"`{label}`")
    shared = ([f"`{specs[0].dataset}`"] if one_dataset else []) + [f"`{text}`" for text in shared_options]
    if shared_overrides:
        shared.append("settings `" + ", ".join(shared_overrides) + "`")
    return labels, ", ".join(shared)


def _setting(value) -> str:
    """A spec's value as its text writes it: ``(0.9,1.0)`` for a pair."""
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_setting(item) for item in value) + ")"
    return str(value)


def duration_text(seconds: float) -> str:
    """``"14 min"`` or ``"1.9 h"``."""
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def estimate_markdown(estimate: RunTimeEstimate) -> str:
    """The estimate in words, with how it was computed, as a Markdown list."""
    low, high = estimate.seconds
    slow, fast = estimate.loader_images_per_s
    loader = (estimate.images / fast, estimate.images / slow)
    train, view = resolve_settings(get_preset(estimate.preset), estimate.dataset, {})
    crops, _ = crop_pixels(view, train)
    share = f"{estimate.utilisation * 100:.0f} %"
    if loader[0] >= estimate.gpu_seconds:
        pace = "the data loader sets the pace, not the GPU"
    elif loader[1] <= estimate.gpu_seconds:
        pace = "the GPU's arithmetic sets the pace"
    else:
        pace = "the GPU or the data loader sets the pace, depending on which scaling holds"
    return "\n".join([
        f"**{estimate.machine.name}: about {duration_text(low)} to {duration_text(high)} of training for "
        f"`{estimate.preset}` on {estimate.dataset}.** An estimate, not a measurement: this "
        "machine was not timed.",
        "",
        f"- Work: {estimate.epochs} epochs, {estimate.images:,} images, each {estimate.gflop_per_image:.1f} GFLOP per "
        f"step (counted from the settings: {MODEL_NAMES.get(ARCHITECTURES[train.arch]['embed_dim'], train.arch)}, {crops} crops of {view.img_size} and {view.local_crop_size} px).",
        f"- GPU: at {share} of {estimate.machine.peak_flops / 1e12:.0f} TFLOP/s "
        f"({estimate.machine.peak_source}) the arithmetic takes {duration_text(estimate.gpu_seconds)}. "
        f"{share} is the best fraction of its own matrix-product peak that a benchmarked step "
        f"reached on the benchmark machine's CPU ({estimate.utilisation_source}); a GPU at these short token "
        "sequences will likely reach less.",
        f"- Loader: the augmentation runs on the CPU. The benchmark machine made {estimate.reference}; scaled to "
        f"{crops} crops by their number, or by the pixels they hold, {estimate.machine.loader_cores} such cores make "
        f"{slow:.0f}-{fast:.0f} images/s ({duration_text(loader[0])} to {duration_text(loader[1])}); its own cores "
        "may be slower.",
        f"- So {pace}. Not counted: k-NN evaluations, profiles, pruning and the download.",
    ])


def write_comparison_table(out: str | os.PathLike) -> Path:
    """``comparison.md`` of a reproduction folder (:func:`ib_tutorial.book.reproduce.reproduce`): each
    compared run's final profile against :data:`~ib_tutorial.book.paper.REPORTED` as it is now."""
    out = Path(out)
    summary = json.loads((out / "summary.json").read_text())
    rows = [row for spec, entry in summary["datasets"].items() if entry["comparison"]
            for row in run_comparison(spec, entry["final_eed_percent"], RunDirectory(out / entry["run"]).read_config())]
    table = (f"Preset `{summary['preset']}`: final teacher of each run against the paper's reported values "
             f"(EED% of the model's width D: 384 for ViT-S, 192 for ViT-Ti; all tokens, centred).\n\n"
             + comparison_markdown(rows))
    atomic_write(out / "comparison.md", lambda f: f.write(table.encode()))
    return out / "comparison.md"
