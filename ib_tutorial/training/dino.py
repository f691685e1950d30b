"""DINO in one module: the head, the loss, the teacher's EMA, and one training step (:class:`DINOTraining`).

Self-distillation with no labels (Caron et al., 2021): a student and a teacher of the same
architecture map each view to :math:`K` logits; the student learns to predict the teacher's
centred, sharpened distribution of a *different* view, and the teacher follows the student by
an exponential moving average. Everything follows facebookresearch/dino term by term; the step
that strings the parts together is :meth:`DINOTraining.update`, one page that reads as DINO's
``train_one_epoch``: zero-grad, backward, clip, cancel the last layer's gradient, step, EMA, centre.

:func:`build_networks` makes the parts from a run's settings; :class:`DINOTraining` holds them,
takes a step and is what a checkpoint saves.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from ..machine import autocast
from ..models import ARCHITECTURES, build_vit
from ..presets import TrainSettings, ViewSettings
from .objective import Objective, apply_schedules, clip_gradients
from .schedules import Phases, Schedules, phase_notes, phase_warnings


# ============ projection head ============
class DINOHead(nn.Module):
    r"""MLP, bottleneck, L2 normalisation, weight-normalised last layer.

    .. math::
        z = \mathrm{MLP}(x) \in \mathbb{R}^{b},\quad
        \hat z = z / \lVert z \rVert_2,\quad
        \mathrm{logits}_k = g_k \, \frac{v_k^\top \hat z}{\lVert v_k \rVert_2},\ k = 1..K

    With ``norm_last_layer`` the gains :math:`g_k` are fixed at 1, so every logit is a cosine
    similarity (DINO's default, the more stable choice).

    Args:
        in_dim: backbone feature width (384 for ViT-S).
        out_dim: :math:`K`, the number of output dimensions ("prototypes").
        hidden_dim, bottleneck_dim, layers: MLP shape (DINO: 2048, 256, 3).

    Shapes: [N, in_dim] -> [N, out_dim].
    """

    def __init__(self, in_dim: int, out_dim: int, hidden_dim: int = 2048, bottleneck_dim: int = 256, layers: int = 3,
                 norm_last_layer: bool = True):
        super().__init__()
        if layers < 2:
            raise ValueError(f"the DINO head needs at least 2 layers, got {layers}")
        widths = [in_dim] + [hidden_dim] * (layers - 1)
        blocks: list[nn.Module] = []
        for width_in, width_out in zip(widths[:-1], widths[1:]):
            blocks += [nn.Linear(width_in, width_out), nn.GELU()]
        blocks.append(nn.Linear(hidden_dim, bottleneck_dim))
        self.mlp = nn.Sequential(*blocks)
        self.mlp.apply(_init_linear)
        # The last layer keeps PyTorch's default init, as in DINO (it is created after `apply`).
        self.last_layer = nn.utils.parametrizations.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
        gains = self.last_layer.parametrizations.weight.original0
        gains.data.fill_(1.0)
        gains.requires_grad = not norm_last_layer

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        bottleneck = F.normalize(self.mlp(features), dim=-1, p=2)
        return self.last_layer(bottleneck)


def _init_linear(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.trunc_normal_(module.weight, std=0.02)
        nn.init.zeros_(module.bias)


class MultiCropWrapper(nn.Module):
    """Backbone then head over a list of views of different sizes.

    Consecutive views of equal size go through the backbone as one batch, and the head runs
    once; one module keeps a single forward per step, which DDP requires.

    Shapes: ``views`` is a list of V tensors [B, 3, H_v, W_v]; the output is [V * B, K],
    view-major (rows ``v * B`` to ``(v + 1) * B`` belong to view ``v``).
    """

    def __init__(self, backbone: nn.Module, head: nn.Module):
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, views: Sequence[torch.Tensor]) -> torch.Tensor:
        features = []
        start = 0
        while start < len(views):
            end = start
            while end < len(views) and views[end].shape[-2:] == views[start].shape[-2:]:
                end += 1
            features.append(self.backbone(torch.cat(list(views[start:end]))))
            start = end
        return self.head(torch.cat(features))


# ============ loss with teacher centring and sharpening ============
@dataclass
class DINOLossOutput:
    """The loss and what it says about the two distributions (all scalars, nats).

    ``teacher_entropy``, ``student_entropy``: mean :math:`H(P_t)`, :math:`H(P_s)` over views
    (``log K`` = uniform, 0 = one-hot); ``kl``: mean :math:`\\mathrm{KL}(P_t \\Vert P_s)` over the
    loss's pairs; ``teacher_usage``: :math:`H(\\bar P_t)` of the global batch-mean distribution
    (its exponential: output dimensions in use); ``teacher_information``:
    :math:`H(\\bar P_t) - \\overline{H(P_t)}`, the information between an image and the
    teacher's output, which both collapses drive to 0.
    """

    loss: torch.Tensor
    teacher_entropy: torch.Tensor
    student_entropy: torch.Tensor
    kl: torch.Tensor
    teacher_usage: torch.Tensor
    teacher_information: torch.Tensor


class DINOLoss(nn.Module):
    r"""Cross-entropy between the teacher's and the student's distributions over pairs of views.

    With teacher outputs :math:`t_i` for the global views :math:`i \in \{1, 2\}`, student
    outputs :math:`s_v` for all :math:`V` views, centre :math:`c`, temperatures
    :math:`\tau_t, \tau_s`:

    .. math::
        P_t^{(i)} = \mathrm{softmax}\big((t_i - c)/\tau_t\big),\qquad
        P_s^{(v)} = \mathrm{softmax}(s_v/\tau_s),

        \mathcal{L} = \frac{1}{2(V-1)} \sum_{i=1}^{2} \sum_{v \ne i}
            \frac{1}{B}\sum_{b=1}^{B} -\sum_{k=1}^{K} P_t^{(i)}[b,k] \log P_s^{(v)}[b,k].

    :meth:`update_center` then moves :math:`c \leftarrow m\,c + (1-m)\,\frac{1}{2B}\sum_{b,i} t_i[b]`
    (over all processes). Centring stops one dimension from dominating; a low :math:`\tau_t`
    stops the uniform collapse that centring alone invites.

    Args:
        student_temp: :math:`\tau_s` (DINO: 0.1).
        center_momentum: :math:`m` (DINO: 0.9).
    """

    def __init__(self, out_dim: int, student_temp: float = 0.1, center_momentum: float = 0.9):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.register_buffer("center", torch.zeros(1, out_dim))

    def forward(self, student_output: torch.Tensor, teacher_output: torch.Tensor, teacher_temp: float) -> DINOLossOutput:
        """``student_output`` [V * B, K] (view-major), ``teacher_output`` [2 * B, K] from the
        two global views, in the same order as the student's first two views."""
        batch = teacher_output.shape[0] // 2
        n_views = student_output.shape[0] // batch
        student_log_probs = F.log_softmax(student_output.float() / self.student_temp, dim=-1).chunk(n_views)
        teacher_probs = F.softmax((teacher_output.float() - self.center) / teacher_temp, dim=-1).detach().chunk(2)

        total = student_output.new_zeros((), dtype=torch.float32)
        n_terms = 0
        for i, target in enumerate(teacher_probs):
            for v, log_probs in enumerate(student_log_probs):
                if v == i:  # the same view seen by both networks teaches nothing
                    continue
                total = total + torch.sum(-target * log_probs, dim=-1).mean()
                n_terms += 1
        loss = total / n_terms

        with torch.no_grad():
            teacher_entropy = torch.stack([entropy(p) for p in teacher_probs]).mean()
            student_entropy = torch.stack([entropy(lp.exp()) for lp in student_log_probs]).mean()
            teacher_usage = entropy(global_mean(torch.cat(teacher_probs)))
        # Each teacher view meets V - 1 student views, so the pair-mean of H(P_t) is its view-mean.
        return DINOLossOutput(loss, teacher_entropy, student_entropy, loss.detach() - teacher_entropy,
                              teacher_usage, teacher_usage - teacher_entropy)

    @torch.no_grad()
    def update_center(self, teacher_output: torch.Tensor) -> None:
        """EMA of the teacher's batch mean, over all processes under DDP."""
        self.center.mul_(self.center_momentum).add_(global_mean(teacher_output.float()), alpha=1 - self.center_momentum)


@torch.no_grad()
def global_mean(rows: torch.Tensor) -> torch.Tensor:
    """Mean [1, K] of ``rows`` [N, K] over the global batch: all processes' rows under DDP."""
    total = rows.sum(dim=0, keepdim=True)
    count = rows.shape[0]
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(total)
        count *= dist.get_world_size()
    return total / count


def entropy(probs: torch.Tensor) -> torch.Tensor:
    r"""Mean Shannon entropy (nats) of the rows of ``probs`` [N, K]: :math:`-\sum_k p_k \log p_k`,
    with :math:`0 \log 0 = 0`."""
    return -(probs * torch.log(probs.clamp_min(torch.finfo(probs.dtype).tiny))).sum(dim=-1).mean()


# ============ EMA teacher ============
@torch.no_grad()
def update_teacher(student: nn.Module, teacher: nn.Module, momentum: float) -> None:
    r"""Move every teacher parameter towards the student's:
    :math:`\theta_t \leftarrow m\,\theta_t + (1 - m)\,\theta_s`.

    ``student`` is the unwrapped module (not the DDP wrapper), its parameters in the teacher's order.
    """
    teacher_params = list(teacher.parameters())
    student_params = [p.detach() for p in student.parameters()]
    if len(teacher_params) != len(student_params):
        raise ValueError("student and teacher have different parameter lists")
    torch._foreach_mul_(teacher_params, momentum)
    torch._foreach_add_(teacher_params, student_params, alpha=1 - momentum)


# ============ the last layer's freeze ============
def cancel_last_layer_gradients(model: nn.Module) -> None:
    """Drop the head's last-layer gradients, as a step does while the last layer is frozen
    (the first :math:`F` steps, :class:`~ib_tutorial.training.schedules.Phases`; DINO: 1 epoch),
    so the prototypes stay put while the rest of the network settles."""
    for name, param in model.named_parameters():
        if "last_layer" in name:
            param.grad = None


#: Teacher entropy within this fraction of log K of either end (log K: uniform, 0: one-hot)
#: is a collapse (DINOTraining.collapse_warning).
COLLAPSE_FRACTION = 0.02
#: Teacher information (what the output says about the image) below this fraction of log K
#: is a collapse too; a DINO run whose teacher ends under it did not learn
#: (:mod:`ib_tutorial.book.learned`).
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
