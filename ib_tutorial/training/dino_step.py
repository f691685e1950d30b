"""One DINO training step and everything it changes: student and teacher networks, the
loss with its centre, the optimiser, the loss scaler and the schedules.

:func:`build_networks` and :func:`build_schedules` make the parts from a
:class:`~ib_tutorial.training.run_config.RunConfig`; :class:`DINOTraining` holds them, takes a step
(:meth:`~DINOTraining.forward`, then :meth:`~DINOTraining.update`) and is what a
checkpoint saves. The parts themselves are in :mod:`ib_tutorial.training.dino`.
"""
from __future__ import annotations

import torch
from torch.nn.parallel import DistributedDataParallel

from ..models import build_vit
from ..precision import autocast
from ..presets import TrainSettings
from .dino import (
    DINOHead,
    DINOLoss,
    DINOLossOutput,
    MultiCropWrapper,
    Schedules,
    apply_schedules,
    cancel_last_layer_gradients,
    clip_gradients,
    parameter_groups,
    update_teacher,
)
from .run_config import RunConfig

SCHEDULE_SETTINGS = ("lr", "min_lr", "warmup_epochs", "weight_decay", "weight_decay_end", "momentum_teacher",
                     "warmup_teacher_temp", "teacher_temp", "warmup_teacher_temp_epochs")


def build_networks(config: RunConfig) -> tuple[MultiCropWrapper, MultiCropWrapper]:
    """Student (with stochastic depth) and teacher (without), starting from the same weights."""
    train = config.train

    def network(drop_path_rate: float) -> MultiCropWrapper:
        head = DINOHead(config.model["embed_dim"], train.out_dim, train.hidden_dim, train.bottleneck_dim,
                        norm_last_layer=train.norm_last_layer)
        backbone = build_vit(train.arch, config.view.img_size, config.view.patch_size, drop_path_rate)
        return MultiCropWrapper(backbone, head)

    student = network(train.drop_path_rate)
    teacher = network(0.0)
    teacher.load_state_dict(student.state_dict())
    teacher.requires_grad_(False)
    return student, teacher


def build_schedules(train: TrainSettings, steps_per_epoch: int) -> Schedules:
    """The run's learning-rate, weight-decay, momentum and teacher-temperature schedules."""
    return Schedules.build(
        epochs=train.epochs, steps_per_epoch=steps_per_epoch, global_batch=train.batch_size,
        **{name: getattr(train, name) for name in SCHEDULE_SETTINGS},
    )


def step_optimiser(training, loss: torch.Tensor, step: int, before_step=None) -> None:
    """One optimisation step of ``training`` (its ``optimizer``, ``scaler``, ``schedules``,
    ``settings`` and ``student_module``): this step's learning rate and weight decay,
    back-propagation, DINO's per-parameter clipping, ``before_step()`` if given, the step."""
    apply_schedules(training.optimizer, training.schedules.lr[step], training.schedules.weight_decay[step])
    training.optimizer.zero_grad(set_to_none=True)
    training.scaler.scale(loss).backward()
    if training.settings.clip_grad:
        training.scaler.unscale_(training.optimizer)
        clip_gradients(training.student_module, training.settings.clip_grad)
    if before_step is not None:
        before_step()
    training.scaler.step(training.optimizer)
    training.scaler.update()


def checkpoint_state(training) -> dict:
    """What a checkpoint holds of ``training`` (:class:`DINOTraining` or
    :class:`~ib_tutorial.training.supervised_step.SupervisedTraining`): the state of each part it
    names in ``checkpointed()``, then its optimiser, loss scaler and schedules."""
    parts = {name: part.state_dict() for name, part in training.checkpointed().items()}
    return {**parts, "optimizer": training.optimizer.state_dict(), "scaler": training.scaler.state_dict(),
            "schedules": training.schedules.state_dict()}


