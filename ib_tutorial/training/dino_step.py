"""One DINO training step and everything it changes: student and teacher networks, the
loss with its centre, the optimiser, the loss scaler and the schedules.

:func:`build_networks` makes the parts (:mod:`ib_tutorial.training.dino`) from a run's
settings; :class:`DINOTraining` holds them, takes a step and is what a checkpoint saves.
"""
from __future__ import annotations

import math
import torch

from ..models import ARCHITECTURES, build_vit
from ..precision import autocast
from ..presets import TrainSettings, ViewSettings
from .dino import DINOHead, DINOLoss, DINOLossOutput, MultiCropWrapper, cancel_last_layer_gradients, update_teacher
from .objective import Objective, apply_schedules, clip_gradients
from .schedules import Phases, Schedules, phase_notes, phase_warnings

#: Teacher entropy within this fraction of log K of either end (log K: uniform, 0: one-hot)
#: is a collapse (DINOTraining.collapse_warning).
COLLAPSE_FRACTION = 0.02
#: Teacher information (what the output says about the image) below this fraction of log K
#: is a collapse too; a DINO run whose teacher ends under it did not learn
#: (:mod:`ib_tutorial.reproduction.learned`).
INFORMATION_FRACTION = 0.05
# A teacher whose information falls under this fraction of its peak (of at least WATCHED_PEAK
# nats) in the same phase is going back towards uniform (InformationWatch).
FALL_FRACTION = 0.6
WATCHED_PEAK = 0.3
WATCHED_LOGS = 3

def build_networks(train: TrainSettings, view: ViewSettings) -> tuple[MultiCropWrapper, MultiCropWrapper]:
    """Student (with stochastic depth) and teacher (without), starting from the same weights."""

    def network(drop_path_rate: float) -> MultiCropWrapper:
        head = DINOHead(ARCHITECTURES[train.arch]["embed_dim"], train.out_dim, train.hidden_dim, train.bottleneck_dim,
                        norm_last_layer=train.norm_last_layer)
        backbone = build_vit(train.arch, view.img_size, view.patch_size, drop_path_rate)
        return MultiCropWrapper(backbone, head)

    student = network(train.drop_path_rate)
    teacher = network(0.0)
    teacher.load_state_dict(student.state_dict())
    teacher.requires_grad_(False)
    return student, teacher


