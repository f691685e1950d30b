r"""The lab notes' DINO part: the CPU recipe search, one table per investigation, and what DINO needs to learn, as compute.

A DINO student reads two global crops and :math:`n_\ell` local ones, each :math:`(s / p)^2`
patch tokens plus the class token, so a run's compute is counted as

.. math:: C = \text{images seen} \times \Big(2\,\big((s_g/p)^2 + 1\big) + n_\ell\,\big((s_\ell/p)^2 + 1\big)\Big),

and a run is a curve of k-NN gain (points over its random initialisation) against :math:`C`;
published runs are points (:data:`PUBLISHED`). Each ``*_notes`` function turns the findings
(:class:`Value`) of one investigation of :func:`committed_notes` into a
:class:`~ib_tutorial.book.tables.ResultSection`.
"""
from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence, Mapping
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt

from ..measure.bootstrap import Interval
from ..presets import get_preset
from ..training.dino import INFORMATION_FRACTION
from ..training.runs import RunDirectory
from .bundles import stored_entry
from .claims import knn_interval
from .learned import Learned, knn_standard_error, learned_rule, plateau, teacher_information
from .plots import add_caption
from .recipes import Recipe, preset_recipe, read_recipe, recipe_settings
from .tables import ResultSection, absent


def student_tokens(img_size: int, local_crop_size: int, patch_size: int, local_crops: int, global_crops: int = 2) -> int:
    """Tokens (patches plus the class token) the student reads per image over all its views."""
    def crop(size: int) -> int:
        return (size // patch_size) ** 2 + 1
    return global_crops * crop(img_size) + local_crops * crop(local_crop_size)


@dataclass(frozen=True)
class PublishedPoint:
    """A published DINO run at one moment of its training: where the number is published, the
    epochs and the images of one, :func:`student_tokens` of its views, and its k-NN top-1 and
    chance (100 / classes) in %."""

    label: str
    source: str
    network: str
    dataset: str
    epochs: int
    train_images: int
    tokens_per_image: int
    knn_top1: float
    chance: float

    @property
    def images_seen(self) -> int:
        return self.epochs * self.train_images

    @property
    def compute(self) -> float:
        return self.images_seen * self.tokens_per_image

    @property
    def gain_bound(self) -> float:
        """Points above chance: a bound on its gain over its random initialisation (not published)."""
        return self.knn_top1 - self.chance


#: The closest public small-ViT DINO curve: ``main/dino.py`` of alirezaghl/dino sets a 192-wide,
#: 12-block ViT with patch 4, every crop at 32 px (two global, eight local: ten crops of 65
#: tokens), CIFAR-10's 50,000 training images; ``results/knn_accuracy.png`` there shows about
#: 47 % k-NN top-1 at its first evaluation, after 10 epochs.
PUBLISHED: tuple[PublishedPoint, ...] = (
    PublishedPoint(label="alirezaghl/dino, 10 epochs",
                   source="github.com/alirezaghl/dino: main/dino.py (settings), results/knn_accuracy.png (k-NN)",
                   network="ViT, 192 wide, 12 blocks, patch 4 at 32 px", dataset="CIFAR-10", epochs=10,
                   train_images=50_000, tokens_per_image=student_tokens(32, 32, 4, 8), knn_top1=47.0, chance=10.0),
)


@dataclass(frozen=True)
class ComputeCurve:
    """One committed run as k-NN gain (points over its initialisation) against the images seen
    at each evaluation, and whether it learned."""

    label: str
    dataset: str
    tokens_per_image: int
    images_seen: list[int]
    gains: list[float]
    learned: bool
    batch_size: int

    @property
    def steps(self) -> int:
        return self.images_seen[-1] // self.batch_size

    @property
    def compute(self) -> list[float]:
        return [images * self.tokens_per_image for images in self.images_seen]


def _dino_runs(folder: str | os.PathLike) -> list[RunDirectory]:
    """Every DINO run with its records directly under ``folder``, if it exists, by name."""
    paths = sorted(Path(folder).iterdir()) if Path(folder).exists() else []
    return [RunDirectory(path) for path in paths if (path / "config.json").exists()
            and (path / "metrics.jsonl").exists() and RunDirectory(path).read_config().objective.compared_with_paper]


def compute_curves(folders: Sequence[tuple[str, str | os.PathLike]], datasets: Sequence[str] = ("tiny-imagenet", "dtd")
                   ) -> list[ComputeCurve]:
    """Every DINO run on ``datasets`` under each folder of ``folders`` (pairs of a label's prefix
    and a folder), labelled ``PREFIX: DATASET, E epochs, seed S``."""
    curves = []
    for prefix, folder in folders:
        for run in _dino_runs(folder):
            config, knn = run.read_config(), run.read_metrics("knn")
            view, train = config.view, config.train
            if config.dataset in datasets:
                arch = "" if train.arch == "vit_tiny" else f" ({train.arch})"
                label = f"{prefix}: {config.dataset}{arch}, {knn[-1]['epoch']} epochs, seed {config.seed}"
                tokens = student_tokens(view.img_size, view.local_crop_size, view.patch_size, train.local_crops_number)
                curves.append(ComputeCurve(label, config.dataset, tokens, [r["step"] * train.batch_size for r in knn],
                                           [r["top1"] - knn[0]["top1"] for r in knn], learned_rule(run).learned,
                                           train.batch_size))
    return curves


#: The level of a table's k-NN interval (Wilson).
KNN_LEVEL = 0.95


@dataclass(frozen=True)
class Value:
    """A number a paragraph states: ``raw`` for the notebook's asserts, ``text`` to glue."""

    raw: float | int | str
    text: str


@dataclass(frozen=True)
class NoteRow:
    """One run as a line of an investigation's table, read up to ``until_step`` where one was
    given: its recipe against the investigation's reference, the step of its last k-NN
    evaluation, that evaluation's CLS top-1 with its Wilson interval at :data:`KNN_LEVEL` and its
    held-out images (None where not recorded)."""

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
        values = [r["teacher_information"] for r in self.train if "teacher_information" in r
                  and first <= r["step"] and (last is None or r["step"] <= last)]
        return sum(values) / len(values)


def reference_of(run_dir: str | os.PathLike) -> dict:
    """The recipe settings of a run, to read other runs against."""
    config = RunDirectory(run_dir).read_config()
    return recipe_settings(config.train, config.view)


def note_row(run_dir: str | os.PathLike, reference: dict, until_step: int | None = None) -> NoteRow:
    """One run as a :class:`NoteRow`, against ``reference``; with ``until_step``, as it stood then."""
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
    """Every DINO run directly under each of ``folders``, by folder then name."""
    return [note_row(run.path, reference, until_step) for folder in folders for run in _dino_runs(folder)]


def changed_text(recipe: Recipe, base_dataset: str = "tiny-imagenet") -> str:
    """What a run changed: its data set first where it is not ``base_dataset``, then its settings."""
    data = recipe.dataset.split(":")[0]
    parts = ([f"dataset={data}"] if data != base_dataset else []) + [
        f"{key}={_short(value)}" for key, value in sorted(recipe.changes.items())]
    return ", ".join(parts) or "(the reference)"


def notes_table(rows: Sequence[NoteRow], base_dataset: str = "tiny-imagenet", epochs: bool = False) -> str:
    """An investigation as a Markdown table, a line a run (with ``epochs``, named with its epochs)."""
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
    """``count`` distinct line styles: the ten colours solid, then dashed, then dotted."""
    colours = [f"C{i}" for i in range(10)]
    styles = list(itertools.product(("-", "--", ":"), colours))
    if count > len(styles):
        raise ValueError(f"at most {len(styles)} distinct lines, not {count}")
    return [{"linestyle": style, "color": colour} for style, colour in styles[:count]]


def plot_teacher_information(curves: Mapping[str, Sequence[dict]], title: str, provenance: str,
                             until_step: int | None = None, marks: Mapping[str, int] | None = None) -> plt.Figure:
    """The teacher's information (nats) against the step, a line a run; ``marks``: label -> step."""
    fig, ax = plt.subplots(figsize=(10, 4.2 + 0.12 * len(curves)), layout="constrained")
    for (name, records), style in zip(curves.items(), line_styles(len(curves))):
        shown = [r for r in records if until_step is None or r["step"] <= until_step]
        ax.plot([r["step"] for r in shown], [r["teacher_information"] for r in shown], label=name, lw=1.2, **style)
    for (label, step), grey in zip((marks or {}).items(), ("0.3", "0.6")):
        ax.axvline(step, color=grey, lw=2, alpha=0.5, label=f"{label} (step {step})")
    ax.set(xlabel="training step", ylabel="teacher information (nats)", ylim=(0, None))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=3, fontsize="x-small")  # under the axes, off the data
    fig.suptitle(title, fontsize="medium")
    add_caption(fig, provenance)
    return fig


