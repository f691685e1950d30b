"""One training process among those ``torchrun`` started, or the only one (then every
collective is the identity)."""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


def restarted() -> bool:
    """Whether ``torchrun --max-restarts`` restarted this process's group: it then resumes the run."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0


def _attempt_store() -> dist.Store:
    """The agent's store, with keys of this attempt only: it lives across restarts, and a restarted
    job would otherwise read the dead processes' addresses (gloo: "Connection refused", or a hang)."""
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), int(os.environ["WORLD_SIZE"]),
                          is_master=False, timeout=dist.constants.default_pg_timeout)
    return dist.PrefixStore(f"attempt-{os.environ['TORCHELASTIC_RESTART_COUNT']}", store)


@dataclass
class Processes:
    """This process's rank, the number of processes and its device index on its node."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @classmethod
    def start(cls, device_type: str) -> "Processes":
        """Join the process group ``torchrun``'s environment describes (NCCL for ``cuda``, else gloo)."""
        if int(os.environ.get("WORLD_SIZE", "1")) == 1:
            return cls()
        if not dist.is_initialized():
            backend = "nccl" if device_type == "cuda" else "gloo"
            if restarted() and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
                dist.init_process_group(backend, store=_attempt_store(), rank=int(os.environ["RANK"]),
                                        world_size=int(os.environ["WORLD_SIZE"]))
            else:
                dist.init_process_group(backend=backend)
        return cls(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))

    def device(self, device_type: str) -> torch.device:
        """On CUDA, the GPU of this process's local rank, made current."""
        if device_type != "cuda":
            return torch.device(device_type)
        device = torch.device("cuda", self.local_rank)
        torch.cuda.set_device(device)
        return device

    def stop(self) -> None:
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()

    def mean(self, values: torch.Tensor) -> torch.Tensor:
        if not self.distributed:
            return values
        values = values.clone()
        dist.all_reduce(values)
        return values / self.world_size

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def gather(self, obj) -> list:
        if not self.distributed:
            return [obj]
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, obj)
        return gathered
