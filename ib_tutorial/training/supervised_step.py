"""The supervised control, asking whether the bottleneck comes from the data or from DINO's
objective: DINO's backbone with a linear classifier on its CLS token, trained by cross-entropy on
the two global views with the same optimiser, schedules, clipping and precision."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..models import ARCHITECTURES, build_vit
from ..machine import autocast
from ..presets import TrainSettings, ViewSettings
from .objective import Objective
from .schedules import Schedules


class Classifier(nn.Module):
    """A backbone and a linear layer on its CLS features."""

    def __init__(self, backbone: nn.Module, embed_dim: int, num_classes: int):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(images))


@dataclass
class SupervisedOutput:
    """The cross-entropy of a batch, and the fraction of its views classified correctly."""

    loss: torch.Tensor
    train_accuracy: torch.Tensor


class SupervisedTraining(Objective):
    """Classifier, optimiser, loss scaler and schedules."""

    name = "supervised"
    local_crops = False  # it learns from the two global views only
    network = "network"  # no teacher
    compared_with_paper = False  # the paper's values are DINO's
    uses_labels = True
    phase_floors = False  # its recipe learns with the warm-up's epochs alone and has no last layer to freeze

    def __init__(self, train: TrainSettings, view: ViewSettings, precision: str, schedules: Schedules,
                 device: torch.device, num_classes: int):
        super().__init__(train, view, precision, schedules, device, num_classes)
        backbone = build_vit(train.arch, view.img_size, view.patch_size, train.drop_path_rate)
        self._optimise(Classifier(backbone, ARCHITECTURES[train.arch]["embed_dim"], num_classes).to(device))

    @property
    def backbone(self) -> nn.Module:
        return self.student_module.backbone

    def forward(self, views: list[torch.Tensor], labels: torch.Tensor, epoch: int) -> SupervisedOutput:
        images = torch.cat([v.to(self.device, non_blocking=True) for v in views[:2]])
        targets = labels.to(self.device).repeat(2)
        with autocast(self.device, self.precision):
            logits = self.student(images)
        logits = logits.float()
        accuracy = (logits.detach().argmax(-1) == targets).float().mean()
        return SupervisedOutput(F.cross_entropy(logits, targets), accuracy)

    def checkpointed(self) -> dict[str, nn.Module]:
        return {"student": self.student_module}
