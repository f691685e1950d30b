"""The knob's DINO rows: the runs that each change one part of the recipe, and their lab notes.

A row is a run at the knob's object end that changes one part of the hue recipe
(:data:`~ib_tutorial.book.knob.DINO_HUE_SWEEP`). Rows ran for different lengths, so they are also
read at :data:`ROWS_AT`, the step every one of them reached. Each ``*_notes`` function renders
one investigation as a table.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from ..data.synthetic import SyntheticWorld
from ..measure.bootstrap import Interval
from ..training.augment import IMAGENET_MEAN, IMAGENET_STD, MultiCropAugmentation, MultiCropDataset
from ..training.dino import INFORMATION_FRACTION
from ..training.runs import RunDirectory
from .claims import interval_text, knn_interval
from .knob import DINO_HUE_SWEEP, KnobSweep, factors_markdown, knob_command
from .learned import Learned, learned_rule
from .plots import add_caption
from .recipes import Recipe, read_recipe, read_recipes, recipe_settings
from .run_profiles import read_factors
from .tables import ResultSection, absent


#: The step at which rows of different lengths are compared: epoch 4 of 156 steps.
ROWS_AT = 624


@dataclass(frozen=True)
class KnobRow:
    """One run at the knob's object end: its recipe to the end (``whole``) and at :data:`ROWS_AT`
    (``early``), its last CLS k-NN top-1 with its Wilson interval, the teacher's information
    (step, nats) at each logged step, and its ``factors.json`` (None where not measured)."""

    name: str
    folder: Path
    whole: Recipe
    early: Recipe
    steps: int
    end: Interval
    information: tuple[tuple[int, float], ...]
    learned: Learned
    factors: dict | None

    @property
    def changes(self) -> dict:
        """The settings it changed, without those that shape local crops in a row that makes none."""
        no_locals = self.whole.changes.get("local_crops_number") == 0
        return {key: value for key, value in self.whole.changes.items() if not (no_locals and key.startswith("local_crop_"))}

    def information_at(self, step: int) -> float:
        """The teacher's information (nats) at the first logged step at or after ``step``."""
        return next(nats for logged, nats in self.information if logged >= step)

    def lowest_information(self, until: int | None = None) -> float:
        """The teacher's lowest logged information (nats), over the whole run or up to step ``until``."""
        return min(nats for logged, nats in self.information if until is None or logged <= until)

    def factor(self, name: str, epoch: int, pool: str = "cls") -> float:
        """k-NN top-1 (%) of factor ``name`` (or ``"class"``) at ``epoch``."""
        return self.factors["epochs"][str(epoch)][pool][name]


def read_row(folder: str | Path, reference: dict, name: str | None = None) -> KnobRow:
    """The run in ``folder`` as a :class:`KnobRow`, its changes taken against ``reference``."""
    run = RunDirectory(folder)
    knn, train = run.read_metrics("knn"), run.read_metrics("train")
    return KnobRow(name or run.path.name, run.path, read_recipe(folder, reference), read_recipe(folder, reference, ROWS_AT),
                   train[-1]["step"], knn_interval(knn[-1]),
                   tuple((r["step"], r["teacher_information"]) for r in train if "teacher_information" in r),
                   learned_rule(run), read_factors(folder))


def hue_reference(hue_sweep: KnobSweep) -> dict:
    """The settings of the hue recipe's object end, against which every row's changes are read."""
    run = hue_sweep.runs[min(hue_sweep.weights)][1]
    return recipe_settings(run.config.train, run.config.view)


def object_end_rows(hue_sweep: KnobSweep) -> dict[str, KnobRow]:
    """The hue recipe's object end and the other runs at ``w = 0`` of its bundle, by name."""
    reference, swept = hue_reference(hue_sweep), {spec for spec, _ in hue_sweep.runs.values()}
    bundle = hue_sweep.bundle
    others = [run for spec, run in bundle.runs.items()
              if spec not in swept and run.config.dataset_options.get("texture_weight") == 0]
    runs = [hue_sweep.runs[min(hue_sweep.weights)][1], *others]
    return {("the hue recipe" if index == 0 else f"row {index}"): read_row(bundle.path / run.spec.folder, reference)
            for index, run in enumerate(runs)}


