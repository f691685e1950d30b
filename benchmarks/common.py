"""Shared helpers for the benchmarks: interleaved timing and a JSON record of the machine."""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ib_tutorial.machine import keep_freed_memory


def interleaved_times(
    candidates: dict[str, Callable[[], object]],
    repeats: int,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Every repeat's time (s, wall clock unless ``clock`` says otherwise, e.g.
    ``time.process_time`` for CPU time) of each candidate. Within a repeat the candidates
    run one after the other, so that machine noise hits all of them alike, in reversed
    order every other repeat, so that none always runs first."""
    for _ in range(warmup):
        for run in candidates.values():
            run()
    times: dict[str, list[float]] = {name: [] for name in candidates}
    order = list(candidates.items())
    for repeat in range(repeats):
        for name, run in order if repeat % 2 == 0 else reversed(order):
            start = clock()
            run()
            times[name].append(clock() - start)
    return times


def interleaved_medians(
    candidates: dict[str, Callable[[], object]],
    repeats: int,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median of :func:`interleaved_times` for each candidate."""
    times = interleaved_times(candidates, repeats, warmup, clock)
    return {name: statistics.median(values) for name, values in times.items()}


def spread(values: list[float]) -> dict[str, float]:
    """Median, quartiles and range of ``values``."""
    q1, _, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return {"median": statistics.median(values), "q1": q1, "q3": q3, "min": min(values), "max": max(values)}


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages: how busy the machine was around a timing."""
    return [round(load, 2) for load in os.getloadavg()]


def machine() -> dict:
    """What the timings depend on, recorded beside them. A benchmark calls
    :func:`~ib_tutorial.machine.keep_freed_memory` first, as the command line does."""
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(),
        "keeps_freed_memory": keep_freed_memory(),
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
    }


def write_json(path: str | Path, record: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
