"""How a run uses the machine it runs on: loader workers, CPU threads, freed memory, precision.

PyTorch starts one thread per core, and when another process keeps one busy every parallel
operation waits for it (``benchmarks/bench_chapters.py --busy``: the EED chapter took 20 s on
two idle cores, 201 s beside one busy process), so a chapter takes only the free cores.
CUDA runs forward passes under autocast; measurements are accumulated in float64.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import math
import os
import signal
import time
from pathlib import Path

import torch

from .command_line import argument


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def ignore_stop_signals(worker_id: int) -> None:
    """A ``DataLoader`` ``worker_init_fn``: the worker ignores SIGINT and SIGTERM, so that a
    Ctrl-C reaching the process group does not fail the step before the run checkpoints
    (:mod:`ib_tutorial.training.loop`); workers need no seeding of their own."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)


PROC_STAT = Path("/proc/stat")
#: PyTorch's own choice, read once: what a later :func:`use_free_cores` may give back.
DEFAULT_THREADS = torch.get_num_threads()
#: The share of the sampled window a core must be busy to count as taken (a busy process
#: reads about 1; a kernel starting or a notebook client polling, a few tenths).
TAKEN = 0.75


def busy_cores(seconds: float = 0.5, stat: Path = PROC_STAT) -> float | None:
    """How many cores other (not niced) work kept busy over the next ``seconds``, from the
    kernel's CPU counters; None where there are none (not Linux)."""
    try:
        first = _cpu_times(stat)
        time.sleep(seconds)
        second = _cpu_times(stat)
    except (OSError, ValueError, IndexError):
        return None
    elapsed = [b - a for a, b in zip(first, second)]
    total = sum(elapsed)
    if total <= 0:
        return None
    # Idle, iowait and niced time are free: the scheduler takes niced cores back at once.
    free = elapsed[1] + elapsed[3] + elapsed[4]
    return (total - free) / total * (os.cpu_count() or 1)


def _cpu_times(stat: Path) -> list[int]:
    """The aggregate ``cpu`` line of ``/proc/stat``: user, nice, system, idle, iowait, ..."""
    fields = stat.read_text().splitlines()[0].split()
    if fields[0] != "cpu":
        raise ValueError(f"{stat} does not start with the aggregate cpu line")
    return [int(value) for value in fields[1:]]


def free_threads(busy: float | None, available: int) -> int:
    """The ``available`` threads less the cores other work takes (a fraction counts from
    :data:`TAKEN` on), at least one; all of them where ``busy`` is unknown."""
    if busy is None:
        return available
    return max(1, available - math.floor(busy + 1 - TAKEN))


def use_free_cores() -> tuple[int, float | None]:
    """Set PyTorch's CPU threads to :func:`free_threads`; returns them and the busy cores."""
    busy = busy_cores()
    threads = free_threads(busy, DEFAULT_THREADS)
    torch.set_num_threads(threads)
    return threads, busy


# mallopt(3) parameters, from glibc's malloc.h.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Blocks below this size come from the heap; the heap is trimmed only when this much lies free.
KEPT_BYTES = 1 << 30


@functools.cache
def keep_freed_memory() -> bool:
    """Ask glibc's ``malloc`` to keep freed blocks of up to 1 GiB for reuse (else every batch of a
    forward pass faults them in again: 8 to 13 % slower on 2 cores, ``benchmarks/bench_allocator.py``);
    False where the C library is not glibc. The command line calls it at start; a script itself."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, KEPT_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES))


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
    """The context a forward pass on ``device`` runs in: CUDA autocast for bf16/fp16, nothing for fp32."""
    dtype = AUTOCAST_DTYPES.get(resolve_precision(precision, device))
    return torch.autocast("cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()
