"""DINO's parts against direct implementations and hand-computed values."""
import math

import numpy as np
import pytest
import torch
from torch import nn

from ib_tutorial.training.dino import DINOHead, DINOLoss, MultiCropWrapper, cancel_last_layer_gradients, update_teacher
from ib_tutorial.training.objective import clip_gradients, parameter_groups


def dino_loss_by_the_formula(student, teacher, center, teacher_temp, student_temp, n_views):
    """The DINO objective written out element by element in float64 NumPy."""
    student, teacher, center = (np.asarray(x, dtype=np.float64) for x in (student, teacher, center))
    batch = teacher.shape[0] // 2

    def softmax(row):
        row = row - row.max()
        return np.exp(row) / np.exp(row).sum()

    terms = []
    for i in range(2):
        for v in range(n_views):
            if v == i:
                continue
            per_image = []
            for b in range(batch):
                p_teacher = softmax((teacher[i * batch + b] - center[0]) / teacher_temp)
                p_student = softmax(student[v * batch + b] / student_temp)
                per_image.append(-(p_teacher * np.log(p_student)).sum())
            terms.append(np.mean(per_image))
    return float(np.mean(terms))


@pytest.mark.parametrize("n_views", [2, 3, 6])
def test_loss_equals_the_formula(generator, n_views):
    batch, out_dim = 5, 17
    student = torch.randn(n_views * batch, out_dim, generator=generator)
    teacher = torch.randn(2 * batch, out_dim, generator=generator)
    center = torch.randn(1, out_dim, generator=generator) * 0.3
    loss_fn = DINOLoss(out_dim, student_temp=0.1, center_momentum=0.9)
    loss_fn.center.copy_(center)
    result = loss_fn(student, teacher, teacher_temp=0.04)
    expected = dino_loss_by_the_formula(student, teacher, center, 0.04, 0.1, n_views)
    assert result.loss.item() == pytest.approx(expected, rel=1e-5)


def test_loss_statistics_equal_their_definitions(generator):
    batch, out_dim, n_views = 4, 11, 4
    student = torch.randn(n_views * batch, out_dim, generator=generator)
    teacher = torch.randn(2 * batch, out_dim, generator=generator)
    result = DINOLoss(out_dim)(student, teacher, teacher_temp=0.07)
    p_teacher = torch.softmax(teacher.double() / 0.07, dim=-1)  # centre is still zero
    p_student = torch.softmax(student.double() / 0.1, dim=-1)
    teacher_entropy = -(p_teacher * p_teacher.log()).sum(-1).mean()
    student_entropy = -(p_student * p_student.log()).sum(-1).mean()
    kl_pairs = [
        (p_teacher[i * batch:(i + 1) * batch] * (p_teacher[i * batch:(i + 1) * batch].log()
                                                  - p_student[v * batch:(v + 1) * batch].log())).sum(-1).mean()
        for i in range(2) for v in range(n_views) if v != i
    ]
    assert result.teacher_entropy.item() == pytest.approx(teacher_entropy.item(), rel=1e-5)
    assert result.student_entropy.item() == pytest.approx(student_entropy.item(), rel=1e-5)
    assert result.kl.item() == pytest.approx(torch.stack(kl_pairs).mean().item(), rel=1e-4, abs=1e-6)
    mean_teacher = p_teacher.mean(0)
    usage = -(mean_teacher * mean_teacher.log()).sum()
    assert result.teacher_usage.item() == pytest.approx(usage.item(), rel=1e-5)
    assert result.teacher_information.item() == pytest.approx((usage - teacher_entropy).item(), rel=1e-4)


@pytest.mark.parametrize("collapse", ["uniform", "one-hot onto one dimension"])
def test_teacher_information_is_zero_under_either_collapse_and_log_k_when_sharp_and_spread(collapse):
    out_dim = 8
    student = torch.zeros(2 * out_dim, out_dim)
    same = torch.zeros(2 * out_dim, out_dim) if collapse == "uniform" else 100.0 * torch.eye(out_dim)[[0] * 2 * out_dim]
    collapsed = DINOLoss(out_dim)(student, same, teacher_temp=0.04)
    assert collapsed.teacher_information.item() == pytest.approx(0.0, abs=1e-5)
    spread = 100.0 * torch.eye(out_dim).repeat(2, 1)  # every image its own dimension, one-hot
    healthy = DINOLoss(out_dim)(student, spread, teacher_temp=0.04)
    assert healthy.teacher_information.item() == pytest.approx(math.log(out_dim), rel=1e-5)


