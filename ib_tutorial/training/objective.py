"""What every training objective shares (optimiser groups, schedules, clipping, DDP, the
checkpoint's layout), and the facts in which objectives differ; they are listed in
:data:`ib_tutorial.training.run_config.OBJECTIVES`."""
from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import ClassVar

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from ..presets import TrainSettings, ViewSettings
from .schedules import Schedules


class Objective(ABC):
    """The networks, optimiser, loss scaler and schedules of one run: a step is :meth:`forward`,
    then, if the loss is finite, :meth:`update`. ``network``: what a profile calls the saved
    network; ``phase_floors``: whether the warm-up and freeze keep their floors in steps
    (:class:`~ib_tutorial.training.schedules.Phases`)."""

    uses_labels: ClassVar[bool]
    name: ClassVar[str]
    local_crops: ClassVar[bool]
    network: ClassVar[str]
    compared_with_paper: ClassVar[bool]
    phase_floors: ClassVar[bool]

    def __init__(self, train: TrainSettings, view: ViewSettings, precision: str, schedules: Schedules,
                 device: torch.device, num_classes: int):
        self.settings, self.schedules, self.device = train, schedules, device
        self.precision = precision

    def _optimise(self, student_module: nn.Module) -> None:
        """Make ``student_module`` the trained network, with AdamW and a loss scaler."""
        self.student_module = student_module
        self.student: nn.Module = student_module  # the DDP wrapper once distributed
        self.optimizer = torch.optim.AdamW(parameter_groups(student_module))
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.precision == "fp16")

    @property
    @abstractmethod
    def backbone(self) -> nn.Module:
        """The network a run evaluates and saves."""

    @abstractmethod
    def forward(self, views: list[torch.Tensor], labels: torch.Tensor, epoch: int):
        """The loss of one batch (an output with a ``loss`` field)."""

    def update(self, loss: torch.Tensor, epoch: int, step: int) -> None:
        """Back-propagate ``loss``, clip, and take the AdamW step at step ``step`` (from 0)."""
        apply_schedules(self.optimizer, self.schedules.lr[step], self.schedules.weight_decay[step])
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        if self.settings.clip_grad:
            self.scaler.unscale_(self.optimizer)
            clip_gradients(self.student_module, self.settings.clip_grad)
        self.scaler.step(self.optimizer)
        self.scaler.update()

    @staticmethod
    def statistics(result) -> dict[str, torch.Tensor]:
        """What a logged step records of its output: every field but the loss."""
        return {f.name: getattr(result, f.name) for f in dataclasses.fields(result) if f.name != "loss"}

    @abstractmethod
    def checkpointed(self) -> dict[str, nn.Module]:
        """The parts a checkpoint holds beside the optimiser, scaler and schedules."""

    def step_settings(self, epoch: int, step: int) -> dict[str, float]:
        """The last step's settings (``step`` counts steps done)."""
        return {"lr": float(self.schedules.lr[step - 1]), "weight_decay": float(self.schedules.weight_decay[step - 1])}

    def collapse_warning(self, record: dict) -> str | None:
        """A warning when a logged ``record`` shows the run collapsing."""
        return None

    @classmethod
    def image_flops(cls, view: ViewSettings, train: TrainSettings, attention: bool = True) -> float:
        """FLOPs one training image costs in one step; only DINO's step is counted."""
        raise ValueError(f"image_flops counts a DINO step; this run trains with objective {cls.name!r}")

    def distribute(self) -> None:
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        self.student = DistributedDataParallel(self.student_module, device_ids=device_ids)

    def state_dict(self) -> dict:
        """What a checkpoint holds."""
        parts = {name: part.state_dict() for name, part in self.checkpointed().items()}
        return {**parts, "optimizer": self.optimizer.state_dict(), "scaler": self.scaler.state_dict(),
                "schedules": self.schedules.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Load what :meth:`state_dict` saved, if its schedules are the run's."""
        if not self.schedules.matches(state["schedules"]):
            raise ValueError("The checkpoint's schedules differ from this run's; start a new run with a new --out.")
        for name, part in self.checkpointed().items():
            part.load_state_dict(state[name])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scaler.load_state_dict(state["scaler"])


def parameter_groups(model: nn.Module) -> list[dict]:
    """Two AdamW groups: weights (decayed) and biases and norm gains (not); frozen ones left out."""
    decayed, not_decayed = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (not_decayed if name.endswith(".bias") or param.ndim == 1 else decayed).append(param)
    return [{"params": decayed}, {"params": not_decayed, "weight_decay": 0.0}]


def apply_schedules(optimizer: torch.optim.Optimizer, lr: float, weight_decay: float) -> None:
    """Set this step's learning rate, and weight decay on the decayed group."""
    for index, group in enumerate(optimizer.param_groups):
        group["lr"] = float(lr)  # plain floats: the optimiser state goes into weights-only checkpoints
        if index == 0:
            group["weight_decay"] = float(weight_decay)


@torch.no_grad()
def clip_gradients(model: nn.Module, max_norm: float) -> None:
    r"""DINO's clipping: each parameter's gradient separately, :math:`g \leftarrow g \cdot
    \min(1, c / (\lVert g \rVert_2 + 10^{-6}))` (not one global norm)."""
    for param in model.parameters():
        if param.grad is not None:
            scale = max_norm / (param.grad.norm(2) + 1e-6)
            param.grad.mul_(scale.clamp(max=1.0))
