"""A run's settings: its spec (:class:`RunSpec`), its resolved configuration (:class:`RunConfig`,
written to ``config.json``) and the table of objectives (:data:`OBJECTIVES`).

A run as one string, ``DATASET[:KEY=VALUE,...][@SETTING=VALUE,...]``: what follows ``@``
overrides the preset for this run only, e.g. ``tiny-imagenet@objective=supervised``; a pair is
written in brackets, ``@global_crop_scale=(0.9,1.0)``.
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import torch

from ..command_line import argument, argument_name
from ..data import check_dataset_options, held_out_split
from ..data.spec import parse_options, parse_spec, spec_folder
from ..data.subsets import SubsetRecord
from ..files import data_root
from ..machine import resolve_precision
from ..models import ARCHITECTURES
from ..presets import Preset, ProfileSettings, TrainSettings, ViewSettings, resolve_device, training_overrides
from ..schema import from_json
from .dino import DINOTraining
from .objective import Objective
from .supervised_step import SupervisedTraining


@dataclass(frozen=True)
class RunSpec:
    """One run's dataset, dataset options and training overrides, with the text they came from
    (a bundle's key for the run; ``str()`` gives it back)."""

    text: str
    dataset: str
    options: dict = field(default_factory=dict, compare=False)  # both follow from the text
    overrides: dict = field(default_factory=dict, compare=False)

    @classmethod
    def parse(cls, text: str) -> RunSpec:
        dataset_spec, _, override_text = text.partition("@")
        dataset, options = parse_spec(dataset_spec)
        overrides = parse_options(override_text)
        _check_names(overrides, f" in {text!r}")
        return cls(text, dataset, options, overrides)

    @classmethod
    def of(cls, spec: str | RunSpec) -> RunSpec:
        """``spec``, parsed when it is text."""
        return spec if isinstance(spec, RunSpec) else cls.parse(spec)

    def __str__(self) -> str:
        return self.text

    @property
    def dataset_spec(self) -> str:
        """The dataset with its options, without the overrides: ``"dtd:folder=dtd"``."""
        return self.text.partition("@")[0]

    @property
    def folder(self) -> str:
        """The run's folder name in a results bundle."""
        return spec_folder(self.text)


AUGMENTATIONS = ("loader", "batched")  # where the views are made (TrainSettings.augmentation)
# Whole-number settings for which 0 is a choice (none of them, or no warm-up); every other one is at least 1.
MAY_BE_ZERO = ("warmup_epochs", "warmup_min_steps", "warmup_teacher_temp_epochs", "local_crops_number", "freeze_last_layer",
               "freeze_min_steps", "num_workers")
# Settings that may differ when a run is resumed (they do not change its trajectory).
RESUMABLE_DIFFERENCES = ("world_size", "batch_per_process", "torch", "timm", "num_workers", "threads")

#: Every objective a run can train with, by name: callers look one up here instead of testing its name.
OBJECTIVES: dict[str, type[Objective]] = {objective.name: objective for objective in (DINOTraining, SupervisedTraining)}


def get_objective(name: str) -> type[Objective]:
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(f"Unknown objective {name!r}; known: {', '.join(OBJECTIVES)}. "
                         f"Choose one with {argument('objective', '<name>')}.") from None


@dataclass(frozen=True)
class RunConfig:
    """Every resolved setting of a training run. ``steps_per_epoch`` and ``train_images_used`` are
    known once the data is loaded; ``train_data`` and ``profile`` are None in older runs (profiled
    with their preset's settings of today)."""

    dataset: str
    dataset_options: dict
    held_out_split: str
    preset: str
    seed: int
    device: str
    precision: str
    world_size: int
    batch_per_process: int
    model: dict
    view: ViewSettings
    train: TrainSettings
    versions: dict = field(default_factory=dict)
    steps_per_epoch: int | None = None
    train_images_used: int | None = None
    train_data: SubsetRecord | None = None
    profile: ProfileSettings | None = None

    @classmethod
    def resolve(cls, dataset: str, preset: Preset, overrides: dict, dataset_options: dict | None = None,
                world_size: int | None = None) -> "RunConfig":
        """``preset`` on ``dataset`` with ``overrides`` (:func:`~ib_tutorial.presets.training_overrides`):
        the one place where overrides are applied and the device resolved. ``world_size``
        defaults to ``$WORLD_SIZE``, else 1."""
        check_dataset_options(dataset, dataset_options or {})  # an unknown name or option fails here, first
        train, view = resolve_settings(preset, dataset, overrides)
        device = resolve_device(preset.replace(device=overrides.get("device", preset.device)))
        world_size = world_size or int(os.environ.get("WORLD_SIZE", "1"))
        if train.batch_size % world_size:
            raise ValueError(f"batch_size {train.batch_size} must be divisible by the number of processes ({world_size})")
        if train.num_workers is None:  # one per core, shared by the training processes of this node
            per_node = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
            train = dataclasses.replace(train, num_workers=max(1, (os.cpu_count() or 1) // per_node))
        options = dict(dataset_options or {})
        return cls(dataset=dataset, dataset_options=options,
                   held_out_split=train.eval_split or held_out_split(dataset, options),
                   preset=preset.name, seed=overrides.get("seed", preset.seed), device=device.type,
                   precision=resolve_precision(train.precision, device),
                   world_size=world_size, batch_per_process=train.batch_size // world_size,
                   model={"arch": train.arch, **ARCHITECTURES[train.arch]}, view=view, train=train,
                   versions={"torch": torch.__version__, "timm": metadata.version("timm")}, profile=preset.profile)

    @property
    def objective(self) -> type[Objective]:
        return get_objective(self.train.objective)

    def to_dict(self) -> dict:
        """JSON-ready data (``config.json``), tuples as lists."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, data: dict) -> "RunConfig":
        """What :meth:`to_dict` wrote; settings newer than the run read as their defaults."""
        return from_json(cls, data)

    def check_resumable(self, saved: "RunConfig", where: str | os.PathLike) -> None:
        """Refuse to resume the run in ``where`` (configured as ``saved``) with settings that would
        change its trajectory (a run older than its ``train_data`` record is compared without it)."""
        current = self if saved.train_data is not None else dataclasses.replace(self, train_data=None)
        old, new = _flatten(saved.to_dict()), _flatten(current.to_dict())
        changed = sorted(key for key in set(old) | set(new)
                         if key.split(".")[-1] not in RESUMABLE_DIFFERENCES and not key.startswith("profile.")
                         and old.get(key) != new.get(key))
        if changed:
            raise ValueError(f"{where} holds a run with different settings ({', '.join(changed)}). "
                             "Resume it with its own settings, or start a new run with a different --out.")


def resolve_settings(preset: Preset, dataset: str, overrides: dict) -> tuple[TrainSettings, ViewSettings]:
    """A preset's training settings and ``dataset``'s view with ``overrides`` applied and checked."""
    _check_names(overrides)
    view_names = {f.name for f in dataclasses.fields(ViewSettings)}
    train_names = {f.name for f in dataclasses.fields(TrainSettings)}
    train = dataclasses.replace(preset.train, **{k: v for k, v in overrides.items() if k in train_names})
    view = dataclasses.replace(preset.view(dataset), **{k: v for k, v in overrides.items() if k in view_names})
    objective = get_objective(train.objective)  # an unknown name fails here, before anything is built
    if train.label_shuffle_seed is not None and not objective.uses_labels:
        raise ValueError(f"{argument('label_shuffle_seed', train.label_shuffle_seed)} shuffles the training labels, "
                         f"which objective {train.objective!r} does not read: use it with "
                         f"{argument('objective', 'supervised')}, or leave it out.")
    if train.augmentation not in AUGMENTATIONS:
        raise ValueError(f"Unknown augmentation {train.augmentation!r}; known: {', '.join(AUGMENTATIONS)}. "
                         f"Choose one with {argument('augmentation', '<name>')}.")
    _check_counts(train, view, preset, overrides)
    if not 0 <= view.hue_jitter * view.color_strength <= 0.5:
        raise ValueError(f"{argument('hue_jitter', view.hue_jitter)} times {argument('color_strength', view.color_strength)} "
                         f"rotates hue by up to {view.hue_jitter * view.color_strength:g} of a turn; a rotation is at most "
                         f"half a turn: give a product in [0, 0.5] (0.5 draws every hue).")
    for name, event in (("invert", "a view is inverted"), ("grayscale", "a view is turned grey"),
                        ("tone_curve", "a view's channels go through random tone curves")):
        if not 0 <= getattr(view, name) <= 1:
            raise ValueError(f"{argument(name, getattr(view, name))} is the probability that {event}: give one in [0, 1].")
    for size in (view.img_size, view.local_crop_size):
        if size % view.patch_size:
            raise ValueError(f"crop size {size} is not a multiple of {argument('patch_size', view.patch_size)}: give "
                             f"{argument_name('img_size')} and {argument_name('local_crop_size')} multiples of it.")
    return train, view


def _check_names(overrides: dict, where: str = "") -> None:
    known = training_overrides()
    if unknown := sorted(set(overrides) - set(known)):
        raise ValueError(f"Unknown training setting(s) {unknown}{where}. Known: {', '.join(sorted(known))}.")


def _check_counts(train: TrainSettings, view: ViewSettings, preset: Preset, overrides: dict) -> None:
    """Refuse whole-number settings under 1 (under 0 for :data:`MAY_BE_ZERO`), and a warm-up
    longer than the training."""
    for section in (train, view):
        for item in dataclasses.fields(section):
            value = getattr(section, item.name)
            least = 0 if item.name in MAY_BE_ZERO else 1
            if isinstance(value, int) and not isinstance(value, bool) and value < least:
                raise ValueError(f"{argument(item.name, value)}: it must be at least {least}.")
    if train.warmup_epochs > train.epochs:
        source = "" if "warmup_epochs" in overrides else f" (preset {preset.name}'s)"
        raise ValueError(
            f"The learning-rate warm-up, {argument('warmup_epochs', train.warmup_epochs)}{source}, is longer than "
            f"the training, {argument('epochs', train.epochs)}: raise {argument_name('epochs')} or lower "
            f"{argument_name('warmup_epochs')}.")


def default_run_dir(dataset: str, preset: str) -> Path:
    """``<data root>/runs/<dataset>-<preset>``."""
    return data_root() / "runs" / f"{dataset}-{preset}"


def _flatten(config: dict, prefix: str = "") -> dict:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
