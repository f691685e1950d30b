"""What keeping freed memory (``ib_tutorial.allocator.keep_freed_memory``) saves a CPU
forward pass.

    python benchmarks/bench_allocator.py [--pairs 4] [--passes 10] [--batch 16] [--img-size 224]

The allocator's policy is set once per process, so the two cases run in separate
processes, in alternation (kept first in even pairs, the C library's default first in odd
ones): each times ``--passes`` forward passes of ViT-S (``model.forward_features``, no
gradients) on one batch and reports the median wall time, user and system CPU time and
minor page faults per pass, leaving out the first two. Prints and writes (to
benchmarks/results/bench_allocator.json) every process's figures and, per pair, the ratio
default / kept of the wall time.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import torch

from common import load_average, machine, spread, write_json
from ib_tutorial.allocator import keep_freed_memory
from ib_tutorial.models import vit_small

WARMUP_PASSES = 2


def measure(keep: bool, passes: int, batch: int, img_size: int) -> dict:
    """Median per-pass figures of ``passes`` forward passes in this process."""
    kept = keep_freed_memory() if keep else False
    torch.manual_seed(0)
    model = vit_small(img_size, 16).eval()
    images = torch.randn(batch, 3, img_size, img_size)
    wall, user, system, faults = [], [], [], []
    for _ in range(passes):
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        with torch.no_grad():
            model.forward_features(images)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_SELF)
        user.append(after.ru_utime - before.ru_utime)
        system.append(after.ru_stime - before.ru_stime)
        faults.append(after.ru_minflt - before.ru_minflt)

    def median(values):
        return statistics.median(values[WARMUP_PASSES:])

    return {"keeps_freed_memory": kept, "wall_s": median(wall), "user_s": median(user), "system_s": median(system),
            "minor_faults": median(faults)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=4, help="processes per case, alternating")
    parser.add_argument("--passes", type=int, default=10, help="forward passes per process")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--img-size", type=int, default=224)
    parser.add_argument("--child", choices=["kept", "default"], help=argparse.SUPPRESS)
    parser.add_argument("--out", default="benchmarks/results/bench_allocator.json")
    args = parser.parse_args()
    if args.passes <= WARMUP_PASSES:
        parser.error(f"--passes must be above the {WARMUP_PASSES} warm-up passes")
    if args.child:
        print(json.dumps(measure(args.child == "kept", args.passes, args.batch, args.img_size)))
        return

    def run(case: str) -> dict:
        command = [sys.executable, __file__, "--child", case, "--passes", str(args.passes),
                   "--batch", str(args.batch), "--img-size", str(args.img_size)]
        return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])

    load_before = load_average()
    processes: dict[str, list[dict]] = {"kept": [], "default": []}
    for pair in range(args.pairs):
        for case in ("kept", "default") if pair % 2 == 0 else ("default", "kept"):
            processes[case].append(run(case))
            figures = processes[case][-1]
            print(f"pair {pair + 1}, {case:7s}: {figures['wall_s'] * 1e3:.0f} ms a pass, user {figures['user_s'] * 1e3:.0f} ms, "
                  f"system {figures['system_s'] * 1e3:.0f} ms, {figures['minor_faults']:.0f} page faults", flush=True)
    load_after = load_average()
    ratios = [d["wall_s"] / k["wall_s"] for k, d in zip(processes["kept"], processes["default"])]
    ratio = spread(ratios)
    print(f"forward pass time, default / kept: median {ratio['median']:.3f}, range {ratio['min']:.3f}-{ratio['max']:.3f} "
          f"over {args.pairs} pairs; load average before {load_before}, after {load_after}")
    write_json(args.out, {
        "benchmark": "allocator", "args": {k: v for k, v in vars(args).items() if k != "child"},
        "processes": processes, "wall_ratio_default_to_kept": ratio, "wall_ratios": ratios,
        "load_average_before": load_before, "load_average_after": load_after, "machine": machine(),
    })


if __name__ == "__main__":
    main()
