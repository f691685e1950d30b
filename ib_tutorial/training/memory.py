"""What to say when a training step runs out of GPU memory: the batch that failed and
the largest that would fit, estimated from what the step had allocated and what it asked
for, instead of PyTorch's traceback."""
from __future__ import annotations

import re

import torch


class TrainingOutOfMemory(RuntimeError):
    """A training step ran out of memory; ``str()`` names the batch and what to try."""


def largest_batch(batch: int, fixed: int, peak: int, tried: int, total: int) -> int:
    """The largest batch whose step would fit in ``total`` bytes, if the step's memory
    grows in proportion to the batch above what the weights and optimiser hold (``fixed``):
    the failed step held ``peak`` and asked for ``tried`` more (an estimate: it needed at
    least that much)."""
    per_image = max(1, peak + tried - fixed) / batch
    return max(0, int((total - fixed) // per_image))


def tried_bytes(error: BaseException) -> int:
    """The allocation PyTorch's message says failed ("Tried to allocate 2.00 GiB"), 0 if none."""
    found = re.search(r"Tried to allocate ([\d.]+) (B|KiB|MiB|GiB|TiB)", str(error))
    if not found:
        return 0
    return int(float(found.group(1)) * 1024 ** ["B", "KiB", "MiB", "GiB", "TiB"].index(found.group(2)))


def out_of_memory(error: BaseException, batch: int, world_size: int, device: torch.device, fixed: int) -> TrainingOutOfMemory:
    """The error to raise in place of ``error`` for a step of ``batch`` images per process."""
    total = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    if total:
        fits = largest_batch(batch, fixed, peak, tried_bytes(error), total)
        estimate = (f" About {fits} images per process would fit in its {total / 2**30:.0f} GiB (an estimate from the "
                    f"{peak / 2**30:.1f} GiB the step held and the {tried_bytes(error) / 2**30:.2f} GiB it asked for).")
    else:
        estimate = ""
    global_batch = batch * world_size
    return TrainingOutOfMemory(
        f"{device} ran out of memory in a training step of {batch} images per process (global batch {global_batch})."
        f"{estimate} Lower --batch-size (the global batch; e.g. --batch-size {max(world_size, global_batch // 2)}), "
        "or use more processes (torchrun), then start again or --resume from the last checkpoint.")
