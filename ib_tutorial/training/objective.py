"""What every training objective shares, and the facts in which objectives differ.

An objective (:class:`~ib_tutorial.training.dino_step.DINOTraining`,
:class:`~ib_tutorial.training.supervised_step.SupervisedTraining`) holds everything one
step changes and a checkpoint holds. One step is :meth:`Objective.forward` (the loss),
then, if the loss is finite, :meth:`Objective.update`. The optimiser (AdamW without weight
decay on biases and norms), the loss scaler, the schedules, DINO's per-parameter gradient
clipping, DDP and the checkpoint's layout are the same for every objective and live here;
the table from name to objective is :data:`ib_tutorial.training.objectives.OBJECTIVES`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from ..presets import TrainSettings, ViewSettings
from .dino import Schedules, apply_schedules, clip_gradients, parameter_groups
from .phases import Phases

SCHEDULE_SETTINGS = ("lr", "min_lr", "weight_decay", "weight_decay_end", "momentum_teacher",
                     "warmup_teacher_temp", "teacher_temp", "warmup_teacher_temp_epochs")


class Objective(ABC):
    """The networks, optimiser, loss scaler and schedules of one run.

    Class attributes (the facts in which objectives differ):
        name: the objective's name in :class:`~ib_tutorial.presets.TrainSettings`.
        local_crops: whether its views include DINO's local crops (else the two global ones only).
        network: what a profile calls the saved network (``teacher`` or ``network``).
        compared_with_paper: whether the paper's values (a DINO ViT-S) apply to its runs.
        uses_labels: whether its loss reads the training labels.
    """

    uses_labels: ClassVar[bool]
    name: ClassVar[str]
    local_crops: ClassVar[bool]
    network: ClassVar[str]
    compared_with_paper: ClassVar[bool]

    def __init__(self, train: TrainSettings, view: ViewSettings, precision: str, schedules: Schedules,
                 device: torch.device, num_classes: int):
        """A run's settings (its :class:`~ib_tutorial.training.run_config.RunConfig`'s ``train``,
        ``view`` and resolved ``precision``); subclasses build their networks (``num_classes``:
        the dataset's classes) and call :meth:`_optimise`."""
        self.settings, self.schedules, self.device = train, schedules, device
        self.precision = precision

    def _optimise(self, student_module: nn.Module) -> None:
        """Make ``student_module`` (on the device) the trained network, with AdamW and a loss scaler."""
        self.student_module = student_module
        self.student: nn.Module = student_module  # the DDP wrapper once distributed
        self.optimizer = torch.optim.AdamW(parameter_groups(student_module))
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.precision == "fp16")

    # ---- what differs ----
    @property
    @abstractmethod
    def backbone(self) -> nn.Module:
        """The network a run evaluates and saves."""

    @abstractmethod
    def forward(self, views: list[torch.Tensor], labels: torch.Tensor, epoch: int):
        """The loss of one batch (an output with a ``loss`` field)."""

    @abstractmethod
    def update(self, loss: torch.Tensor, epoch: int, step: int) -> None:
        """Back-propagate ``loss`` and take the optimiser's step (and whatever follows it)."""

    @staticmethod
    @abstractmethod
    def statistics(result) -> dict[str, torch.Tensor]:
        """What a logged step records of its output (averaged over processes)."""

    @abstractmethod
    def checkpointed(self) -> dict[str, nn.Module]:
        """The parts a checkpoint holds beside the optimiser, scaler and schedules."""

    def step_settings(self, epoch: int, step: int) -> dict[str, float]:
        """The learning rate and weight decay of the last step (``step`` counts steps done)."""
        return {"lr": float(self.schedules.lr[step - 1]), "weight_decay": float(self.schedules.weight_decay[step - 1])}

    def collapse_warning(self, record: dict, settings: TrainSettings) -> str | None:
        """A warning text when a logged training ``record`` shows the run collapsing; None."""
        return None

    @classmethod
    def phases(cls, train: TrainSettings, steps_per_epoch: int) -> Phases:
        """How long the run's warm-up lasts (and its last-layer freeze, where it has one): its
        ``warmup_epochs``; DINO adds the floors in steps (:mod:`ib_tutorial.training.phases`),
        which a supervised run, whose recipe learns without them, does not read."""
        return Phases(warmup_steps=train.warmup_epochs * steps_per_epoch, freeze_steps=0)

    @staticmethod
    def start_messages(train: TrainSettings, steps_per_epoch: int) -> tuple[list[str], list[str]]:
        """What a run of these settings says when it starts: notes, and warnings about a
        recipe unlikely to learn; none by default."""
        return [], []

    @classmethod
    def image_flops(cls, view: ViewSettings, train: TrainSettings, attention: bool = True) -> float:
        """FLOPs one training image costs in one step; only DINO's step is counted."""
        raise ValueError(f"image_flops counts a DINO step; this run trains with objective {cls.name!r}")

    # ---- what is shared ----
    def distribute(self) -> None:
        """Wrap the trained network in DDP, which averages its gradients over processes."""
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        self.student = DistributedDataParallel(self.student_module, device_ids=device_ids)

    def step_optimiser(self, loss: torch.Tensor, step: int, before_step=None) -> None:
        """This step's learning rate and weight decay, back-propagation, DINO's
        per-parameter clipping, ``before_step()`` if given, the optimiser's step."""
        apply_schedules(self.optimizer, self.schedules.lr[step], self.schedules.weight_decay[step])
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        if self.settings.clip_grad:
            self.scaler.unscale_(self.optimizer)
            clip_gradients(self.student_module, self.settings.clip_grad)
        if before_step is not None:
            before_step()
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def state_dict(self) -> dict:
        """What a checkpoint holds: each part of :meth:`checkpointed`, then the optimiser,
        loss scaler and schedules."""
        parts = {name: part.state_dict() for name, part in self.checkpointed().items()}
        return {**parts, "optimizer": self.optimizer.state_dict(), "scaler": self.scaler.state_dict(),
                "schedules": self.schedules.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Load what :meth:`state_dict` saved; refuse a checkpoint whose schedules differ from the run's."""
        if not self.schedules.matches(state["schedules"]):
            raise ValueError("The checkpoint's schedules differ from this run's; start a new run with a new --out.")
        for name, part in self.checkpointed().items():
            part.load_state_dict(state[name])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scaler.load_state_dict(state["scaler"])


def build_schedules(train: TrainSettings, steps_per_epoch: int) -> Schedules:
    """The run's learning-rate, weight-decay, momentum and teacher-temperature schedules, the
    warm-up as long as its objective's :meth:`Objective.phases` say."""
    from .objectives import get_objective  # the table of objectives imports this module

    return Schedules.build(
        epochs=train.epochs, steps_per_epoch=steps_per_epoch, global_batch=train.batch_size,
        warmup_steps=get_objective(train.objective).phases(train, steps_per_epoch).warmup_steps,
        **{name: getattr(train, name) for name in SCHEDULE_SETTINGS},
    )