def folder_rows(folder: str | Path, hue_sweep: KnobSweep, same_world: bool = True) -> dict[str, KnobRow]:
    """The DINO runs directly under ``folder`` by name, read against the hue recipe: those on its
    world (``same_world``), or those on another (the grey palette)."""
    reference = hue_reference(hue_sweep)
    object_end = hue_sweep.runs[min(hue_sweep.weights)][1]
    world = read_recipe(hue_sweep.bundle.path / object_end.spec.folder, reference).dataset
    return {recipe.name: read_row(Path(folder) / recipe.name, reference)
            for recipe in read_recipes(folder, reference) if (recipe.dataset == world) == same_world}


def rows_named(rows: dict[str, KnobRow], prefixes: Iterable[str]) -> dict[str, KnobRow]:
    """The rows named by one of ``prefixes`` and a number (``"o"`` names ``o1-invert``), in order."""
    return {name: row for name, row in rows.items() if name[:1] in tuple(prefixes) and name[1:2].isdigit()}


def rows_table(rows: dict[str, KnobRow], unchanged: str = "(the hue recipe)") -> str:
    """Every row one line; ``unchanged``: what a row that changed nothing says."""
    lines = ["| run | changed (against the hue recipe) | steps | CLS k-NN %: init -> end [90 %] | teacher (nats): "
             f"lowest -> last tenth | at step {ROWS_AT}: k-NN %, teacher (nats) | learned |",
             "| --- | --- | ---: | --- | --- | --- | --- |"]
    changed = {name: ", ".join(f"{key}={value}" for key, value in sorted(row.changes.items())) or unchanged
               for name, row in rows.items()}
    lines += [f"| {name} | {changed[name]} | {row.steps} | {row.whole.knn_cls[0]:.1f} -> {row.end.estimate:.1f} "
              f"{interval_text(row.end)} | {row.lowest_information():.2f} -> {row.whole.teacher_information:.2f} | "
              f"{row.early.knn_cls[-1]:.1f}, {row.early.teacher_information:.2f} | {'yes' if row.learned.learned else 'no'} |"
              for name, row in rows.items()]
    return "\n".join(lines) + "\n"


def _listed(values: list[str]) -> str:
    return ", ".join(values[:-1]) + " and " + values[-1]


def _missing() -> ResultSection:
    return absent(knob_command("laptop", DINO_HUE_SWEEP, "/tmp/knob"), "DINO run of the knob's object end")


