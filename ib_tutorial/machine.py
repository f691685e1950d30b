"""How a run uses the machine it runs on: loader workers, CPU threads, freed memory, numerical precision.

DataLoader worker processes leave stopping to the main process.

A SIGTERM or Ctrl-C sent to the process group reaches the loader's workers too, and PyTorch
then fails the step under way before the run can checkpoint (:mod:`ib_tutorial.training.loop`).
Workers that ignore both signals serve batches until the main process closes its loader.

How many CPU threads PyTorch should use on a machine that other work shares.

PyTorch starts one thread per core. When another process keeps one of those cores busy,
every parallel operation waits for the thread that shares a core with it, and the many
small operations of a chapter run several times slower than on the free cores alone
(``benchmarks/bench_chapters.py --busy``: the EED chapter took 20 s on two idle cores and
201 s beside one busy process). A chapter therefore counts, when it starts, the cores that
other processes keep busy (niced background jobs yield theirs), and gives PyTorch the rest.

Keep freed memory in the process, so that a forward pass does not pay for fresh pages.

glibc's ``malloc`` returns large freed blocks to the system, so every batch of a ViT forward
pass faults hundreds of MiB of pages in again, each zeroed by the kernel: on a 2-core CPU that
made a pass 8 to 13 % slower (benchmarks/bench_allocator.py). :func:`keep_freed_memory`
raises glibc's mmap and trim thresholds, so the next batch reuses the freed blocks and the
process keeps the memory of its largest batch. The command line calls it at start; a notebook
or script calls it itself. Elsewhere than glibc it does nothing.

Numerical precision of forward passes: one rule for training, k-NN and block profiles.

CUDA runs forward passes under autocast (bf16 where supported, else fp16); the CPU stays in
fp32. Measurements (covariances, eigenvalues) are accumulated in float64.
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
    """A ``worker_init_fn`` for every ``DataLoader`` with workers: SIGINT and SIGTERM are
    ignored in the worker (replacing PyTorch's handlers). Workers need no seeding of their own:
    the views are drawn from a generator seeded by (seed, epoch, image index)."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)


PROC_STAT = Path("/proc/stat")
#: PyTorch's own choice, read once: what a later :func:`use_free_cores` may give back.
DEFAULT_THREADS = torch.get_num_threads()
#: How busy a core must be, as a share of the sampled window, to count as taken: a process
#: that keeps a core busy reads about 1; a kernel starting or a notebook client polling, a
#: few tenths.
TAKEN = 0.75


def busy_cores(seconds: float = 0.5, stat: Path = PROC_STAT) -> float | None:
    """How many cores other (not niced) work kept busy over the next ``seconds``, from the
    kernel's CPU counters while this process sleeps; None where there are none (not Linux)."""
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
    # Idle and iowait are free; so is the time of niced processes (long background jobs), which
    # the scheduler takes back for a process at normal priority as soon as it needs a core.
    free = elapsed[1] + elapsed[3] + elapsed[4]
    return (total - free) / total * (os.cpu_count() or 1)


def _cpu_times(stat: Path) -> list[int]:
    """The aggregate ``cpu`` line of ``/proc/stat``: user, nice, system, idle, iowait, ..."""
    fields = stat.read_text().splitlines()[0].split()
    if fields[0] != "cpu":
        raise ValueError(f"{stat} does not start with the aggregate cpu line")
    return [int(value) for value in fields[1:]]


def free_threads(busy: float | None, available: int) -> int:
    """Threads for PyTorch: the ``available`` ones less the cores other work takes (a
    fraction of a core counts from :data:`TAKEN` on), at least one; all of them where
    ``busy`` is unknown."""
    if busy is None:
        return available
    return max(1, available - math.floor(busy + 1 - TAKEN))


def use_free_cores() -> tuple[int, float | None]:
    """Set PyTorch's CPU threads to the cores other work leaves free (:func:`free_threads`);
    returns the threads and the busy cores measured."""
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
    """Ask glibc's ``malloc`` to keep freed blocks of up to 1 GiB for reuse; True if it
    agreed, False where the C library is not glibc (macOS, Windows, musl). Idempotent."""
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
    """The context a forward pass on ``device`` runs in (see :func:`resolve_precision`):
    CUDA autocast for bf16/fp16, nothing for fp32."""
    dtype = AUTOCAST_DTYPES.get(resolve_precision(precision, device))
    return torch.autocast("cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()