def longest(rows: Sequence[NoteRow]) -> NoteRow:
    """The row that trained the most steps."""
    return max(rows, key=lambda row: row.steps)


def rows_spread(rows: Sequence[NoteRow], dataset: str = "tiny-imagenet") -> tuple[float, float]:
    """The largest difference between two rows' last CLS k-NN accuracies on ``dataset``, and two
    standard errors of a difference of two independent accuracies at those values."""
    last = sorted(row.recipe.knn_cls[-1] for row in rows if row.recipe.dataset.split(":")[0] == dataset)
    n_eval = min(row.n_eval for row in rows if row.recipe.dataset.split(":")[0] == dataset)
    errors = [knn_standard_error({"top1": value, "n_eval": n_eval}) for value in (last[0], last[-1])]
    return last[-1] - last[0], 2 * math.hypot(*errors)


def floor_findings(rows: Sequence[NoteRow], former_row: NoteRow, at_step: int) -> dict[str, Value]:
    """The values the floors' rows' paragraph states, each a mean of the logged steps it names
    (rows read at ``at_step``; ``former_row``: the tier before the floors, for as many steps or more)."""
    by = {row.name: row for row in rows}
    low = min((r for r in former_row.train if r["step"] <= 300), key=lambda r: r["teacher_information"])
    base, faster = by["r1-base"], by["r2-lr-x4"]
    gap = max(abs(a["teacher_information"] - b["teacher_information"])
              for a, b in zip(base.train, faster.train) if a["step"] == b["step"] <= at_step)
    found = {
        "old_low": low["teacher_information"], "old_low_step": low["step"],
        "old_end": former_row.information(900, at_step), "old_early": former_row.information(0, 300),
        "base_early": base.information(0, 300),
        "base_low": min(r["teacher_information"] for r in base.train), "base_end": base.information(900),
        "lr_gap": gap, "sharp_ratio": by["r4-sharp-teacher"].information() / faster.information(),
        "free_change": by["r3-free-gains"].information() - faster.information(),
        "frozen_after": by["r7-prototypes-frozen"].information(600), "faster_after": faster.information(600),
        "colour_after": by["r8-colour-half"].information(600), "momentum_after": by["r9-momentum-0.99"].information(600),
        "r12_after": by["r12-colour-2"].information(600), "r13_after": by["r13-every-hue"].information(600),
        "r14_info": by["r14-dtd-every-hue"].recipe.teacher_information,
        "others_after": max([former_row.information(600, at_step)]
                            + [row.information(600) for row in rows if not row.name.startswith(("r4-", "r8-"))]),
    }
    values = {key: Value(v, f"{v:+.2f}" if key == "free_change" else f"{v:.1f}" if key == "sharp_ratio"
                         else str(v) if isinstance(v, int) else f"{v:.2f}") for key, v in found.items()}
    for name in ("r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "r13", "r14"):
        recipe = next(row.recipe for row in by.values() if row.name.split("-")[0] == name)
        values[f"{name}_knn"] = Value(recipe.gain, " -> ".join(f"{v:.1f}" for v in recipe.knn_cls))
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
    """The longer runs: the best one's gains, steps and minutes, which learned, and what the best
    one's average pace would gain in ``cores_hours`` of one core."""
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
    """What the paragraph states of each of :data:`TIER_RUNS` (``rows``: epochs -> rows), and the
    two seeds' spread against one standard error."""
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


#: The step at which the floors' rows are read (their schedules differ in length).
FLOOR_ROWS_AT = 1000
#: The command that makes the tier's runs the notes read.
TIER_COMMAND = 'ib-tutorial train --preset laptop --dataset tiny-imagenet --root "$DATA"'


@dataclass(frozen=True)
class DinoNotes:
    """Every committed run of the DINO lab notes, by investigation: the former tier, the
    recipe rows before the floors, the floors' rows (read at :data:`FLOOR_ROWS_AT`), the longer
    runs, and the tier's own runs (epochs -> rows)."""

    former: list[NoteRow]
    unfloored: list[NoteRow]
    floors: list[NoteRow]
    long: list[NoteRow]
    tier: dict[int, list[NoteRow]]


#: The manifest entries the notes read, in the order of their investigations.
NOTES_ENTRIES = ("dino-former-tier", "dino-first-recipes", "dino-tier-6", "dino-tier-48-unfloored", "dino-floor-rows",
                 "dino-floor-rows-2", "dino-floor-rows-3", "dino-long", "dino-tier-16", "dino-tier-48")


def committed_notes() -> DinoNotes | None:
    """The notes' runs committed under ``results/``, each against its investigation's reference."""
    if not all(stored_entry(key).exists() for key in NOTES_ENTRIES + ("dino-floor-reference",)):
        return None
    tier = preset_recipe(get_preset("laptop"), "tiny-imagenet")
    base = reference_of(stored_entry("dino-floor-reference"))
    return DinoNotes(
        former=note_rows([stored_entry("dino-former-tier")], tier),
        unfloored=note_rows([stored_entry(key) for key in ("dino-first-recipes", "dino-tier-6", "dino-tier-48-unfloored")], tier),
        floors=note_rows([stored_entry(key) for key in ("dino-floor-rows", "dino-floor-rows-2", "dino-floor-rows-3")], base,
                         FLOOR_ROWS_AT),
        long=note_rows([stored_entry("dino-long")], base),
        tier={epochs: note_rows([stored_entry(f"dino-tier-{epochs}")], tier) for epochs in (16, 48)})


def _section(table: str, found: Mapping[str, Value], statements: dict[str, bool]) -> ResultSection:
    return ResultSection(table, values={f"notes_{key}": value.text for key, value in found.items()}, statements=statements)


def _absent() -> ResultSection:
    return absent(TIER_COMMAND, "DINO runs of the lab notes")


def former_notes(notes: DinoNotes | None) -> ResultSection:
    """The former tier (ViT-S on the synthetic worlds): the largest fall of a run's k-NN, and the
    lowest share of :math:`\\log K` its teacher's entropy kept over a run's last tenth."""
    if notes is None:
        return _absent()
    entropy = min(row.recipe.teacher_entropy for row in notes.former)
    fall = max(-row.recipe.gain for row in notes.former)
    found = {"former_entropy": Value(entropy, f"{entropy:.0%}"), "former_fall": Value(fall, f"{fall:.1f}")}
    return _section(notes_table(notes.former, base_dataset=""), found, {
        "every run ended below its initialisation": all(row.recipe.gain < 0 for row in notes.former),
        "the teacher's entropy stayed above 80 % of log K": entropy > 0.8})


def unfloored_notes(notes: DinoNotes | None) -> ResultSection:
    """The recipe rows before the floors: which learned (one, the longest), and their errors."""
    if notes is None:
        return _absent()
    rows = notes.unfloored
    learned = [row.name for row in rows if row.rule.learned]
    se = [knn_standard_error({"top1": row.recipe.knn_cls[-1], "n_eval": row.n_eval}) for row in rows if row.n_eval]
    found = {"unfloored_runs": Value(len(rows), str(len(rows))),
             "unfloored_learned": Value(len(learned), str(len(learned))),
             "unfloored_learned_names": Value(", ".join(learned), ", ".join(f"`{n}`" for n in learned) or "none"),
             "unfloored_se": Value(max(se), f"{min(se):.1f}-{max(se):.1f}")}
    return _section(notes_table(rows), found,
                    {"one run learned, the longest": len(learned) == 1 and longest(rows).rule.learned})


def floor_notes(notes: DinoNotes | None) -> ResultSection:
    """The floors' rows at :data:`FLOOR_ROWS_AT`: what each change did to the teacher's
    information and the CLS k-NN, beside the former tier (:func:`floor_findings`)."""
    if notes is None:
        return _absent()
    found = floor_findings(notes.floors, longest(notes.unfloored), FLOOR_ROWS_AT)
    raw = {key: value.raw for key, value in found.items()}
    hidden = [raw["colour_after"], raw["faster_after"], raw["r13_after"], raw["r12_after"]]
    return _section(notes_table(notes.floors), found, {
        "the floors spared the early dip and ended where the former tier did":
            raw["old_low"] < raw["base_early"] and abs(raw["old_end"] - raw["base_end"]) < 0.2,
        "four times the learning rate kept the teacher within 0.2 nats": raw["lr_gap"] < 0.2,
        "a teacher half as warm said about twice as much": 1.5 < raw["sharp_ratio"] < 2.5,
        "free gains changed the teacher by under 0.1 nats": abs(raw["free_change"]) < 0.1,
        "frozen prototypes held more, and dipped too":
            raw["frozen_after"] > raw["faster_after"] + 0.2 and raw["frozen_dip"] > 0.2,
        "no row learned": raw["floor_learned"] == 0,
        "half the colour jitter made the most informative teacher and no k-NN gain":
            raw["colour_after"] > raw["others_after"] and raw["r8_knn"] <= 0,
        "a faster teacher held about as much as r2": abs(raw["momentum_after"] - raw["faster_after"]) < 0.1,
        "hiding more colour made the teacher say less": hidden == sorted(hidden, reverse=True),
        "DTD fell at every evaluation, by 1.5 to 2 standard errors": raw["r11_falls"] and 1.5 < raw["r11_errors"] <= 2,
        "DTD with every hue drawn anew fell": raw["r14_knn"] < 0})


def floor_figure(notes: DinoNotes | None) -> plt.Figure | None:
    """The teacher's information over the floors' rows' first steps, beside the former tier's."""
    if notes is None:
        return None
    curves = {"former tier, 78 warm-up steps, no freeze": longest(notes.unfloored).train}
    curves |= {f"{row.name} (batch {row.batch_size})": row.train for row in notes.floors}
    phases = notes.floors[0].recipe.phases
    return plot_teacher_information(
        curves, "What the teacher's output says about the image over the first 1,000 steps, the former tier against the floors.",
        "committed runs under results/: ViT-Ti, 32 px / patch 8, Tiny ImageNet subset (r11, r14: DTD), CPU",
        until_step=FLOOR_ROWS_AT, marks={"last layer released": phases.freeze_steps, "warm-up ends": phases.warmup_steps})


def long_notes(notes: DinoNotes | None) -> ResultSection:
    """The longer runs: only the best learned; the mean patch token gained more than the CLS token."""
    if notes is None:
        return _absent()
    found = long_findings(notes.long)
    return _section(notes_table(notes.long), found, {
        "only the best run learned": [row.rule.learned for row in notes.long]
                                     == [row.name == found["long_best"].raw for row in notes.long],
        "the mean patch token gained more than the CLS token":
            all(row.recipe.knn_mean[-1] - row.recipe.knn_mean[0] > row.recipe.gain for row in notes.long)})


def tier_notes(notes: DinoNotes | None) -> ResultSection:
    """The tier's own runs at 16 and 48 epochs, with the gain of the same recipe before the floors."""
    if notes is None:
        return _absent()
    found = tier_findings(notes.tier)
    raw = {key: value.raw for key, value in found.items()}
    before = longest(notes.unfloored).recipe.gain
    found = dict(found, unfloored_gain=Value(before, f"{before:+.1f}"))
    dtd = ("tier48_dtd", "tier48_dtd_seed1")
    return _section(notes_table(notes.tier[16] + notes.tier[48], epochs=True), found, {
        "every teacher sharpened while frozen, fell by 0.4 nats after the release and never collapsed":
            all(raw[f"{key}_teacher_kept"] and raw[f"{key}_peak"] - raw[f"{key}_after"] >= 0.4 for key in TIER_RUNS),
        "the 48-epoch runs on Tiny ImageNet learned, no other did":
            all(raw[f"{key}_learned"] == (key in ("tier48_tiny", "tier48_seed1")) for key in TIER_RUNS),
        "the seeds differ by under one standard error": raw["tier48_seed_spread"] < raw["tier48_seed_se"],
        "the tier's length is 48 epochs": get_preset("laptop").train.epochs == raw["tier48_tiny_last_epoch"] == 48,
        "Tiny ImageNet's best evaluation came before the end":
            raw["tier48_tiny_best_epoch"] < 48 and raw["tier48_tiny_best"] > raw["tier48_tiny_end"],
        "its teacher sharpened again to twice its low": raw["tier48_tiny_info"] >= 2 * raw["tier48_tiny_after"],
        "DTD's teachers are the most informative":
            min(raw[f"{k}_info"] for k in dtd) > max(raw[f"{k}_info"] for k in TIER_RUNS if k not in dtd),
        "DTD's best evaluations came in the first half, above the last, and the gains stayed under the threshold":
            all(raw[f"{k}_best_epoch"] <= raw[f"{k}_last_epoch"] // 2 and raw[f"{k}_best"] > raw[f"{k}_end"]
                and 0 < raw[f"{k}_gain"] < raw[f"{k}_threshold"] for k in dtd),
        "the recipe before the floors gained more than with them": before > raw["tier48_tiny_gain"]})


def tier_figure(notes: DinoNotes | None) -> plt.Figure | None:
    """The teacher's information in the tier's runs, the release of the last layer and the warm-up marked."""
    if notes is None:
        return None
    runs = notes.tier[16] + notes.tier[48]
    phases = notes.tier[48][0].recipe.phases
    return plot_teacher_information(
        {f"{row.name}, {row.recipe.epochs[-1]} epochs": row.train for row in runs},
        "The teacher's information about the image in the tier's runs: a rise while frozen, a fall, then a climb.",
        "committed runs under results/: the laptop tier (ViT-Ti, 32 px / patch 8, batches of 64, the floors), CPU",
        marks={"last layer released": phases.freeze_steps, "warm-up ends": phases.warmup_steps})


def summary_notes(notes: DinoNotes | None) -> ResultSection:
    """What the notes showed, with a table of the runs that learned."""
    if notes is None:
        return _absent()
    every = notes.former + notes.unfloored + notes.floors + notes.long + notes.tier[16] + notes.tier[48]
    curves = compute_curves([("", stored_entry(key)) for key in NOTES_ENTRIES],
                            datasets=("tiny-imagenet", "dtd", "synthetic-objects", "synthetic-textures"))
    fraction = PUBLISHED[0].compute / max(curve.compute[-1] for curve in curves)
    spread, two_se = rows_spread(notes.floors)
    learned = [row for row in every if row.rule.learned]
    lines = ["| run that learned | steps | CLS k-NN gain / the rule's threshold (points) |", "| --- | ---: | --- |"]
    lines += [f"| {row.name}, {row.recipe.epochs[-1]} epochs | {row.steps:,} | {row.rule.knn.learned:+.1f} / "
              f"{row.rule.knn.threshold:.1f} |" for row in learned]
    found = {"compute_fraction": Value(fraction, f"1/{round(fraction)}"), "learned_runs": Value(len(learned), str(len(learned))),
             "learned_least_steps": Value(min(row.steps for row in learned), f"{min(row.steps for row in learned):,}")}
    return _section("\n".join(lines), found, {
        "every run is counted": len(curves) == len(every),
        "every run had a twenty-fifth or less of the public compute": round(fraction) >= 25,
        "the rows differ within two standard errors": spread < two_se,
        "four runs learned, each of at least 3,744 steps": len(learned) == 4 and min(row.steps for row in learned) >= 3744})