def views_notes(hue_sweep: KnobSweep | None) -> ResultSection:
    """The hue recipe's object end and the changes of its views in its own bundle, with their factors."""
    if hue_sweep is None:
        return _missing()
    rows = object_end_rows(hue_sweep)
    crops = [row for row in rows.values() if "invert" not in row.changes]
    colour = next(row for row in rows.values() if "invert" in row.changes)
    train = RunDirectory(colour.folder).read_metrics("train")
    log_k = math.log(RunDirectory(colour.folder).read_config().train.out_dim)
    collapsed_at = next((r["step"] for r in train if r["teacher_information"] < 0.05), None)
    hue = rows["the hue recipe"]
    first, last = hue.factors["epochs"]["0"]["cls"], hue.factors["epochs"][max(hue.factors["epochs"], key=int)]["cls"]
    values = {"knob_rows_best": f"{max(row.end.estimate for row in crops):.1f}", "knob_rows_init": f"{hue.whole.knn_cls[0]:.1f}",
              "knob_colour_knn": " -> ".join(f"{value:.1f}" for value in colour.whole.knn_cls[::2]),
              "knob_colour_gain": f"{colour.whole.gain:+.1f}", "knob_colour_collapse_step": collapsed_at,
              "knob_colour_loss": f"{train[-1]['loss']:.3f}", "knob_colour_log_k": f"{log_k:.3f}",
              "knob_information_fraction": f"{INFORMATION_FRACTION * 100:g} %",
              "knob_colour_floor": f"{colour.learned.teacher_floor:.2f}",
              "knob_colour_information": f"{colour.learned.teacher_information:.2f}"}
    values |= {f"knob_factor_{name.split()[-1]}": f"{first[name]:.1f} -> {last[name]:.1f}"
               for name in ("class", "object value", "object hue", "object radius")}
    statements = {
        "every crop row ended below its initialisation": len(crops) == 3 and all(r.end.estimate < r.whole.knn_cls[0] for r in crops),
        "the colour row's teacher collapsed within 500 steps": collapsed_at is not None and collapsed_at <= 500
                                                              and colour.whole.teacher_information < 0.01,
        "the colour row's loss ended at log K": abs(train[-1]["loss"] - log_k) < 0.01,
        "the colour row gained about ten points, most in two epochs":
            8 < colour.whole.gain < 13 and colour.whole.knn_cls[1] - colour.whole.knn_cls[0] > 4,
        "the rule counts its k-NN gain and not its teacher": colour.learned.knn.learned_beyond_noise and not colour.learned.learned,
        "the hue recipe lost the class and read the object's value perfectly, its hue better":
            last["class"] < first["class"] and last["object value"] >= 99 and last["object hue"] > first["object hue"] + 5,
        "every crop row read the object's value perfectly": all(r.factor("object value", 16) >= 99 for r in crops),
        "no row learned": not any(row.learned.learned for row in rows.values())}
    details = factors_markdown({name: row.factors for name, row in rows.items()})
    return ResultSection(rows_table(rows) + "\nWhat each network's CLS token read of the object's factors, from the "
                         "random initialisation to epoch 16 (90 % Wilson intervals):\n\n" + details,
                         values=values, statements=statements)


def _world_rows(hue_sweep: KnobSweep, folder: Path) -> dict[str, KnobRow]:
    """The hue recipe's object end, its colour row and the rows in ``folder`` on the same world."""
    own = object_end_rows(hue_sweep)
    colour = next(row for row in own.values() if "invert" in row.changes)
    return {"the hue recipe": own["the hue recipe"], "the colour row": colour} | folder_rows(folder, hue_sweep)


