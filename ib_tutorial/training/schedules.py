r"""A run's schedules, built once (:meth:`Schedules.of`): warm-up, last-layer freeze, learning
rate, weight decay, teacher momentum and temperature.

DINO's early phases, in epochs, are a few dozen steps on a small data set, where the teacher
then collapses (the DINO chapter); recipes that learn there spend thousands of low-lr steps
first (Gani et al. 2022). So each phase lasts the longer of its epochs and a floor in steps,

.. math::
    W = \max(\text{warmup\_epochs} \cdot S,\ \text{warmup\_min\_steps}),\qquad
    F = \max(\text{freeze\_last\_layer} \cdot S,\ \text{freeze\_min\_steps}),

for :math:`S` steps an epoch; phases shorter than :data:`~ib_tutorial.presets.WARMUP_ANCHOR_STEPS`
and :data:`~ib_tutorial.presets.FREEZE_ANCHOR_STEPS` are warned of (:func:`phase_warnings`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..command_line import argument, argument_name
from ..presets import FREEZE_ANCHOR_STEPS, WARMUP_ANCHOR_STEPS, TrainSettings

# The values a checkpoint holds (and a resumed run must match).
VALUES = ("lr", "weight_decay", "momentum", "teacher_temp")


class ScheduleWarning(UserWarning):
    """A DINO run's warm-up or last-layer freeze is shorter than the recipes that learn keep."""


@dataclass(frozen=True)
class Phases:
    """The steps of a run's warm-up and of its last-layer freeze (:math:`W` and :math:`F`)."""

    warmup_steps: int
    freeze_steps: int

    @classmethod
    def of(cls, train: TrainSettings, steps_per_epoch: int, floored: bool = True) -> "Phases":
        """DINO's phases with their floors (the warm-up's never beyond the run); ``floored=False``:
        the warm-up's epochs alone and no freeze."""
        if not floored:
            return cls(warmup_steps=train.warmup_epochs * steps_per_epoch, freeze_steps=0)
        total = train.epochs * steps_per_epoch
        warmup = max(train.warmup_epochs * steps_per_epoch, min(train.warmup_min_steps, total))
        freeze = max(train.freeze_last_layer * steps_per_epoch, train.freeze_min_steps)
        return cls(warmup_steps=warmup, freeze_steps=freeze)


def cosine_schedule(base: float, final: float, epochs: int, steps_per_epoch: int, warmup_steps: int = 0,
                    warmup_start: float = 0.0) -> np.ndarray:
    r"""One value per step: a linear warm-up from ``warmup_start`` to ``base`` (``np.linspace``
    over :math:`W` steps), then :math:`v_i = f + \tfrac12 (b - f)\big(1 + \cos\frac{\pi (i - W)}{T - W}\big)`
    for :math:`T` steps in all."""
    total = epochs * steps_per_epoch
    if warmup_steps > total:
        raise ValueError(f"warm-up ({warmup_steps} steps) is longer than training ({total} steps)")
    warmup = np.linspace(warmup_start, base, warmup_steps)
    steps = np.arange(total - warmup_steps)
    cosine = final + 0.5 * (base - final) * (1 + np.cos(np.pi * steps / max(len(steps), 1)))
    return np.concatenate([warmup, cosine])


def teacher_temperature_schedule(warmup_temp: float, temp: float, warmup_epochs: int, epochs: int) -> np.ndarray:
    """One teacher temperature per epoch: ``np.linspace`` from ``warmup_temp`` to ``temp`` over
    ``warmup_epochs``, then ``temp``."""
    warmup_epochs = min(warmup_epochs, epochs)
    return np.concatenate([np.linspace(warmup_temp, temp, warmup_epochs), np.full(epochs - warmup_epochs, temp)])


@dataclass
class Schedules:
    """Every value that changes during a run: per step ``lr``, ``weight_decay``, ``momentum``
    (teacher EMA); per epoch ``teacher_temp``."""

    phases: Phases
    lr: np.ndarray
    weight_decay: np.ndarray
    momentum: np.ndarray
    teacher_temp: np.ndarray

    @classmethod
    def of(cls, train: TrainSettings, steps_per_epoch: int, floored: bool = True) -> "Schedules":
        r"""The peak learning rate follows the linear scaling rule, :math:`\eta = \eta_{256} \cdot B / 256`
        for global batch :math:`B`, after :math:`W` warm-up steps from 0; weight decay and
        momentum follow a cosine to their final values (momentum to 1)."""
        phases = Phases.of(train, steps_per_epoch, floored)
        epochs = train.epochs
        return cls(phases=phases,
                   lr=cosine_schedule(train.lr * train.batch_size / 256, train.min_lr, epochs, steps_per_epoch,
                                      phases.warmup_steps),
                   weight_decay=cosine_schedule(train.weight_decay, train.weight_decay_end, epochs, steps_per_epoch),
                   momentum=cosine_schedule(train.momentum_teacher, 1.0, epochs, steps_per_epoch),
                   teacher_temp=teacher_temperature_schedule(train.warmup_teacher_temp, train.teacher_temp,
                                                             train.warmup_teacher_temp_epochs, epochs))

    @property
    def steps_per_epoch(self) -> int:
        return len(self.lr) // len(self.teacher_temp)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {name: torch.from_numpy(getattr(self, name)) for name in VALUES}

    def matches(self, state: dict[str, torch.Tensor]) -> bool:
        """Whether a checkpoint's schedules are these."""
        return set(state) == set(VALUES) and all(np.array_equal(state[name].numpy(), getattr(self, name))
                                                 for name in VALUES)


def phase_notes(train: TrainSettings, schedules: Schedules) -> list[str]:
    """A line for each phase a floor lengthened."""
    per_epoch, phases = schedules.steps_per_epoch, schedules.phases
    notes = []
    for setting, floor, steps in (("warmup_epochs", "warmup_min_steps", phases.warmup_steps),
                                  ("freeze_last_layer", "freeze_min_steps", phases.freeze_steps)):
        asked = getattr(train, setting) * per_epoch
        if steps > asked:
            notes.append(f"{argument(setting, getattr(train, setting))} is {asked} steps at {per_epoch} steps an "
                         f"epoch; {argument(floor, getattr(train, floor))} makes it {steps} steps "
                         f"({steps / per_epoch:.1f} epochs).")
    return notes


def phase_warnings(train: TrainSettings, schedules: Schedules) -> list[str]:
    """A message for each phase shorter than its anchor, naming the settings that fix it."""
    per_epoch, phases, total = schedules.steps_per_epoch, schedules.phases, len(schedules.lr)
    messages = []
    for phase, steps, anchor, setting, floor in (
            ("learning-rate warm-up", phases.warmup_steps, WARMUP_ANCHOR_STEPS, "warmup_epochs", "warmup_min_steps"),
            ("last-layer freeze", phases.freeze_steps, FREEZE_ANCHOR_STEPS, "freeze_last_layer", "freeze_min_steps")):
        if steps >= anchor:
            continue
        fix = (f"raise {argument_name(floor)} to {anchor} (or {argument_name(setting)} to "
               f"{math.ceil(anchor / per_epoch)})")
        if phase.startswith("learning") and anchor > total:
            fix = f"train for at least {anchor} steps ({argument_name('epochs')} {math.ceil(anchor / per_epoch)} or more) and {fix}"
        messages.append(f"The {phase} lasts {steps} steps, under the {anchor} that DINO recipes which learn on small "
                        f"data keep: the teacher is likely to collapse early. To fix it, {fix}.")
    return messages
