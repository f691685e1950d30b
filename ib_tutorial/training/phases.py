r"""How long DINO's early phases last, in steps: the learning-rate warm-up and the freeze of
the head's last layer.

DINO states both in epochs (10 warm-up epochs, the last layer frozen for 1), which on
ImageNet means 25,020 and 2,502 steps of 512 images. On a small data set the same epochs
are a few dozen steps, and a teacher that meets a full learning rate that early collapses
within steps: its information about the image falls to nearly nothing (the DINO chapter
shows it). Every ViT-DINO recipe known to learn on small data spends thousands of steps
at a low learning rate first (Gani et al. 2022: 30 warm-up epochs, about 5,850 steps on
Tiny ImageNet; solo-learn's ViT-tiny on ImageNet-100: about 4,900).

So each phase lasts the longer of its epochs and a floor in steps,

.. math::
    W = \max(\text{warmup\_epochs} \cdot S,\ \text{warmup\_min\_steps}),\qquad
    F = \max(\text{freeze\_last\_layer} \cdot S,\ \text{freeze\_min\_steps}),

for :math:`S` steps an epoch. The tiers that train to learn set the floors
(:data:`WARMUP_ANCHOR_STEPS`, :data:`FREEZE_ANCHOR_STEPS`); a run whose phases come out
shorter than those anchors says so when it starts, with the setting that fixes it
(:func:`phase_warnings`). The ``ci`` tier's few illustrative steps are exempt.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..command_line import argument, argument_name

if TYPE_CHECKING:  # the presets name these floors, so the settings' type is imported for hints only
    from ..presets import TrainSettings

# The shortest warm-up and last-layer freeze, in steps, that the recipes known to learn on
# small data keep (see the module's docstring; the CPU recipe table in the DINO chapter).
WARMUP_ANCHOR_STEPS = 800
FREEZE_ANCHOR_STEPS = 400


class ScheduleWarning(UserWarning):
    """A DINO run's warm-up or last-layer freeze is shorter than the recipes that learn keep."""


@dataclass(frozen=True)
class Phases:
    """The steps of a run's warm-up and of its last-layer freeze (:math:`W` and :math:`F`)."""

    warmup_steps: int
    freeze_steps: int

    @classmethod
    def of(cls, train: TrainSettings, steps_per_epoch: int) -> "Phases":
        """The phases of a run with ``train``'s settings at ``steps_per_epoch``; a floor never
        makes the warm-up longer than the run."""
        total = train.epochs * steps_per_epoch
        warmup = max(train.warmup_epochs * steps_per_epoch, min(train.warmup_min_steps, total))
        freeze = max(train.freeze_last_layer * steps_per_epoch, train.freeze_min_steps)
        return cls(warmup_steps=warmup, freeze_steps=freeze)


def phase_notes(train: TrainSettings, steps_per_epoch: int) -> list[str]:
    """What a run prints when it starts: a line for each phase a floor lengthened."""
    phases = Phases.of(train, steps_per_epoch)
    notes = []
    for setting, floor, steps in (("warmup_epochs", "warmup_min_steps", phases.warmup_steps),
                                  ("freeze_last_layer", "freeze_min_steps", phases.freeze_steps)):
        asked = getattr(train, setting) * steps_per_epoch
        if steps > asked:
            notes.append(f"{argument(setting, getattr(train, setting))} is {asked} steps at {steps_per_epoch} steps an "
                         f"epoch; {argument(floor, getattr(train, floor))} makes it {steps} steps "
                         f"({steps / steps_per_epoch:.1f} epochs).")
    return notes


def phase_warnings(train: TrainSettings, steps_per_epoch: int) -> list[str]:
    """A message for each phase shorter than its anchor, naming the settings that fix it.

    Raises nothing: a short phase is a choice a reader may make on purpose (the recipe table
    does), but not one a run makes silently."""
    phases = Phases.of(train, steps_per_epoch)
    total = train.epochs * steps_per_epoch
    messages = []
    for phase, steps, anchor, setting, floor in (
            ("learning-rate warm-up", phases.warmup_steps, WARMUP_ANCHOR_STEPS, "warmup_epochs", "warmup_min_steps"),
            ("last-layer freeze", phases.freeze_steps, FREEZE_ANCHOR_STEPS, "freeze_last_layer", "freeze_min_steps")):
        if steps >= anchor:
            continue
        fix = (f"raise {argument_name(floor)} to {anchor} (or {argument_name(setting)} to "
               f"{math.ceil(anchor / steps_per_epoch)})")
        if phase.startswith("learning") and anchor > total:
            fix = f"train for at least {anchor} steps ({argument_name('epochs')} {math.ceil(anchor / steps_per_epoch)} or more) and {fix}"
        messages.append(f"The {phase} lasts {steps} steps, under the {anchor} that DINO recipes which learn on small "
                        f"data keep: the teacher is likely to collapse early. To fix it, {fix}.")
    return messages
