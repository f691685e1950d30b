"""The lab notes' DINO part: each investigation of the CPU recipe search as one table (every
run, one line) and the values its paragraph states, read from the committed runs.

A line says what the run changed against the investigation's reference, the steps of its
warm-up and last-layer freeze, the steps it trained, its CLS k-NN accuracy from the random
initialisation to the end with the 95 % Wilson interval of the end, the teacher's information
about the image over the last tenth of training, and whether it learned by the book's rule
(:func:`~ib_tutorial.reproduction.learned.learned_rule`). The findings functions return
:class:`Value` objects (the number, and the text a paragraph shows), so a notebook glues the
text and asserts on the number.
"""
from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt

from ..measure.bootstrap import Interval
from ..reproduction.learned import Learned, teacher_information
from ..reproduction.learning import knn_interval
from ..reproduction.plateau import knn_standard_error, plateau
from ..reproduction.recipes import Recipe, read_recipe, recipe_settings
from ..training.dino_step import INFORMATION_FRACTION
from ..training.runs import RunDirectory
from .plots import add_caption


#: The level of a table's k-NN interval (Wilson).
KNN_LEVEL = 0.95


@dataclass(frozen=True)
class Value:
    """A number a paragraph states: ``raw`` for the notebook's asserts, ``text`` to glue."""

    raw: float | int | str
    text: str


@dataclass(frozen=True)
class NoteRow:
    """One run as a line of an investigation's table.

    Attributes:
        recipe: the run read as a recipe against the investigation's reference.
        steps: the step of its last k-NN evaluation.
        knn_end: its last CLS k-NN top-1 with its Wilson interval at :data:`KNN_LEVEL` (None without ``n_eval``).
        rule: the learned rule on its records (up to ``until_step`` where one was given).
        train: its logged training records (up to the same step).
        batch_size: its batch.
        n_eval: the held-out images of its last k-NN evaluation (None where not recorded).
    """

    recipe: Recipe
    steps: int
    knn_end: Interval | None
    rule: Learned
    train: list[dict]
    batch_size: int
    n_eval: int | None

    @property
    def name(self) -> str:
        return self.recipe.name

    def information(self, first: int = 0, last: int | None = None) -> float:
        """Mean teacher information (nats) over the logged steps ``first`` to ``last``."""
        values = [r["teacher_information"] for r in self.train
                  if first <= r["step"] and (last is None or r["step"] <= last) and "teacher_information" in r]
        return sum(values) / len(values)


def reference_of(run_dir: str | os.PathLike) -> dict:
    """The recipe settings of a run, to read other runs against (:func:`note_rows`)."""
    config = RunDirectory(run_dir).read_config()
    return recipe_settings(config.train, config.view)


def note_row(run_dir: str | os.PathLike, reference: dict, until_step: int | None = None) -> NoteRow:
    """One run as a :class:`NoteRow`, its changes taken against ``reference``
    (:func:`~ib_tutorial.reproduction.recipes.recipe_settings`); with ``until_step``, as it
    stood at that step."""
    run = RunDirectory(run_dir)
    knn, train = run.read_metrics("knn"), run.read_metrics("train")
    if until_step is not None:
        knn = [r for r in knn if r["step"] <= until_step]
        train = [r for r in train if r["step"] <= until_step]
    config = run.read_config()
    information = teacher_information(train)
    floor = None if information is None else INFORMATION_FRACTION * math.log(config.train.out_dim)
    rule = Learned(plateau(knn), information, floor)
    return NoteRow(read_recipe(run_dir, reference, until_step), knn[-1]["step"], knn_interval(knn[-1], KNN_LEVEL), rule, train,
                   config.train.batch_size, knn[-1].get("n_eval"))


def note_rows(folders: Sequence[str | os.PathLike], reference: dict, until_step: int | None = None) -> list[NoteRow]:
    """Every DINO run directly under each of ``folders`` (those that exist), by folder then name."""
    rows = []
    for folder in map(Path, folders):
        if folder.exists():
            rows += [note_row(run, reference, until_step) for run in sorted(folder.iterdir())
                     if (run / "config.json").exists() and (run / "metrics.jsonl").exists()
                     and RunDirectory(run).read_config().objective.compared_with_paper]
    return rows


def changed_text(recipe: Recipe, base_dataset: str = "tiny-imagenet") -> str:
    """What a run changed: its data set first where it is not ``base_dataset``, then its settings."""
    data = recipe.dataset.split(":")[0]
    parts = ([f"dataset={data}"] if data != base_dataset else []) + [
        f"{key}={_short(value)}" for key, value in sorted(recipe.changes.items())]
    return ", ".join(parts) or "(the reference)"