def test_center_is_an_ema_of_teacher_batch_means():
    loss_fn = DINOLoss(out_dim=2, center_momentum=0.9)
    first = torch.tensor([[1.0, 3.0], [3.0, 5.0]])  # mean (2, 4)
    loss_fn.update_center(first)
    assert loss_fn.center[0].tolist() == pytest.approx([0.2, 0.4])  # 0.9 * 0 + 0.1 * (2, 4)
    second = torch.tensor([[0.0, -2.0], [0.0, -2.0]])
    loss_fn(torch.zeros(4, 2), second, teacher_temp=0.04)  # the loss leaves the centre alone: the step moves it
    assert loss_fn.center[0].tolist() == pytest.approx([0.2, 0.4])
    loss_fn.update_center(second)
    assert loss_fn.center[0].tolist() == pytest.approx([0.18, 0.16])  # 0.9 * (0.2, 0.4) + 0.1 * (0, -2)


def test_loss_is_low_when_student_matches_a_confident_teacher():
    out_dim = 8
    targets = torch.eye(out_dim)[:2]  # two images, one-hot "prototypes" 0 and 1
    teacher = torch.cat([targets, targets]) * 10
    student = torch.cat([targets, targets, targets]) * 10
    matched = DINOLoss(out_dim)(student, teacher, teacher_temp=0.04).loss
    shuffled = DINOLoss(out_dim)(student.roll(1, dims=1), teacher, teacher_temp=0.04).loss
    assert matched.item() < 1e-3 < shuffled.item()


def test_teacher_ema_by_hand():
    student, teacher = nn.Linear(2, 1), nn.Linear(2, 1)
    with torch.no_grad():
        student.weight.copy_(torch.tensor([[1.0, 2.0]]))
        student.bias.fill_(4.0)
        teacher.weight.copy_(torch.tensor([[3.0, -2.0]]))
        teacher.bias.fill_(0.0)
    update_teacher(student, teacher, momentum=0.75)
    assert teacher.weight[0].tolist() == pytest.approx([2.5, -1.0])  # 0.75 * (3, -2) + 0.25 * (1, 2)
    assert teacher.bias.tolist() == pytest.approx([1.0])
    assert student.weight.tolist() == [[1.0, 2.0]]  # the student is untouched
    update_teacher(student, teacher, momentum=1.0)
    assert teacher.weight[0].tolist() == pytest.approx([2.5, -1.0])


def test_head_outputs_cosines_and_freezes_its_gains(generator):
    head = DINOHead(in_dim=6, out_dim=10, hidden_dim=16, bottleneck_dim=4)
    logits = head(torch.randn(3, 6, generator=generator))
    assert logits.shape == (3, 10)
    assert logits.abs().max() <= 1 + 1e-6  # unit gains, unit-norm input: cosine similarities
    gains = head.last_layer.parametrizations.weight.original0
    assert not gains.requires_grad and torch.all(gains == 1)
    assert DINOHead(6, 10, 16, 4, norm_last_layer=False).last_layer.parametrizations.weight.original0.requires_grad
    assert [m.out_features for m in head.mlp if isinstance(m, nn.Linear)] == [16, 16, 4]


def test_multi_crop_wrapper_equals_one_view_at_a_time(generator):
    torch.manual_seed(0)
    from ib_tutorial.models import vit_small

    wrapper = MultiCropWrapper(vit_small(16, 8), DINOHead(384, 7, 32, 8)).eval()
    views = [torch.randn(2, 3, 16, 16, generator=generator) for _ in range(2)]
    views += [torch.randn(2, 3, 8, 8, generator=generator) for _ in range(3)]
    with torch.no_grad():
        together = wrapper(views)
        separately = torch.cat([wrapper.head(wrapper.backbone(v)) for v in views])
    assert together.shape == (10, 7)
    torch.testing.assert_close(together, separately, rtol=1e-4, atol=1e-5)


def test_clipping_is_per_parameter():
    model = nn.Linear(2, 1)
    model.weight.grad = torch.tensor([[3.0, 4.0]])  # norm 5 -> scaled to norm 1
    model.bias.grad = torch.tensor([0.5])  # norm 0.5 -> left alone
    clip_gradients(model, max_norm=1.0)
    assert model.weight.grad[0].tolist() == pytest.approx([0.6, 0.8], rel=1e-5)
    assert model.bias.grad.tolist() == [0.5]


def test_the_freeze_drops_the_last_layers_gradients_alone():
    # When it applies (the first F steps) is the step's to say: the reference-step test.
    head = DINOHead(4, 5, 8, 3)
    head(torch.randn(2, 4)).sum().backward()
    assert head.last_layer.parametrizations.weight.original1.grad is not None
    cancel_last_layer_gradients(head)
    assert head.last_layer.parametrizations.weight.original1.grad is None
    assert head.mlp[0].weight.grad is not None


def test_biases_and_norms_are_not_decayed():
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    decayed, not_decayed = parameter_groups(model)
    assert [p.shape for p in decayed["params"]] == [(4, 3)]
    assert len(not_decayed["params"]) == 3 and not_decayed["weight_decay"] == 0.0
