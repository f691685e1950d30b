r"""DINO's parts: projection head, loss with teacher centring, EMA teacher, schedules.

Self-distillation with no labels (Caron et al., 2021). A student network
:math:`g_{\theta_s}` and a teacher :math:`g_{\theta_t}` (same architecture) map each
view of an image to :math:`K` logits. The teacher sees the two global views, the
student sees every view; the student is trained to predict the teacher's centred and
sharpened distribution of a *different* view, and the teacher follows the student by
an exponential moving average. Everything here follows the reference implementation
(facebookresearch/dino, ``main_dino.py`` and ``utils.py``) term by term; the training
loop that strings the parts together is :mod:`ib_tutorial.training.loop`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


# ============ projection head ============
class DINOHead(nn.Module):
    r"""MLP, bottleneck, L2 normalisation, weight-normalised last layer.

    .. math::
        z = \mathrm{MLP}(x) \in \mathbb{R}^{b},\quad
        \hat z = z / \lVert z \rVert_2,\quad
        \mathrm{logits}_k = g_k \, \frac{v_k^\top \hat z}{\lVert v_k \rVert_2},\ k = 1..K

    The MLP is Linear(in, hidden) - GELU - [Linear(hidden, hidden) - GELU] x (layers - 2)
    - Linear(hidden, bottleneck). With ``norm_last_layer`` the gains :math:`g_k` are fixed
    at 1, so every logit is a cosine similarity in [-1, 1] (DINO's default, which it reports
    as the more stable choice).

    Args:
        in_dim: backbone feature width (384 for ViT-S).
        out_dim: :math:`K`, the number of output dimensions ("prototypes").
        hidden_dim, bottleneck_dim, layers: MLP shape (DINO: 2048, 256, 3).
        norm_last_layer: freeze the weight-norm gains at 1.

    Shapes: [N, in_dim] -> [N, out_dim].
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        hidden_dim: int = 2048,
        bottleneck_dim: int = 256,
        layers: int = 3,
        norm_last_layer: bool = True,
    ):
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

    Consecutive views of equal size go through the backbone as one batch (one pass per
    resolution), their features are concatenated in view order and the head runs once.
    Wrapping both in one module keeps a single forward per step, which DDP requires.

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

    ``teacher_entropy``: mean :math:`H(P_t)` over teacher views (``log K`` = uniform,
    0 = one-hot); ``student_entropy``: mean :math:`H(P_s)` over student views;
    ``kl``: mean :math:`\\mathrm{KL}(P_t \\Vert P_s)` over the pairs the loss uses;
    ``teacher_usage``: :math:`H(\\bar P_t)`, the entropy of the teacher's batch-mean
    distribution (over the global batch under DDP) (its exponential is the number of output dimensions in use);
    ``teacher_information``: :math:`H(\\bar P_t) - \\overline{H(P_t)}`, the mutual information
    between an image of the batch and the teacher's output. Both collapses drive it to 0:
    uniform (every image gets the flat distribution) and one-hot onto one dimension.
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

    After the loss, the centre follows the batch mean of the teacher outputs,
    :math:`c \leftarrow m\,c + (1-m)\,\frac{1}{2B}\sum_{b,i} t_i[b]`, averaged over all
    processes when a process group exists. Centring stops one dimension from dominating;
    a low :math:`\tau_t` (sharpening) stops the uniform collapse that centring alone invites.

    Args:
        out_dim: :math:`K`.
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
        self.update_center(teacher_output)
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

    ``student`` is the unwrapped module (not the DDP wrapper); both must list their
    parameters in the same order (they are built by the same code).
    """
    teacher_params = list(teacher.parameters())
    student_params = [p.detach() for p in student.parameters()]
    if len(teacher_params) != len(student_params):
        raise ValueError("student and teacher have different parameter lists")
    torch._foreach_mul_(teacher_params, momentum)
    torch._foreach_add_(teacher_params, student_params, alpha=1 - momentum)


# ============ schedules ============
def cosine_schedule(
    base: float,
    final: float,
    epochs: int,
    steps_per_epoch: int,
    warmup_steps: int = 0,
    warmup_start: float = 0.0,
) -> np.ndarray:
    r"""One value per training step: a linear warm-up, then a half cosine from ``base`` to ``final``.

    For step :math:`i` after :math:`W` warm-up steps, of :math:`T` steps in all:

    .. math::
        v_i = f + \tfrac12 (b - f)\Big(1 + \cos\frac{\pi (i - W)}{T - W}\Big),

    and during warm-up :math:`v` runs linearly from ``warmup_start`` (step 0) to ``base``
    (step :math:`W - 1`), as ``np.linspace`` does. Returns an array of length
    ``epochs * steps_per_epoch``.
    """
    total = epochs * steps_per_epoch
    if warmup_steps > total:
        raise ValueError(f"warm-up ({warmup_steps} steps) is longer than training ({total} steps)")
    warmup = np.linspace(warmup_start, base, warmup_steps)
    steps = np.arange(total - warmup_steps)
    cosine = final + 0.5 * (base - final) * (1 + np.cos(np.pi * steps / max(len(steps), 1)))
    return np.concatenate([warmup, cosine])


def teacher_temperature_schedule(warmup_temp: float, temp: float, warmup_epochs: int, epochs: int) -> np.ndarray:
    r"""One teacher temperature per epoch: linear from ``warmup_temp`` to ``temp`` over
    ``warmup_epochs`` epochs (``np.linspace``, both ends included), then constant ``temp``."""
    warmup_epochs = min(warmup_epochs, epochs)
    return np.concatenate([np.linspace(warmup_temp, temp, warmup_epochs), np.full(epochs - warmup_epochs, temp)])


@dataclass
class Schedules:
    """Every value DINO changes during training: per step ``lr``, ``weight_decay``,
    ``momentum`` (teacher EMA); per epoch ``teacher_temp``."""

    lr: np.ndarray
    weight_decay: np.ndarray
    momentum: np.ndarray
    teacher_temp: np.ndarray

    @classmethod
    def build(
        cls,
        *,
        epochs: int,
        steps_per_epoch: int,
        global_batch: int,
        lr: float,
        min_lr: float,
        warmup_steps: int,
        weight_decay: float,
        weight_decay_end: float,
        momentum_teacher: float,
        warmup_teacher_temp: float,
        teacher_temp: float,
        warmup_teacher_temp_epochs: int,
    ) -> "Schedules":
        r"""DINO's schedules. The peak learning rate follows the linear scaling rule,
        :math:`\eta = \eta_{256} \cdot B / 256` for global batch :math:`B`; the warm-up starts at 0
        and lasts ``warmup_steps`` (:class:`~ib_tutorial.training.phases.Phases`).
        Weight decay and momentum follow a cosine (no warm-up) to their final values
        (momentum to 1)."""
        return cls(
            lr=cosine_schedule(lr * global_batch / 256, min_lr, epochs, steps_per_epoch, warmup_steps),
            weight_decay=cosine_schedule(weight_decay, weight_decay_end, epochs, steps_per_epoch),
            momentum=cosine_schedule(momentum_teacher, 1.0, epochs, steps_per_epoch),
            teacher_temp=teacher_temperature_schedule(warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs, epochs),
        )

    @property
    def steps_per_epoch(self) -> int:
        """Steps in one epoch (the step schedules hold one value a step, the temperature one an epoch)."""
        return len(self.lr) // len(self.teacher_temp)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {name: torch.from_numpy(values) for name, values in vars(self).items()}

    def matches(self, state: dict[str, torch.Tensor]) -> bool:
        """Whether a checkpoint's schedules are these (resuming with changed settings would not be)."""
        return set(state) == set(vars(self)) and all(
            np.array_equal(state[name].numpy(), values) for name, values in vars(self).items()
        )


# ============ optimisation details ============
def parameter_groups(model: nn.Module) -> list[dict]:
    """Two AdamW groups: weights (decayed by the schedule) and biases/norm gains (never decayed).
    Frozen parameters (the fixed weight-norm gains) are left out."""
    decayed, not_decayed = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (not_decayed if name.endswith(".bias") or param.ndim == 1 else decayed).append(param)
    return [{"params": decayed}, {"params": not_decayed, "weight_decay": 0.0}]


def apply_schedules(optimizer: torch.optim.Optimizer, lr: float, weight_decay: float) -> None:
    """Set this step's learning rate on every group and weight decay on the first (decayed) group."""
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


def cancel_last_layer_gradients(model: nn.Module, step: int, freeze_steps: int) -> None:
    """Drop the head's last-layer gradients in the first ``freeze_steps`` steps (``step``
    counts from 0), so the prototypes stay put while the rest of the network settles (DINO:
    1 epoch; :class:`~ib_tutorial.training.phases.Phases`)."""
    if step >= freeze_steps:
        return
    for name, param in model.named_parameters():
        if "last_layer" in name:
            param.grad = None