def load_checkpoint_state(training, state: dict) -> None:
    """Load what :func:`checkpoint_state` saved back into ``training``; refuse a checkpoint
    whose schedules differ from the run's."""
    if not training.schedules.matches(state["schedules"]):
        raise ValueError("The checkpoint's schedules differ from this run's; start a new run with a new --out.")
    for name, part in training.checkpointed().items():
        part.load_state_dict(state[name])
    training.optimizer.load_state_dict(state["optimizer"])
    training.scaler.load_state_dict(state["scaler"])


class DINOTraining:
    """Student, teacher, loss (with its centre), optimiser, loss scaler and schedules:
    everything one step changes and a checkpoint holds.

    One step is :meth:`forward` (the loss, which also moves the centre), then, if the
    loss is finite, :meth:`update` (student, then teacher).
    """

    def __init__(self, config: RunConfig, schedules: Schedules, device: torch.device):
        self.settings, self.schedules, self.device = config.train, schedules, device
        self.precision = config.precision
        student, teacher = build_networks(config)
        self.student_module, self.teacher = student.to(device), teacher.to(device)
        self.student: torch.nn.Module = self.student_module  # the DDP wrapper once distributed
        self.loss_fn = DINOLoss(self.settings.out_dim, self.settings.student_temp,
                                self.settings.center_momentum).to(device)
        self.optimizer = torch.optim.AdamW(parameter_groups(self.student_module))
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.precision == "fp16")

    def distribute(self) -> None:
        """Wrap the student in DDP, which averages its gradients over processes."""
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        self.student = DistributedDataParallel(self.student_module, device_ids=device_ids)

    @property
    def backbone(self) -> torch.nn.Module:
        """The network a run evaluates and saves: the teacher's backbone."""
        return self.teacher.backbone

    def forward(self, views: list[torch.Tensor], labels: torch.Tensor, epoch: int) -> DINOLossOutput:
        """Teacher on the two global views, student on all of them, then the DINO loss (the
        labels are not used)."""
        views = [v.to(self.device, non_blocking=True) for v in views]
        with autocast(self.device, self.precision):
            teacher_output = self.teacher(views[:2])
            student_output = self.student(views)
        return self.loss_fn(student_output, teacher_output, float(self.schedules.teacher_temp[epoch]))

    def update(self, loss: torch.Tensor, epoch: int, step: int) -> None:
        """Back-propagate, clip, freeze the last layer while due, take the AdamW step with
        this step's learning rate and weight decay, then move the teacher (EMA)."""
        step_optimiser(self, loss, step,
                       lambda: cancel_last_layer_gradients(self.student_module, epoch, self.settings.freeze_last_layer))
        update_teacher(self.student_module, self.teacher, float(self.schedules.momentum[step]))

    @staticmethod
    def statistics(result: DINOLossOutput) -> dict[str, torch.Tensor]:
        """What a logged step records of its output (averaged over processes)."""
        return {"teacher_entropy": result.teacher_entropy, "student_entropy": result.student_entropy,
                "kl": result.kl, "teacher_usage": result.teacher_usage,
                "teacher_information": result.teacher_information}

    def step_settings(self, epoch: int, step: int) -> dict[str, float]:
        """The schedules' values at ``step`` (steps done, so the last step's) and the centre's norm."""
        return {"lr": float(self.schedules.lr[step - 1]), "weight_decay": float(self.schedules.weight_decay[step - 1]),
                "teacher_temp": float(self.schedules.teacher_temp[epoch]),
                "momentum": float(self.schedules.momentum[step - 1]),
                "center_norm": self.loss_fn.center.norm().item()}

    def checkpointed(self) -> dict[str, torch.nn.Module]:
        """The parts a checkpoint holds beside the optimiser, scaler and schedules."""
        return {"student": self.student_module, "teacher": self.teacher, "loss": self.loss_fn}

    def state_dict(self) -> dict:
        return checkpoint_state(self)

    def load_state_dict(self, state: dict) -> None:
        load_checkpoint_state(self, state)
