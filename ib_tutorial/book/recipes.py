"""Training recipes side by side: each run (a directory written by
:func:`ib_tutorial.training.loop.train`) read as one table row of the lab notes: the settings in
which it differs from a reference, the steps of its warm-up and last-layer freeze
(:mod:`ib_tutorial.training.schedules`), its k-NN accuracy at every evaluation, its teacher's
entropy and information, and its wall time and throughput. A row can be read as it stood at a
given step (``until_step``), so that runs of different lengths are compared at the same point.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..presets import Preset, TrainSettings, ViewSettings
from ..training.schedules import Phases
from ..training.runs import RunDirectory
from .learned import last_tenth, teacher_information

# Settings that describe the bookkeeping of a run, not its recipe.
NOT_RECIPE = ("knn_every", "checkpoint_every", "log_every", "num_workers", "threads", "precision",
              "knn_train_images", "knn_eval_images", "knn_k", "knn_temperature", "eval_split")
# Settings that a row reads as the steps of the phases they make (Recipe.phases), not one by one.
PHASE_SETTINGS = ("warmup_epochs", "warmup_min_steps", "freeze_last_layer", "freeze_min_steps")


@dataclass(frozen=True)
class Recipe:
    """One run as a row of the recipe table: ``changes`` against the reference; k-NN top-1 (%)
    at each evaluated epoch on the CLS and mean patch tokens; over the last logged tenth, the
    teacher's entropy as a fraction of :math:`\\log K` and its information (nats); the median
    throughput."""

    name: str
    dataset: str
    changes: dict
    phases: Phases
    epochs: list[int]
    knn_cls: list[float]
    knn_mean: list[float]
    teacher_entropy: float
    teacher_information: float | None
    wall_minutes: float | None
    images_per_s: float

    @property
    def gain(self) -> float:
        """Final minus initial k-NN top-1 on the CLS token, in points."""
        return self.knn_cls[-1] - self.knn_cls[0]


def run_settings(train: TrainSettings, view: ViewSettings) -> dict:
    """Every training and view setting of a run but bookkeeping, flat, as JSON reads it back
    (tuples become lists), so that a config read back equals a preset."""
    settings = {**dataclasses.asdict(view), **dataclasses.asdict(train)}
    return {key: json.loads(json.dumps(value)) for key, value in settings.items() if key not in NOT_RECIPE}


def recipe_settings(train: TrainSettings, view: ViewSettings) -> dict:
    """:func:`run_settings` but those of the phases, which a row reads as their steps."""
    return {key: value for key, value in run_settings(train, view).items() if key not in PHASE_SETTINGS}


def tier_changes(train: TrainSettings, view: ViewSettings, preset: Preset, dataset: str) -> dict:
    """``{setting: (the run's value, the tier's)}`` for every setting of :func:`run_settings`
    in which a run differs from what ``preset`` runs on ``dataset`` today."""
    mine, tier = run_settings(train, view), run_settings(preset.train, preset.view(dataset))
    return {key: (value, tier[key]) for key, value in mine.items() if tier[key] != value}


def preset_recipe(preset: Preset, dataset: str) -> dict:
    """:func:`recipe_settings` of what ``preset`` would run on ``dataset``."""
    return recipe_settings(preset.train, preset.view(dataset))


def read_recipe(run_dir: str | os.PathLike, reference: dict, until_step: int | None = None) -> Recipe:
    """One run as a :class:`Recipe`, its changes taken against ``reference`` (a
    :func:`recipe_settings`); with ``until_step``, as it stood after that many steps."""
    run = RunDirectory(run_dir)
    config = run.read_config()
    settings = recipe_settings(config.train, config.view)
    changes = {key: value for key, value in settings.items() if reference.get(key) != value}
    knn, steps = run.read_metrics("knn"), run.read_metrics("train")
    if until_step is not None:
        knn = [r for r in knn if r["step"] <= until_step]
        steps = [r for r in steps if r["step"] <= until_step]
    if not knn or not steps:
        raise ValueError(f"{run.path} has no k-NN evaluation or no training step logged yet")
    tail = last_tenth(steps)
    log_k = math.log(settings["out_dim"])
    rates = sorted(r["images_per_s"] for r in steps)
    return Recipe(
        name=run.path.name,
        dataset=config.dataset + "".join(f":{k}={v}" for k, v in config.dataset_options.items()),
        changes=changes,
        phases=Phases.of(config.train, config.steps_per_epoch, config.objective.phase_floors),
        epochs=[r["epoch"] for r in knn],
        knn_cls=[r["top1"] for r in knn],
        knn_mean=[r.get("top1_mean", math.nan) for r in knn],
        teacher_entropy=sum(r["teacher_entropy"] for r in tail) / len(tail) / log_k,
        teacher_information=teacher_information(steps),
        wall_minutes=knn[-1]["wall_s"] / 60 if "wall_s" in knn[-1] else None,
        images_per_s=rates[len(rates) // 2],
    )


def read_recipes(folder: str | os.PathLike, reference: dict, until_step: int | None = None) -> list[Recipe]:
    """Every DINO run directly under ``folder`` as a recipe, by name (a supervised control
    beside them logs no teacher)."""
    runs = sorted(p for p in Path(folder).iterdir() if (p / "config.json").exists())
    return [read_recipe(run, reference, until_step) for run in runs
            if RunDirectory(run).read_config().objective.compared_with_paper]

