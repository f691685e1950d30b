"""DINO in one module: the head, the loss, the teacher's EMA, and one training step (:class:`DINOTraining`).

Self-distillation with no labels (Caron et al., 2021): a student and a teacher of the same
architecture map each view to :math:`K` logits; the student learns to predict the teacher's
centred, sharpened distribution of a *different* view, and the teacher follows the student by
an exponential moving average. Everything follows facebookresearch/dino term by term;
:meth:`DINOTraining.update` reads as DINO's ``train_one_epoch``: zero-grad, backward, clip,
cancel the last layer's gradient, step, EMA, centre.
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
from .schedules import Phases, Schedules


class DINOHead(nn.Module):
    r"""MLP, bottleneck, L2 normalisation, weight-normalised last layer.

    .. math::
        z = \mathrm{MLP}(x) \in \mathbb{R}^{b},\quad
        \hat z = z / \lVert z \rVert_2,\quad
        \mathrm{logits}_k = g_k \, \frac{v_k^\top \hat z}{\lVert v_k \rVert_2},\ k = 1..K

    With ``norm_last_layer`` the gains :math:`g_k` are fixed at 1, so every logit is a cosine
    similarity (DINO's default). ``out_dim`` is :math:`K`.
    """

    def __init__(self, in_dim: int, out_dim: int, hidden_dim: int = 2048, bottleneck_dim: int = 256,
                 norm_last_layer: bool = True):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden_dim), nn.GELU(), nn.Linear(hidden_dim, hidden_dim),
                                 nn.GELU(), nn.Linear(hidden_dim, bottleneck_dim))
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
    """Backbone then head over V views [B, 3, H_v, W_v] -> [V * B, K], view-major.

    Consecutive views of equal size go through the backbone as one batch and the head runs
    once: a single forward per step, which DDP requires.
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
    stops the uniform collapse that centring alone invites. DINO: :math:`\tau_s = 0.1`, :math:`m = 0.9`.
    """

    def __init__(self, out_dim: int, student_temp: float = 0.1, center_momentum: float = 0.9):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.register_buffer("center", torch.zeros(1, out_dim))

    def forward(self, student_output: torch.Tensor, teacher_output: torch.Tensor, teacher_temp: float) -> DINOLossOutput:
        """``student_output`` [V * B, K], ``teacher_output`` [2 * B, K] of the two global views (view-major)."""
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


@torch.no_grad()
def update_teacher(student: nn.Module, teacher: nn.Module, momentum: float) -> None:
    r""":math:`\theta_t \leftarrow m\,\theta_t + (1 - m)\,\theta_s` for every parameter
    (``student`` unwrapped from DDP)."""
    teacher_params = list(teacher.parameters())
    student_params = [p.detach() for p in student.parameters()]
    torch._foreach_mul_(teacher_params, momentum)
    torch._foreach_add_(teacher_params, student_params, alpha=1 - momentum)


def cancel_last_layer_gradients(model: nn.Module) -> None:
    """Drop the head's last-layer gradients (the first :math:`F` steps,
    :class:`~ib_tutorial.training.schedules.Phases`)."""
    for name, param in model.named_parameters():
        if "last_layer" in name:
            param.grad = None


#: Teacher entropy within this fraction of log K of either end (uniform or one-hot) is a collapse.
COLLAPSE_FRACTION = 0.02
#: Teacher information under this fraction of log K is a collapse too; a DINO run whose teacher
#: ends under it did not learn (:mod:`ib_tutorial.book.learned`).
INFORMATION_FRACTION = 0.05
# InformationWatch: information under FALL_FRACTION of its peak in a phase (a peak of at least
# WATCHED_PEAK nats, means of WATCHED_LOGS logs) is going back towards uniform.
FALL_FRACTION = 0.6
WATCHED_PEAK = 0.3
WATCHED_LOGS = 3


class DINOTraining(Objective):
    """Student, teacher (from the same weights, without stochastic depth), loss with its centre,
    optimiser, loss scaler and schedules."""

    name = "dino"
    local_crops = True
    network = "teacher"
    compared_with_paper = True
    uses_labels = False
    phase_floors = True

    def __init__(self, train: TrainSettings, view: ViewSettings, precision: str, schedules: Schedules,
                 device: torch.device, num_classes: int):
        super().__init__(train, view, precision, schedules, device, num_classes)

        def network(drop_path_rate: float) -> MultiCropWrapper:
            head = DINOHead(ARCHITECTURES[train.arch]["embed_dim"], train.out_dim, train.hidden_dim,
                            train.bottleneck_dim, norm_last_layer=train.norm_last_layer)
            return MultiCropWrapper(build_vit(train.arch, view.img_size, view.patch_size, drop_path_rate), head)

        student, teacher = network(train.drop_path_rate), network(0.0)
        teacher.load_state_dict(student.state_dict())
        self.teacher = teacher.requires_grad_(False).to(device)
        self.loss_fn = DINOLoss(self.settings.out_dim, self.settings.student_temp,
                                self.settings.center_momentum).to(device)
        self.watch = InformationWatch(schedules.phases)
        self._optimise(student.to(device))

    @property
    def backbone(self) -> torch.nn.Module:
        return self.teacher.backbone

    def forward(self, views: list[torch.Tensor], labels: torch.Tensor, epoch: int) -> DINOLossOutput:
        """Teacher on the two global views, student on all; the teacher's output is kept for the centre."""
        views = [v.to(self.device, non_blocking=True) for v in views]
        with autocast(self.device, self.precision):
            self.teacher_output = self.teacher(views[:2])
            student_output = self.student(views)
        return self.loss_fn(student_output, self.teacher_output, float(self.schedules.teacher_temp[epoch]))

    def update(self, loss: torch.Tensor, epoch: int, step: int) -> None:
        """What DINO's ``train_one_epoch`` does after the loss at step ``step`` (from 0), written out
        in full, not through :meth:`Objective.update <ib_tutorial.training.objective.Objective.update>`,
        so that it reads as that loop does."""
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

    def step_settings(self, epoch: int, step: int) -> dict[str, float]:
        return {**super().step_settings(epoch, step), "teacher_temp": float(self.schedules.teacher_temp[epoch]),
                "momentum": float(self.schedules.momentum[step - 1]),
                "center_norm": self.loss_fn.center.norm().item()}

    def checkpointed(self) -> dict[str, torch.nn.Module]:
        return {"student": self.student_module, "teacher": self.teacher, "loss": self.loss_fn}

    def collapse_warning(self, record: dict) -> str | None:
        """:func:`collapse_message`, else :class:`InformationWatch`'s message."""
        falling = self.watch.update(record["step"], record["teacher_information"])  # every logged step feeds the watch
        return collapse_message(record["teacher_entropy"], record["teacher_information"], self.settings.out_dim) or falling

    @classmethod
    def image_flops(cls, view: ViewSettings, train: TrainSettings, attention: bool = True) -> float:
        r"""FLOPs one training image costs in one DINO step, counted as ``torch.utils.flop_counter``
        does: ``2 m n k`` per matrix product, elementwise work not counted. One token through one
        block of width :math:`D` costs :math:`24 D^2` forward, plus :math:`4 T D` for attention
        over :math:`T` tokens; a backward costs twice a forward. Per crop: the teacher's forward
        (global crops only), the student's forward and backward, the head on the CLS token; the
        patch embedding's backward computes its weight gradient only. ``attention=False``
        leaves out the attention products, as the CPU benchmark counted.
        """
        shape = ARCHITECTURES[train.arch]
        width, depth, patch = shape["embed_dim"], shape["depth"], view.patch_size
        hidden, bottleneck = train.hidden_dim, train.bottleneck_dim
        head = 2.0 * (width * hidden + hidden * hidden + hidden * bottleneck + bottleneck * train.out_dim)
        total = 0.0
        for side, crops, teacher_sees in ((view.img_size, 2, True), (view.local_crop_size, train.local_crops_number, False)):
            tokens = (side // patch) ** 2 + 1  # patches and the CLS token
            blocks = float(depth * (24 * width**2 * tokens + (4 * tokens**2 * width if attention else 0)))
            embedding = float(2 * 3 * patch**2 * width * (tokens - 1))
            forward = blocks + head
            total += crops * (3 * forward + 2 * embedding + ((forward + embedding) if teacher_sees else 0.0))
        return total


def collapse_message(teacher_entropy: float, teacher_information: float, out_dim: int) -> str | None:
    """A warning when the teacher entropy is near log K (uniform) or 0 (one-hot), or its output
    carries almost no information about its image; else None."""
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
    """Warns once a phase (warm-up, freeze, after the release) when the teacher's information
    falls under :data:`FALL_FRACTION` of the phase's peak (means of :data:`WATCHED_LOGS` logs):
    how DINO fails on small data (the DINO chapter), long before the collapse warning."""

    def __init__(self, phases: Phases):
        self.phases = phases
        self.phase: str | None = None
        self.recent: list[float] = []
        self.peak, self.peak_step = 0.0, 0
        self.warned: set[str] = set()

    def update(self, step: int, information: float) -> str | None:
        """Record the information (nats) at ``step``; the warning, if one is due."""
        self.recent = (self.recent + [information])[-WATCHED_LOGS:]
        level = sum(self.recent) / len(self.recent)
        warmup, freeze = self.phases.warmup_steps, self.phases.freeze_steps
        phase = ("during the warm-up" if step <= warmup else "while the last layer is frozen" if step <= freeze
                 else f"after the last layer's release at step {freeze}")
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
