"""Whether a run's files fit on its disk, checked before it writes any.

A ``paper`` run writes gigabytes: a checkpoint (student, teacher, head, loss centre and
the optimiser's two moments of every trainable weight) kept as the latest and the
previous one, with a third while the next is written, and the teacher's backbone at every
saved epoch. :func:`check_disk_space` reckons that from the built training state and
refuses, with the numbers, a run that cannot fit, instead of failing hours later.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from ..files import DiskFullError


@dataclass(frozen=True)
class RunWrites:
    """What a run will write from here to its end, in bytes."""

    checkpoint: int
    backbone: int
    backbones: int  # saved epochs still to come

    @property
    def total(self) -> int:
        return 3 * self.checkpoint + self.backbones * self.backbone  # latest, previous and the one being written


def _bytes(state: dict) -> int:
    return sum(value.numel() * value.element_size() for value in state.values() if isinstance(value, torch.Tensor))


def saved_epochs(first: int, epochs: int, every: int) -> list[int]:
    """The epochs from ``first`` on whose teacher backbone a run saves (every ``every``, the
    last, and 0 for a new run)."""
    return [e for e in range(first, epochs + 1) if e % every == 0 or e == epochs]


def run_writes(state, config, start_epoch: int) -> RunWrites:
    """Reckon :class:`RunWrites` from a built training ``state`` (before its first step the
    optimiser holds no moments yet: two per trainable weight are counted)."""
    parts = sum(_bytes(part.state_dict()) for part in state.checkpointed().values())
    moments = 2 * sum(p.numel() * p.element_size() for group in state.optimizer.param_groups for p in group["params"]
                      if p.requires_grad)
    first = start_epoch + 1 if start_epoch else 0
    return RunWrites(parts + moments, _bytes(state.backbone.state_dict()),
                     len(saved_epochs(first, config.train.epochs, config.train.checkpoint_every)))


def check_disk_space(folder: Path, writes: RunWrites) -> None:
    """Raise :class:`~ib_tutorial.files.DiskFullError` with the numbers when ``writes`` do not
    fit in the free space of ``folder``'s disk (its nearest existing parent)."""
    existing = next(path for path in [folder, *folder.parents] if path.exists())
    free = shutil.disk_usage(existing).free
    if writes.total > free:
        raise DiskFullError(
            f"The run needs about {writes.total / 1e9:.2f} GB in {folder}: 3 checkpoints of {writes.checkpoint / 1e6:.0f} MB "
            f"(the latest, the previous and the one being written) and {writes.backbones} teacher backbones of "
            f"{writes.backbone / 1e6:.0f} MB, one per saved epoch; {free / 1e9:.2f} GB are free there. Free some space, "
            "choose another --out, or save fewer epochs (a larger --checkpoint-every).")
