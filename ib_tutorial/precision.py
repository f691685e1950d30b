"""Numerical precision of forward passes: one rule for training, k-NN and block profiles.

CUDA runs forward passes under autocast (bf16 where supported, else fp16); the CPU stays in
fp32. Measurements (covariances, eigenvalues) are accumulated in float64.
"""
from __future__ import annotations

import contextlib

import torch

from .command_line import argument

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_precision(requested: str, device: torch.device) -> str:
    """``auto`` -> bf16 on CUDA when supported, else fp16 on CUDA; fp32 on CPU."""
    if requested not in PRECISIONS:
        raise ValueError(f"{argument('precision', requested)}: the precision is one of {', '.join(PRECISIONS)}.")
    if device.type != "cuda":
        if requested not in ("auto", "fp32"):
            raise ValueError(f"{argument('precision', requested)} needs a CUDA device; on the CPU, training runs in "
                             f"fp32 ({argument('precision', 'fp32')} or 'auto').")
        return "fp32"
    if requested == "auto":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return requested


def autocast(device: torch.device, precision: str = "auto"):
    """The context a forward pass on ``device`` runs in (see :func:`resolve_precision`):
    CUDA autocast for bf16/fp16, nothing for fp32."""
    dtype = AUTOCAST_DTYPES.get(resolve_precision(precision, device))
    return torch.autocast("cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()