def step_notes(hue_sweep: KnobSweep | None, folder: Path) -> ResultSection:
    """The colour (``o``) and the grey, token, teacher and learning-rate rows (``g``) at :data:`ROWS_AT`."""
    if hue_sweep is None or not Path(folder).exists():
        return _missing()
    every = _world_rows(hue_sweep, folder)
    rows = {name: every[name] for name in ("the hue recipe", "the colour row")} | rows_named(every, ("o", "g"))
    collapsed = [name for name, row in every.items() if row.early.teacher_information < 0.1]
    kept = [name for name in rows if name not in collapsed]
    strong = {name for name, row in every.items() if row.changes.get("color_strength", 1) >= 2}
    toned = {name for name, row in every.items() if row.changes.get("tone_curve", 0) > 0}
    grey = {name: row for name, row in rows.items() if row.changes.get("grayscale") == 1.0}
    hue, tokens, sharp, slow = (every[name] for name in ("the hue recipe", "g3-tokens-8x8", "g4-sharp-teacher", "g5-lr-quarter"))
    invert = every["o1-invert"].early.knn_cls[-1]
    values = {"knob_rows_collapsed": ", ".join(name for name in collapsed if name in strong), "knob_rows_kept": ", ".join(kept),
              "knob_grey_rows": " and ".join(f"`{name}`" for name in grey),
              "knob_grey_knn": " and ".join(f"{row.early.knn_cls[-1]:.1f}" for row in grey.values()),
              "knob_grey_value": " and ".join(f"{row.factor('object value', 0):.1f} -> {row.factor('object value', 4):.1f}"
                                              for row in grey.values()),
              "knob_invert_knn": f"{invert:.1f}",
              "knob_tokens_knn": f"{tokens.early.knn_cls[0]:.1f} -> {tokens.early.knn_cls[-1]:.1f}",
              "knob_rows_hue_knn": f"{hue.early.knn_cls[-1]:.1f}", "knob_sharp_knn": f"{sharp.early.knn_cls[-1]:.1f}",
              "knob_sharp_info": f"{sharp.early.teacher_information:.2f}", "knob_hue_info": f"{hue.early.teacher_information:.2f}",
              "knob_sharp_value": f"{sharp.factor('object value', 0):.1f} -> {sharp.factor('object value', 4):.1f}",
              "knob_slow_knn": " -> ".join(f"{value:.1f}" for value in slow.early.knn_cls)}
    statements = {
        "the rows that collapsed are those with twice DINO's colour jitter or tone curves": set(collapsed) == strong | toned,
        "every row that kept its teacher lost the class": all(every[n].early.knn_cls[-1] < every[n].early.knn_cls[0] for n in kept),
        "two grey rows kept their teacher, each within two points of the invert row":
            len(grey) == 2 and set(grey) <= set(kept) and all(abs(r.early.knn_cls[-1] - invert) < 2 for r in grey.values()),
        "the grey rows read the object's value better than at the initialisation":
            all(r.factor("object value", 4) > r.factor("object value", 0) for r in grey.values()),
        "with 8 x 8 tokens the class stayed at chance": tokens.changes.get("patch_size") == 4
            and abs(tokens.early.knn_cls[0] - 10) < 2 and tokens.early.knn_cls[-1] < tokens.early.knn_cls[0] + 2,
        "the sharper teacher said more and lost the class as fast, reading the object's value better":
            sharp.early.teacher_information > 1.5 * hue.early.teacher_information
            and sharp.early.knn_cls[-1] < hue.early.knn_cls[-1] + 2
            and sharp.factor("object value", 4) > sharp.factor("object value", 0),
        "a quarter of the learning rate lost the class more slowly": hue.early.knn_cls[-1] < slow.early.knn_cls[-1]
            < slow.early.knn_cls[0] and slow.changes.get("lr") == 5e-4,
        "no row learned": not any(row.learned.learned for row in rows.values())}
    return ResultSection(rows_table(rows), values=values, statements=statements)


def tone_views_figure(row: KnobRow, images: int = 4) -> plt.Figure:
    """The first training images of ``row``'s world and the views its recipe draws of them in epoch 0."""
    config = RunDirectory(row.folder).read_config()
    world = SyntheticWorld("train", img_size=config.view.img_size, **config.dataset_options)
    views_of = MultiCropDataset(world, MultiCropAugmentation(config.view, config.train.local_crops_number), seed=config.seed)
    views_of.set_epoch(0)
    columns = 3 + config.train.local_crops_number
    fig, axes = plt.subplots(images, columns, figsize=(1.5 * columns, 1.5 * images), layout="constrained")
    mean, std = torch.tensor(IMAGENET_MEAN)[:, None, None], torch.tensor(IMAGENET_STD)[:, None, None]
    for line, index in zip(axes, range(images)):
        image, label = world[index]
        views = [(view * std + mean).clamp(0, 1).permute(1, 2, 0) for view in views_of[index][0]]
        for ax, picture in zip(line, [image, *views]):
            ax.imshow(picture, interpolation="nearest")
            ax.set_xticks([]), ax.set_yticks([])
        line[0].set_ylabel(f"class {label}", fontsize="small")
    titles = ["image", "global view 1", "global view 2", *(f"local view {k + 1}" for k in range(config.train.local_crops_number))]
    for ax, title in zip(axes[0], titles):
        ax.set_title(title, fontsize="small")
    add_caption(fig, f"Four images of the object end and the views {row.name} draws of them in its first epoch. "
                     f"--tone-curve 1 with the hue recipe's crops; {config.view.img_size} px images, local views "
                     f"{config.view.local_crop_size} px.")
    return fig


