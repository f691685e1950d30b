"""The FLOPs of a ViT's pieces, counted from their shapes.

FLOPs are counted as ``torch.utils.flop_counter`` counts them (the benchmarks use it):
``2 m n k`` for every matrix product, elementwise work not counted. A linear layer of
``a`` inputs and ``b`` outputs costs ``2 a b`` per token forward and twice that backward
(gradients of its input and of its weights), so one token through one transformer block
of width :math:`D` costs

.. math::
    2\\,(3D^2 + D^2 + 4D^2 + 4D^2) = 24 D^2
    \\quad\\text{plus}\\quad 4 T D \\text{ for attention over } T \\text{ tokens.}

A DINO step runs the teacher forward on the two global crops and the student forward and
backward (three forwards' worth) on every crop; each crop's CLS token goes through the
head (``in -> hidden -> hidden -> bottleneck -> K``). The objective's ``image_flops`` (:meth:`~ib_tutorial.training.dino_step.DINOTraining.image_flops`) adds it up per
image; with ``attention=False`` it gives what the benchmark counted on the CPU, where
PyTorch's fused attention is not counted (a test checks both records).
"""
from __future__ import annotations

from ..presets import TrainSettings


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
