"""The package's DINO step against an independent statement of the reference's training step.

The reference (facebookresearch/dino, ``main_dino.py`` and ``utils.py``) is written out here
from its formulas, as that code states them: ``cosine_scheduler``, ``DINOLoss`` with its
teacher-temperature schedule and centre, ``get_params_groups``, ``clip_gradients``,
``cancel_gradients_last_layer`` (in epochs) and the EMA of ``train_one_epoch``. Both run six
steps from the same weights on the same views, through the warm-up, the last layer's freeze
and its release, with clipping that bites, weight decay on one group and a moving centre;
the package's phases are set by their floors in steps (:mod:`ib_tutorial.training.schedules`),
which here equal whole epochs of the reference.
"""
import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ib_tutorial.presets import TrainSettings, ViewSettings
from ib_tutorial.training.dino import DINOTraining
from ib_tutorial.training.schedules import Schedules

STEPS_PER_EPOCH, EPOCHS, BATCH = 2, 3, 4
TRAIN = TrainSettings(
    epochs=EPOCHS, batch_size=BATCH, lr=0.05, min_lr=1e-3, warmup_epochs=1, warmup_min_steps=4,
    weight_decay=0.04, weight_decay_end=0.4, momentum_teacher=0.9, warmup_teacher_temp=0.03, teacher_temp=0.05,
    warmup_teacher_temp_epochs=2, student_temp=0.1, center_momentum=0.8, out_dim=32, hidden_dim=24,
    bottleneck_dim=8, norm_last_layer=False, local_crops_number=2, clip_grad=0.05, freeze_last_layer=1,
    freeze_min_steps=4, drop_path_rate=0.0, precision="fp32", arch="vit_tiny",
)
VIEW = ViewSettings(img_size=16, patch_size=8, local_crop_size=8)
# The reference states its phases in epochs: the package's floors of 4 steps are 2 of them.
REFERENCE_WARMUP_EPOCHS = REFERENCE_FREEZE_EPOCHS = 2


# ---- the reference's step, written out ----
def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0, start_warmup_value=0):
    warmup_schedule = np.array([])
    warmup_iters = warmup_epochs * niter_per_ep
    if warmup_epochs > 0:
        warmup_schedule = np.linspace(start_warmup_value, base_value, warmup_iters)
    iters = np.arange(epochs * niter_per_ep - warmup_iters)
    schedule = final_value + 0.5 * (base_value - final_value) * (1 + np.cos(np.pi * iters / len(iters)))
    return np.concatenate((warmup_schedule, schedule))


class ReferenceLoss:
    def __init__(self, out_dim, ncrops, warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs, nepochs,
                 student_temp, center_momentum):
        self.student_temp, self.center_momentum, self.ncrops = student_temp, center_momentum, ncrops
        self.center = torch.zeros(1, out_dim)
        self.teacher_temp_schedule = np.concatenate((
            np.linspace(warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs),
            np.ones(nepochs - warmup_teacher_temp_epochs) * teacher_temp))

    def __call__(self, student_output, teacher_output, epoch):
        student_out = (student_output / self.student_temp).chunk(self.ncrops)
        temp = self.teacher_temp_schedule[epoch]
        teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1).detach().chunk(2)
        total_loss, n_loss_terms = 0, 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    continue
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss += loss.mean()
                n_loss_terms += 1
        total_loss /= n_loss_terms
        batch_center = torch.sum(teacher_output, dim=0, keepdim=True) / len(teacher_output)
        self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)
        return total_loss


def multi_crop_forward(network, crops):
    idx_crops = torch.cumsum(torch.unique_consecutive(torch.tensor([c.shape[-1] for c in crops]),
                                                      return_counts=True)[1], 0)
    start_idx, output = 0, torch.empty(0)
    for end_idx in idx_crops:
        output = torch.cat((output, network.backbone(torch.cat(crops[start_idx:end_idx]))))
        start_idx = end_idx
    return network.head(output)


def get_params_groups(model):
    regularized, not_regularized = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if name.endswith(".bias") or len(param.shape) == 1:
            not_regularized.append(param)
        else:
            regularized.append(param)
    return [{"params": regularized}, {"params": not_regularized, "weight_decay": 0.0}]


def clip_gradients(model, clip):
    for p in model.parameters():
        if p.grad is not None:
            param_norm = p.grad.data.norm(2)
            clip_coef = clip / (param_norm + 1e-6)
            if clip_coef < 1:
                p.grad.data.mul_(clip_coef)