def tone_notes(hue_sweep: KnobSweep | None, folder: Path) -> ResultSection:
    """The tone-curve rows (``t``): curved in every view, in half, or in every whole-image view
    (``t1``-``t3``); ``t1`` with teachers two and four times as sharp; ``t1`` without weight decay."""
    if hue_sweep is None or not Path(folder).exists():
        return _missing()
    every = _world_rows(hue_sweep, folder)
    rows = rows_named(every, ("t",))
    tone = [rows[name] for name in ("t1-tone-curves", "t2-tone-curves-half", "t3-tone-curves-whole")]
    sharpened = [rows[name] for name in ("t1-tone-curves", "t4-tone-curves-sharp-teacher",
                                         "t5-tone-curves-sharper-teacher")]
    undecayed, t1 = rows["t6-tone-curves-no-decay"], rows["t1-tone-curves"]
    toned = {name for name, row in every.items() if row.changes.get("tone_curve", 0) > 0}
    others = max(row.early.knn_cls[-1] for name, row in every.items() if name not in toned)
    spread = max(max(r.early.knn_cls[e] for r in sharpened) - min(r.early.knn_cls[e] for r in sharpened)
                 for e in range(len(t1.early.knn_cls)))
    ratio = sharpened[2].information_at(200) / sharpened[0].information_at(200)
    gap = max(abs(a - b) for a, b in zip(undecayed.early.knn_cls, t1.early.knn_cls))
    info = lambda chosen, step: _listed([f"{row.information_at(step):.2f}" for row in chosen])
    values = {"knob_tone_first_step": t1.information[0][0], "knob_tone_info_first": info(tone, 0),
              "knob_tone_info_310": info(tone, 310),
              "knob_tone_info_last": _listed([f"{r.early.teacher_information:.2f}" for r in tone]),
              "knob_tone_knn": _listed([f"{r.early.knn_cls[-1]:.1f}" for r in tone]), "knob_tone_others": f"{others:.1f}",
              "knob_sharpened_info_first": info(sharpened, 0), "knob_sharpened_info_200": info(sharpened, 200),
              "knob_sharpened_info_last": _listed([f"{r.early.teacher_information:.2f}" for r in sharpened]),
              "knob_sharpened_knn": _listed([f"{r.early.knn_cls[-1]:.1f}" for r in sharpened]),
              "knob_sharpened_spread": f"{spread:.1f}", "knob_sharpened_ratio": f"{ratio:.0f}",
              "knob_nodecay_knn": _listed([f"{value:.1f}" for value in undecayed.early.knn_cls]),
              "knob_nodecay_versus": ("the same as t1's to the first decimal" if f"{gap:.1f}" == "0.0"
                                      else f"within {gap:.1f} points of t1's")}
    for key, row in (("t1", t1), ("t3", rows["t3-tone-curves-whole"])):
        for factor in ("value", "radius"):
            values[f"knob_tone_{key}_{factor}"] = f"{row.factor('object ' + factor, 0):.1f} -> {row.factor('object ' + factor, 4):.1f}"
    ends = (tone[0], tone[2])
    statements = {
        "each tone row's teacher started informative and had collapsed by step 624":
            all(r.information_at(0) > 0.5 and r.early.teacher_information < 0.1 for r in tone),
        "curving half the views slowed the fall": t1.whole.changes.get("tone_curve") == 1
            and rows["t2-tone-curves-half"].changes["tone_curve"] == 0.5
            and tone[1].information_at(310) > 2 * max(r.information_at(310) for r in ends),
        "every view curved, the class rose more than in any other row": all(r.early.knn_cls[-1] > others + 5 for r in ends),
        "so did the object's value and size":
            all(r.factor(f, 4) > r.factor(f, 0) for r in ends for f in ("object value", "object radius")),
        "the sharper the teacher, the more it said at the start and at step 200":
            [r.early.changes.get("teacher_temp", 0.04) for r in sharpened] == [0.04, 0.02, 0.01]
            and all(sharpened[0].information_at(s) < sharpened[1].information_at(s) < sharpened[2].information_at(s)
                    for s in (0, 200)),
        "the sharpest said several times as much at step 200, every one collapsed, and the class rose the same way":
            ratio > 5 and all(r.early.teacher_information < 0.1 for r in sharpened) and spread < 3,
        "without weight decay t1 moved as it did with it":
            undecayed.changes == t1.changes | {"weight_decay": 0.0, "weight_decay_end": 0.0}
            and undecayed.early.teacher_information < 0.1 and len(undecayed.early.knn_cls) == len(t1.early.knn_cls) and gap < 1,
        "no row learned": not any(row.learned.learned for row in rows.values())}
    return ResultSection(rows_table(rows), (tone_views_figure(t1),), values, statements)