class DINOTraining(Objective):
    """Student, teacher, loss (with its centre), optimiser, loss scaler and schedules: a step
    is :meth:`forward` (the loss), then, if it is finite, :meth:`update`."""

    name = "dino"
    local_crops = True
    network = "teacher"
    compared_with_paper = True
    uses_labels = False
    phase_floors = True

    def __init__(self, train: TrainSettings, view: ViewSettings, precision: str, schedules: Schedules,
                 device: torch.device, num_classes: int):
        super().__init__(train, view, precision, schedules, device, num_classes)
        student, teacher = build_networks(train, view)
        self.teacher = teacher.to(device)
        self.loss_fn = DINOLoss(self.settings.out_dim, self.settings.student_temp,
                                self.settings.center_momentum).to(device)
        self.watch = InformationWatch(schedules.phases)
        self._optimise(student.to(device))

    @property
    def backbone(self) -> torch.nn.Module:
        """The network a run evaluates and saves: the teacher's backbone."""
        return self.teacher.backbone

    def forward(self, views: list[torch.Tensor], labels: torch.Tensor, epoch: int) -> DINOLossOutput:
        """Teacher on the two global views, student on all of them, then the DINO loss (the
        labels are not used). The teacher's output is kept for the centre, which moves after the step."""
        views = [v.to(self.device, non_blocking=True) for v in views]
        with autocast(self.device, self.precision):
            self.teacher_output = self.teacher(views[:2])
            student_output = self.student(views)
        return self.loss_fn(student_output, self.teacher_output, float(self.schedules.teacher_temp[epoch]))

    def update(self, loss: torch.Tensor, epoch: int, step: int) -> None:
        """What DINO's ``train_one_epoch`` does after the loss, at step ``step`` (from 0): the
        student's AdamW step at this step's learning rate and weight decay (zero-grad, backward,
        each parameter's gradient clipped, the last layer's dropped while it is frozen), then
        the teacher's EMA and the centre."""
        apply_schedules(self.optimizer, self.schedules.lr[step], self.schedules.weight_decay[step])
        # student update
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()  # the loss scaler does nothing unless training in fp16
        if self.settings.clip_grad:
            self.scaler.unscale_(self.optimizer)  # clip the true gradients, not the scaled ones
            clip_gradients(self.student_module, self.settings.clip_grad)
        if step < self.schedules.phases.freeze_steps:  # the prototypes stay put while the rest settles
            cancel_last_layer_gradients(self.student_module)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        # EMA update for the teacher
        update_teacher(self.student_module, self.teacher, float(self.schedules.momentum[step]))
        # the centre follows the teacher's batch mean
        self.loss_fn.update_center(self.teacher_output)

    @staticmethod
    def statistics(result: DINOLossOutput) -> dict[str, torch.Tensor]:
        return {"teacher_entropy": result.teacher_entropy, "student_entropy": result.student_entropy,
                "kl": result.kl, "teacher_usage": result.teacher_usage,
                "teacher_information": result.teacher_information}

    def step_settings(self, epoch: int, step: int) -> dict[str, float]:
        """The schedules' values at ``step`` (steps done, so the last step's) and the centre's norm."""
        return {**super().step_settings(epoch, step), "teacher_temp": float(self.schedules.teacher_temp[epoch]),
                "momentum": float(self.schedules.momentum[step - 1]),
                "center_norm": self.loss_fn.center.norm().item()}

    def checkpointed(self) -> dict[str, torch.nn.Module]:
        return {"student": self.student_module, "teacher": self.teacher, "loss": self.loss_fn}

    def collapse_warning(self, record: dict, settings: TrainSettings) -> str | None:
        """:func:`collapse_message` of a logged training record, else the
        :class:`InformationWatch`'s message when the teacher's information is falling."""
        falling = self.watch.update(record["step"], record["teacher_information"])  # every logged step feeds the watch
        return collapse_message(record["teacher_entropy"], record["teacher_information"], settings.out_dim) or falling

    @staticmethod
    def start_messages(train: TrainSettings, schedules: Schedules) -> tuple[list[str], list[str]]:
        """The phases a floor lengthened (notes), and those shorter than the recipes that
        learn keep (warnings): :mod:`ib_tutorial.training.schedules`."""
        return phase_notes(train, schedules), phase_warnings(train, schedules)

    @classmethod
    def image_flops(cls, view: ViewSettings, train: TrainSettings, attention: bool = True) -> float:
        r"""FLOPs one training image costs in one DINO step, counted as ``torch.utils.flop_counter``
        does: ``2 m n k`` per matrix product, elementwise work not counted. One token through one
        block of width :math:`D` costs :math:`24 D^2` forward, plus :math:`4 T D` for attention
        over :math:`T` tokens; a backward costs twice a forward. Per crop: the teacher's forward
        (global crops only), the student's forward and backward, the head on the CLS token; the
        patch embedding's backward computes its weight gradient only.

        Args:
            view: the crops' geometry (global and local side, patch size).
            train: the backbone (``arch``), the number of local crops and the head's shape.
            attention: count the attention products (``False``: as the CPU benchmark counted).
        """
        shape = ARCHITECTURES[train.arch]
        width, depth = shape["embed_dim"], shape["depth"]
        total = 0.0
        for side, crops, teacher_sees in ((view.img_size, 2, True), (view.local_crop_size, train.local_crops_number, False)):
            blocks, embedding = backbone_flops(width, depth, tokens_per_crop(side, view.patch_size), view.patch_size, attention)
            forward = blocks + head_flops(width, train)
            total += crops * (3 * forward + 2 * embedding + ((forward + embedding) if teacher_sees else 0.0))
        return total