def cancel_gradients_last_layer(epoch, model, freeze_last_layer):
    if epoch >= freeze_last_layer:
        return
    for n, p in model.named_parameters():
        if "last_layer" in n:
            p.grad = None


def reference_steps(student, teacher, batches):
    """``train_one_epoch`` of the reference over ``batches``; the losses, step by step."""
    niter = STEPS_PER_EPOCH
    lr_schedule = cosine_scheduler(TRAIN.lr * BATCH / 256, TRAIN.min_lr, EPOCHS, niter, REFERENCE_WARMUP_EPOCHS)
    wd_schedule = cosine_scheduler(TRAIN.weight_decay, TRAIN.weight_decay_end, EPOCHS, niter)
    momentum_schedule = cosine_scheduler(TRAIN.momentum_teacher, 1, EPOCHS, niter)
    loss_fn = ReferenceLoss(TRAIN.out_dim, 2 + TRAIN.local_crops_number, TRAIN.warmup_teacher_temp,
                            TRAIN.teacher_temp, TRAIN.warmup_teacher_temp_epochs, EPOCHS, TRAIN.student_temp,
                            TRAIN.center_momentum)
    optimizer = torch.optim.AdamW(get_params_groups(student))
    losses = []
    for it, images in enumerate(batches):
        epoch = it // niter
        for i, param_group in enumerate(optimizer.param_groups):
            param_group["lr"] = lr_schedule[it]
            if i == 0:
                param_group["weight_decay"] = wd_schedule[it]
        teacher_output = multi_crop_forward(teacher, images[:2])
        student_output = multi_crop_forward(student, images)
        loss = loss_fn(student_output, teacher_output, epoch)
        optimizer.zero_grad()
        loss.backward()
        clip_gradients(student, TRAIN.clip_grad)
        cancel_gradients_last_layer(epoch, student, REFERENCE_FREEZE_EPOCHS)
        optimizer.step()
        with torch.no_grad():
            m = momentum_schedule[it]
            for param_q, param_k in zip(student.parameters(), teacher.parameters()):
                param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)
        losses.append(loss.item())
    return losses, loss_fn.center


# ---- the test ----
def make_batches(generator):
    sides = [VIEW.img_size] * 2 + [VIEW.local_crop_size] * TRAIN.local_crops_number
    return [[torch.randn(BATCH, 3, side, side, generator=generator) for side in sides]
            for _ in range(EPOCHS * STEPS_PER_EPOCH)]


def test_six_steps_equal_the_reference(generator):
    torch.manual_seed(0)
    state = DINOTraining(TRAIN, VIEW, "fp32", Schedules.of(TRAIN, STEPS_PER_EPOCH), torch.device("cpu"), 10)
    student, teacher = copy.deepcopy(state.student_module), copy.deepcopy(state.teacher)
    batches = make_batches(generator)
    last_layer_before = state.student_module.head.last_layer.parametrizations.weight.original1.clone()

    losses = []
    for step, views in enumerate(batches):
        epoch = step // STEPS_PER_EPOCH
        result = state.forward(views, torch.zeros(BATCH, dtype=torch.long), epoch)
        state.update(result.loss, epoch, step)
        losses.append(result.loss.item())
        if step == 3:  # the last frozen step: the prototypes have not moved yet
            torch.testing.assert_close(state.student_module.head.last_layer.parametrizations.weight.original1,
                                       last_layer_before, rtol=0, atol=0)

    expected_losses, expected_center = reference_steps(student, teacher, batches)
    assert losses == pytest.approx(expected_losses, rel=2e-5)  # float32 sums in another order
    # Batch means of float32 outputs, summed in another order (a relative 7e-5 seen on one CPU).
    torch.testing.assert_close(state.loss_fn.center, expected_center, rtol=1e-4, atol=1e-6)
    # Within 2e-5 of each other, where one step moves a weight by up to 8e-4 (the peak
    # learning rate): the attention's key biases, whose gradient is zero up to rounding (the
    # softmax ignores them), are where AdamW's normalisation makes rounding show most (9e-6).
    for ours, theirs in ((state.student_module, student), (state.teacher, teacher)):
        for (name, a), b in zip(ours.named_parameters(), theirs.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=2e-5, msg=name)
    # The release moved the prototypes, and clipping and decay were in play.
    assert not torch.equal(state.student_module.head.last_layer.parametrizations.weight.original1, last_layer_before)
    assert state.schedules.lr[3] == pytest.approx(TRAIN.lr * BATCH / 256) and state.schedules.lr[2] < state.schedules.lr[3]