def palette_figure(row: KnobRow, images: int = 6) -> plt.Figure:
    """The same held-out images of ``row``'s world in their drawn colours and on the grey palette."""
    config = RunDirectory(row.folder).read_config()
    worlds = {palette: SyntheticWorld("val", img_size=config.view.img_size, **(config.dataset_options | {"palette": palette}))
              for palette in ("random", "grey")}
    fig, axes = plt.subplots(2, images, figsize=(1.4 * images, 3.1), layout="constrained")
    for line, (palette, world) in zip(axes, worlds.items()):
        for ax, index in zip(line, range(images)):
            image, label = world[index]
            ax.imshow(image, interpolation="nearest")
            ax.set_xticks([]), ax.set_yticks([])
            ax.set_title(f"class {label}", fontsize="x-small")
        line[0].set_ylabel(f"{palette} palette", fontsize="small")
    add_caption(fig, f"The same held-out images of the object end with their drawn colours and on palette='grey'. "
                     f"synthetic-mix at w = 0, {config.view.img_size} px.")
    return fig


def palette_notes(hue_sweep: KnobSweep | None, folder: Path) -> ResultSection:
    """The grey-palette rows (``p``), with the hue recipe's crops and with whole-image views."""
    if hue_sweep is None or not Path(folder).exists():
        return _missing()
    rows = folder_rows(folder, hue_sweep, same_world=False)
    grey, whole = rows["p1-grey-palette"], rows["p2-grey-palette-whole"]
    drawn = object_end_rows(hue_sweep)["the hue recipe"]
    values = {"knob_palette_init": f"{grey.whole.knn_cls[0]:.1f}", "knob_palette_drawn_init": f"{drawn.whole.knn_cls[0]:.1f}",
              "knob_palette_epochs": _listed([str(epoch) for epoch in grey.whole.epochs[::4]])}
    for key, row in (("p1", grey), ("p2", whole)):
        values |= {f"knob_palette_{key}_knn": ", ".join(f"{value:.1f}" for value in row.whole.knn_cls[::4]),
                   f"knob_palette_{key}_lowest": f"{row.lowest_information():.2f}",
                   f"knob_palette_{key}_last": f"{row.whole.teacher_information:.2f}"}
    for factor in ("object radius", "object x", "object y"):
        values[f"knob_palette_p2_{factor.split()[-1]}"] = f"{whole.factor(factor, 0):.1f} -> {whole.factor(factor, 16):.1f}"
    statements = {
        "on the grey palette the random network reads the class several times better":
            grey.whole.knn_cls[0] > 90 and grey.whole.knn_cls[0] > 3 * drawn.whole.knn_cls[0],
        "both rows were evaluated at the same epochs":
            grey.whole.epochs[::4] == [0, 4, 8, 12, 16] and whole.whole.epochs == grey.whole.epochs,
        "the hue recipe's crops collapsed the teacher": grey.lowest_information() < 0.05 and grey.whole.teacher_information < 0.1,
        "whole-image views brought the teacher back from its dip":
            whole.lowest_information() < 0.2 and whole.whole.teacher_information > 0.5,
        "both lost the class, whole-image views more": whole.end.estimate < grey.end.estimate < grey.whole.knn_cls[0] - 5,
        "whole-image views kept the object's size and lost its place":
            whole.factor("object radius", 16) >= whole.factor("object radius", 0)
            and all(whole.factor(f, 16) < whole.factor(f, 0) - 5 for f in ("object x", "object y")),
        "no row learned": not any(row.learned.learned for row in rows.values())}
    table = rows_table(rows, "(none: the world is grey)") + "\n" + factors_markdown({name: row.factors for name, row in rows.items()})
    return ResultSection(table, (palette_figure(grey),), values, statements)
