r"""DINO's parts: projection head, loss with teacher centring, EMA teacher, the last layer's freeze.

Self-distillation with no labels (Caron et al., 2021): a student and a teacher of the same
architecture map each view to :math:`K` logits; the student learns to predict the teacher's
centred, sharpened distribution of a *different* view, and the teacher follows the student by
an exponential moving average. Everything follows facebookresearch/dino term by term; the step
that strings the parts together is :meth:`ib_tutorial.training.dino_step.DINOTraining.update`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
