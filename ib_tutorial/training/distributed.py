"""One training process among those ``torchrun`` started, or the only one.

``torchrun --nproc_per_node=N -m ib_tutorial train ...`` sets ``WORLD_SIZE``, ``RANK`` and
``LOCAL_RANK`` for each process; :meth:`Processes.start` joins the process group they
describe (NCCL between GPUs, gloo between CPU processes). Without ``torchrun`` there is
one process and every collective below is the identity, so the same code runs on a
laptop and on a cluster.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass
class Processes:
    """This process's rank, the number of processes and its device index on its node."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0: the only process that writes files and evaluates."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @classmethod
    def start(cls, device_type: str) -> "Processes":
        """Join the process group described by the environment (NCCL for ``cuda``, else gloo)."""
        if int(os.environ.get("WORLD_SIZE", "1")) == 1:
            return cls()
        if not dist.is_initialized():
            dist.init_process_group(backend="nccl" if device_type == "cuda" else "gloo")
        return cls(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))

    def stop(self) -> None:
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()

    def mean(self, values: torch.Tensor) -> torch.Tensor:
        """The average of ``values`` over processes (``values`` itself when there is one)."""
        if not self.distributed:
            return values
        values = values.clone()
        dist.all_reduce(values)
        return values / self.world_size

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def gather(self, obj) -> list:
        """Every process's ``obj`` (any picklable object), in rank order."""
        if not self.distributed:
            return [obj]
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, obj)
        return gathered