def notes_table(rows: Sequence[NoteRow], base_dataset: str = "tiny-imagenet", epochs: bool = False) -> str:
    """An investigation as one Markdown table, a line a run (``epochs``: its name followed by
    the epochs it trained, for runs of one name at several lengths)."""
    lines = ["| run | what changed | warm-up / freeze (steps) | steps | CLS k-NN %: start -> end [95 %] "
             "| teacher information (nats) | learned |",
             "| --- | --- | --- | ---: | --- | ---: | --- |"]
    for row in rows:
        r = row.recipe
        end = f" [{row.knn_end.low:.1f}, {row.knn_end.high:.1f}]" if row.knn_end else ""
        info = "-" if r.teacher_information is None else f"{r.teacher_information:.2f}"
        verdict = f"{'yes' if row.rule.learned else 'no'} ({row.rule.knn.learned:+.1f} / {row.rule.knn.threshold:.1f})"
        name = f"{r.name}, {r.epochs[-1]} epochs" if epochs else r.name
        lines.append(f"| {name} | {changed_text(r, base_dataset)} | {r.phases.warmup_steps} / {r.phases.freeze_steps} "
                     f"| {row.steps:,} | {r.knn_cls[0]:.1f} -> {r.knn_cls[-1]:.1f}{end} | {info} | {verdict} |")
    return "\n".join(lines)


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ",".join(_short(v) for v in value)
    return str(value)


def line_styles(count: int) -> list[dict]:
    """``count`` distinct (colour, line style) pairs: the ten colours solid, then dashed, then
    dotted, so no two lines of a figure look alike."""
    colours = [f"C{i}" for i in range(10)]
    styles = list(itertools.product(("-", "--", ":"), colours))
    if count > len(styles):
        raise ValueError(f"at most {len(styles)} distinct lines, not {count}")
    return [{"linestyle": style, "color": colour} for style, colour in styles[:count]]


