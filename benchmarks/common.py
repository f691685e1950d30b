"""Shared helpers for the benchmarks: interleaved timing and a JSON record of the machine."""
from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch


def interleaved_medians(
    candidates: dict[str, Callable[[], object]],
    repeats: int,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median time (s, wall clock unless ``clock`` says otherwise, e.g.
    ``time.process_time`` for CPU time) of each candidate, run in turn within each
    repeat so that machine noise hits all of them alike."""
    for _ in range(warmup):
        for run in candidates.values():
            run()
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, run in candidates.items():
            start = clock()
            run()
            times[name].append(clock() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def machine() -> dict:
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
    }


def write_json(path: str | Path, record: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
