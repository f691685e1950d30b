"""How many CPU threads PyTorch should use on a machine that other work shares.

PyTorch starts one thread per core. When another process keeps one of those cores busy,
every parallel operation waits for the thread that shares a core with it, and the many
small operations of a chapter run several times slower than on the free cores alone
(``benchmarks/bench_chapters.py --busy``: the EED chapter took 20 s on two idle cores and
201 s beside one busy process). A chapter therefore counts, when it starts, the cores that
other processes keep busy (niced background jobs yield theirs), and gives PyTorch the rest.
"""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

import torch

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