def plot_teacher_information(curves: Mapping[str, Sequence[dict]], title: str, provenance: str,
                             until_step: int | None = None, marks: Mapping[str, int] | None = None) -> plt.Figure:
    """The teacher's information about the image (nats) against the step, a line a run (each
    its own colour and style, the legend under the panel), with vertical lines at ``marks``
    (label -> step); ``title`` is the one-sentence caption, ``provenance`` the smaller line."""
    fig, ax = plt.subplots(figsize=(10, 4.2 + 0.12 * len(curves)), layout="constrained")
    for (name, records), style in zip(curves.items(), line_styles(len(curves))):
        shown = [r for r in records if until_step is None or r["step"] <= until_step]
        ax.plot([r["step"] for r in shown], [r["teacher_information"] for r in shown], label=name, lw=1.2, **style)
    for (label, step), grey in zip((marks or {}).items(), ("0.3", "0.6")):
        ax.axvline(step, color=grey, lw=2, alpha=0.5, label=f"{label} (step {step})")
    ax.set_xlabel("training step")
    ax.set_ylabel("teacher information (nats)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=3, fontsize="x-small")  # under the axes, off the data
    fig.suptitle(title, fontsize="medium")
    add_caption(fig, provenance)
    return fig


def former_tier_findings(rows: Sequence[NoteRow]) -> dict[str, Value]:
    """The former tier (ViT-S on the synthetic worlds): the highest teacher entropy share of
    :math:`\\log K` over its runs' last tenth, and the largest fall of the k-NN accuracy."""
    entropy = min(row.recipe.teacher_entropy for row in rows)
    fall = max(-row.recipe.gain for row in rows)
    return {"former_entropy": Value(entropy, f"{entropy:.0%}"), "former_fall": Value(fall, f"{fall:.1f}")}


def unfloored_findings(rows: Sequence[NoteRow]) -> dict[str, Value]:
    """The recipe rows before the floors: how many learned by the rule, and which."""
    learned = [row.name for row in rows if row.rule.learned]
    se = [knn_standard_error({"top1": row.recipe.knn_cls[-1], "n_eval": row.n_eval}) for row in rows if row.n_eval]
    return {"unfloored_runs": Value(len(rows), str(len(rows))),
            "unfloored_learned": Value(len(learned), str(len(learned))),
            "unfloored_learned_names": Value(", ".join(learned), ", ".join(f"`{n}`" for n in learned) or "none"),
            "unfloored_se": Value(max(se), f"{min(se):.1f}-{max(se):.1f}")}


def longest(rows: Sequence[NoteRow]) -> NoteRow:
    """The row that trained the most steps."""
    return max(rows, key=lambda row: row.steps)


def rows_spread(rows: Sequence[NoteRow], dataset: str = "tiny-imagenet") -> tuple[float, float]:
    """The largest difference between two rows' last CLS k-NN accuracies on ``dataset``, and two
    standard errors of a difference of two independent accuracies at those two values."""
    last = sorted(row.recipe.knn_cls[-1] for row in rows if row.recipe.dataset.split(":")[0] == dataset)
    n_eval = min(row.n_eval for row in rows if row.recipe.dataset.split(":")[0] == dataset)
    errors = [knn_standard_error({"top1": value, "n_eval": n_eval}) for value in (last[0], last[-1])]
    return last[-1] - last[0], 2 * math.hypot(*errors)


def floor_findings(rows: Sequence[NoteRow], former_row: NoteRow, at_step: int) -> dict[str, Value]:
    """The values the floors' rows' paragraph states, each a mean of the logged steps it names
    (rows read at ``at_step``; ``former_row``: the tier before the floors, for as many steps or more)."""
    by = {row.name: row for row in rows}
    former = former_row.train

    def info(records, first=0, last=at_step):
        values = [r["teacher_information"] for r in records if first <= r["step"] <= last]
        return sum(values) / len(values)

    def knn(name):
        return " -> ".join(f"{v:.1f}" for v in by[name].recipe.knn_cls)

    low = min((r for r in former if r["step"] <= 300), key=lambda r: r["teacher_information"])
    base, faster = by["r1-base"], by["r2-lr-x4"]
    gap = max(abs(a["teacher_information"] - b["teacher_information"])
              for a, b in zip(base.train, faster.train) if a["step"] == b["step"] <= at_step)
    found = {
        "old_low": low["teacher_information"], "old_low_step": low["step"], "old_end": info(former, 900),
        "old_early": info(former, 0, 300), "base_early": base.information(0, 300),
        "base_low": min(r["teacher_information"] for r in base.train), "base_end": base.information(900),
        "lr_gap": gap, "sharp_ratio": by["r4-sharp-teacher"].information() / faster.information(),
        "free_change": by["r3-free-gains"].information() - faster.information(),
        "frozen_after": by["r7-prototypes-frozen"].information(600), "faster_after": faster.information(600),
        "colour_after": by["r8-colour-half"].information(600), "momentum_after": by["r9-momentum-0.99"].information(600),
        "r12_after": by["r12-colour-2"].information(600), "r13_after": by["r13-every-hue"].information(600),
        "r14_info": by["r14-dtd-every-hue"].recipe.teacher_information,
        "others_after": max([info(former, 600)] + [row.information(600) for row in rows
                                                   if not row.name.startswith(("r4-", "r8-"))]),
    }
    values = {key: Value(v, f"{v:+.2f}" if key == "free_change" else f"{v:.1f}" if key == "sharp_ratio"
                         else str(v) if isinstance(v, int) else f"{v:.2f}") for key, v in found.items()}
    for name in ("r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "r13", "r14"):
        full = next(n for n in by if n.split("-")[0] == name)
        values[f"{name}_knn"] = Value(by[full].recipe.gain, knn(full))
    frozen = [r["teacher_information"] for r in by["r7-prototypes-frozen"].train]
    peak = frozen.index(max(frozen))
    values["frozen_dip"] = Value(frozen[peak] - min(frozen[peak:]), f"{frozen[peak] - min(frozen[peak:]):.2f}")
    dtd = by["r11-dtd"]
    values["r11_falls"] = Value(dtd.recipe.knn_cls == sorted(dtd.recipe.knn_cls, reverse=True), "")
    se = knn_standard_error({"top1": dtd.recipe.knn_cls[-1], "n_eval": dtd.n_eval})
    values["r11_errors"] = Value(-dtd.recipe.gain / se, f"{-dtd.recipe.gain / se:.2f}")
    values["r11_se"] = Value(se, f"{se:.1f}")
    values["r11_images"] = Value(dtd.n_eval, str(dtd.n_eval))
    values["r10_best"] = Value(max(by["r10-batch-64"].recipe.knn_cls), f"{max(by['r10-batch-64'].recipe.knn_cls):.1f}")
    values["floor_rows"] = Value(len(rows), str(len(rows)))
    values["floor_learned"] = Value(sum(row.rule.learned for row in rows), str(sum(row.rule.learned for row in rows)))
    return values


def long_findings(rows: Sequence[NoteRow], cores_hours: float = 2.0) -> dict[str, Value]:
    """The longer runs: the best one's gains, steps and minutes, which learned by the rule, and
    what the best one's average pace would gain in ``cores_hours`` of one core."""
    best = max(rows, key=lambda row: row.recipe.gain)
    mean_gain = best.recipe.knn_mean[-1] - best.recipe.knn_mean[0]
    cpu_steps = int(cores_hours * 3600 * best.recipe.images_per_s / best.batch_size)
    projected = best.recipe.gain * cpu_steps / best.steps
    learned = [row.name for row in rows if row.rule.learned]
    return {"long_best": Value(best.name, f"`{best.name}`"), "long_best_gain": Value(best.recipe.gain, f"{best.recipe.gain:+.1f}"),
            "long_best_threshold": Value(best.rule.knn.threshold, f"{best.rule.knn.threshold:.1f}"),
            "long_best_steps": Value(best.steps, f"{best.steps:,}"),
            "long_best_mean_gain": Value(mean_gain, f"{mean_gain:+.1f}"),
            "long_best_minutes": Value(best.recipe.wall_minutes, f"{best.recipe.wall_minutes:.0f}"),
            "long_cpu_steps": Value(cpu_steps, f"{cpu_steps:,}"), "long_projected": Value(projected, f"{projected:+.1f}"),
            "long_learned": Value(len(learned), ", ".join(f"`{n}`" for n in learned) or "none")}


#: The tier's runs the tiers' paragraph names, by key: (epochs, run name).
TIER_RUNS = {"tier16_tiny": (16, "tiny-imagenet"), "tier16_dtd": (16, "dtd"), "tier48_tiny": (48, "tiny-imagenet"),
             "tier48_seed1": (48, "tiny-imagenet@seed=1"), "tier48_dtd": (48, "dtd_folder=dtd"),
             "tier48_dtd_seed1": (48, "dtd_folder=dtd@seed=1")}


def tier_findings(rows: Mapping[int, Sequence[NoteRow]]) -> dict[str, Value]:
    """The tier's own runs (``rows``: epochs -> rows): for each of :data:`TIER_RUNS`, its k-NN
    start -> end with interval, gain and threshold, mean patch token, minutes, the teacher's
    peak while the last layer was frozen and its lowest after the release, and its last tenth;
    the best evaluation and its epoch; the two seeds' spread against one standard error."""
    values: dict[str, Value] = {}
    for key, (epochs, name) in TIER_RUNS.items():
        row = next(row for row in rows[epochs] if row.name == name)
        r, freeze = row.recipe, row.recipe.phases.freeze_steps
        peak = max(x["teacher_information"] for x in row.train if x["step"] <= freeze)
        after = min(x["teacher_information"] for x in row.train if x["step"] > freeze)
        best = max(range(len(r.epochs)), key=lambda e: r.knn_cls[e])
        found = {"knn": (r.gain, f"{r.knn_cls[0]:.1f} -> {r.knn_cls[-1]:.1f}"),
                 "interval": (row.knn_end.high - row.knn_end.low, f"{row.knn_end.low:.1f}-{row.knn_end.high:.1f}"),
                 "gain": (row.rule.knn.learned, f"{row.rule.knn.learned:+.1f}"),
                 "threshold": (row.rule.knn.threshold, f"{row.rule.knn.threshold:.1f}"),
                 "mean": (r.knn_mean[-1] - r.knn_mean[0], f"{r.knn_mean[0]:.1f} -> {r.knn_mean[-1]:.1f}"),
                 "minutes": (r.wall_minutes, f"{r.wall_minutes:.0f}"), "info": (r.teacher_information, f"{r.teacher_information:.2f}"),
                 "peak": (peak, f"{peak:.2f}"), "after": (after, f"{after:.2f}"),
                 "best": (r.knn_cls[best], f"{r.knn_cls[best]:.1f}"), "end": (r.knn_cls[-1], f"{r.knn_cls[-1]:.1f}"), "best_epoch": (r.epochs[best], str(r.epochs[best])),
                 "learned": (row.rule.learned, "yes" if row.rule.learned else "no"),
                 "teacher_kept": (row.rule.teacher_kept, "yes" if row.rule.teacher_kept else "no"),
                 "floor": (row.rule.teacher_floor, f"{row.rule.teacher_floor:.2f}"),
                 "last_epoch": (r.epochs[-1], str(r.epochs[-1])), "steps": (row.steps, f"{row.steps:,}")}
        values.update({f"{key}_{part}": Value(*pair) for part, pair in found.items()})
    seeds = [next(row for row in rows[48] if row.name == name) for name in ("tiny-imagenet", "tiny-imagenet@seed=1")]
    spread = abs(seeds[0].rule.knn.learned - seeds[1].rule.knn.learned)
    se = min(knn_standard_error({"top1": row.recipe.knn_cls[-1], "n_eval": row.n_eval}) for row in seeds)
    values["tier48_seed_spread"] = Value(spread, f"{spread:.1f}")
    values["tier48_seed_se"] = Value(se, f"{se:.1f}")
    dtd = next(row for row in rows[48] if row.name == "dtd_folder=dtd")
    values["tier48_dtd_images"] = Value(dtd.n_eval, str(dtd.n_eval))
    return values