def tokens_per_crop(side: int, patch_size: int) -> int:
    """Patch tokens of a square crop plus the CLS token: ``(side / patch)^2 + 1``."""
    return (side // patch_size) ** 2 + 1


def backbone_flops(width: int, depth: int, tokens: int, patch_size: int, attention: bool = True) -> tuple[float, float]:
    """(FLOPs of the transformer blocks, FLOPs of the patch embedding) of one crop's forward
    pass: ``depth (24 D^2 T + 4 T^2 D)`` and ``2 (3 p^2) D (T - 1)``."""
    blocks = depth * (24 * width**2 * tokens + (4 * tokens**2 * width if attention else 0))
    embedding = 2 * 3 * patch_size**2 * width * (tokens - 1)
    return float(blocks), float(embedding)


def head_flops(width: int, train: TrainSettings) -> float:
    """FLOPs of the DINO head's forward pass on one CLS token."""
    hidden, bottleneck = train.hidden_dim, train.bottleneck_dim
    return 2.0 * (width * hidden + hidden * hidden + hidden * bottleneck + bottleneck * train.out_dim)


def collapse_message(teacher_entropy: float, teacher_information: float, out_dim: int) -> str | None:
    """A warning text when the teacher entropy is near log K (uniform) or 0 (one-hot), or when
    the teacher's output carries almost no information about its image (either collapse
    under way: :class:`~ib_tutorial.training.dino.DINOLossOutput`), else None."""
    limit = math.log(out_dim)
    if teacher_entropy > (1 - COLLAPSE_FRACTION) * limit:
        kind = f"entropy {teacher_entropy:.3f} nats is near log K = {limit:.2f} (uniform collapse: try a lower --teacher-temp)"
    elif teacher_entropy < COLLAPSE_FRACTION * limit:
        kind = f"entropy {teacher_entropy:.3f} nats is near 0 (one-hot collapse: try a higher --center-momentum or a higher --teacher-temp)"
    elif teacher_information < INFORMATION_FRACTION * limit:
        kind = (f"output carries {teacher_information:.3f} nats about the image, under {INFORMATION_FRACTION:.0%} of "
                f"log K = {limit:.2f}: every image gets nearly the same distribution (entropy {teacher_entropy:.2f} "
                "nats; try a lower --teacher-temp or a lower --momentum-teacher)")
    else:
        return None
    return f"teacher {kind}"


class InformationWatch:
    """Follows the teacher's information about the image through a run's phases and says
    when it falls: in the warm-up, while the last layer is frozen, or after its release.

    A teacher whose information rises and then falls back once the prototypes move is how
    DINO fails on small data (the DINO chapter), long before the collapse warning. The watch
    keeps the peak of the mean of the last :data:`WATCHED_LOGS` logged values within each
    phase and warns once a phase when it falls under :data:`FALL_FRACTION` of that peak.
    """

    def __init__(self, phases: Phases):
        self.phases = phases
        self.phase: str | None = None
        self.recent: list[float] = []
        self.peak, self.peak_step = 0.0, 0
        self.warned: set[str] = set()

    def phase_at(self, step: int) -> str:
        """The phase a logged ``step`` (steps done) belongs to."""
        if step <= self.phases.warmup_steps:
            return "during the warm-up"
        if step <= self.phases.freeze_steps:
            return "while the last layer is frozen"
        return f"after the last layer's release at step {self.phases.freeze_steps}"

    def update(self, step: int, information: float) -> str | None:
        """Record the information (nats) at ``step``; a message the first time in a phase
        that its recent mean falls under :data:`FALL_FRACTION` of the phase's peak."""
        self.recent = (self.recent + [information])[-WATCHED_LOGS:]
        level = sum(self.recent) / len(self.recent)
        phase = self.phase_at(step)
        if phase != self.phase:
            self.phase, self.peak, self.peak_step = phase, level, step
        if level > self.peak:
            self.peak, self.peak_step = level, step
        if phase in self.warned or self.peak < WATCHED_PEAK or level >= FALL_FRACTION * self.peak:
            return None
        self.warned.add(phase)
        return (f"teacher information fell from {self.peak:.2f} nats (step {self.peak_step}) to {level:.2f} "
                f"(step {step}, means of the last {len(self.recent)} logged steps) {phase}: the teacher is going "
                "back towards uniform. Lower the learning rate (--lr), lengthen the warm-up (--warmup-min-steps) "
                "or the freeze (--freeze-min-steps), or raise --momentum-teacher.")
