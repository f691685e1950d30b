"""What keeping freed memory (``ib_tutorial.machine.keep_freed_memory``) saves a CPU
forward pass.

    python benchmarks/bench_allocator.py [--repeats 15] [--batch 16] [--img-size 224]

The allocator's policy is set once per process, so the two cases live in two worker
processes, one keeping freed memory and one with the C library's default, each holding
the same ViT-S and the same batch. They take turns, one forward pass at a time
(``model.forward_features``, no gradients; kept first in even repeats, default first in odd
ones), so that drifts in the machine's speed hit both alike. Each pass reports its wall
time, user and system CPU time and minor page faults. Prints and writes (to
benchmarks/results/bench_allocator.json) the medians of each case and the ratio default /
kept of each repeat's wall times, as median, quartiles and range.
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

from ib_tutorial.machine import keep_freed_memory
from ib_tutorial.models import vit_small

CASES = ("kept", "default")


def serve(case: str, batch: int, img_size: int) -> None:
    """A worker: one forward pass per line read, its figures written back as one JSON line."""
    kept = keep_freed_memory() if case == "kept" else False
    torch.manual_seed(0)
    model = vit_small(img_size, 16).eval()
    images = torch.randn(batch, 3, img_size, img_size)
    for _ in sys.stdin:
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        with torch.no_grad():
            model.forward_features(images)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"keeps_freed_memory": kept, "wall_s": wall, "user_s": after.ru_utime - before.ru_utime,
                          "system_s": after.ru_stime - before.ru_stime,
                          "minor_faults": after.ru_minflt - before.ru_minflt}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15, help="passes per case, after 2 warm-up passes each")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--img-size", type=int, default=224)
    parser.add_argument("--worker", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="benchmarks/results/bench_allocator.json")
    args = parser.parse_args()
    if args.worker:
        serve(args.worker, args.batch, args.img_size)
        return

    workers = {case: subprocess.Popen([sys.executable, __file__, "--worker", case, "--batch", str(args.batch),
                                       "--img-size", str(args.img_size)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for case in CASES}

    def one_pass(case: str) -> dict:
        worker = workers[case]
        worker.stdin.write("pass\n")
        worker.stdin.flush()
        line = worker.stdout.readline()
        if not line:
            raise RuntimeError(f"the {case!r} worker stopped; its error is above")
        return json.loads(line)

    load_before = load_average()
    passes: dict[str, list[dict]] = {case: [] for case in CASES}
    try:
        for repeat in range(2 + args.repeats):
            for case in CASES if repeat % 2 == 0 else reversed(CASES):
                figures = one_pass(case)
                if repeat >= 2:
                    passes[case].append(figures)
    finally:
        for worker in workers.values():
            worker.stdin.close()
            worker.wait()
    load_after = load_average()

    medians = {case: {key: statistics.median(p[key] for p in records) for key in ("wall_s", "user_s", "system_s", "minor_faults")}
               for case, records in passes.items()}
    ratios = [d["wall_s"] / k["wall_s"] for k, d in zip(passes["kept"], passes["default"])]
    ratio = spread(ratios)
    for case, figures in medians.items():
        print(f"{case:7s}: {figures['wall_s'] * 1e3:.0f} ms a pass, user {figures['user_s'] * 1e3:.0f} ms, "
              f"system {figures['system_s'] * 1e3:.0f} ms, {figures['minor_faults']:.0f} page faults (medians)")
    print(f"wall time, default / kept: median {ratio['median']:.3f}, quartiles {ratio['q1']:.3f}-{ratio['q3']:.3f}, "
          f"range {ratio['min']:.3f}-{ratio['max']:.3f} over {args.repeats} repeats; "
          f"torch threads {torch.get_num_threads()}, load average before {load_before}, after {load_after}")
    write_json(args.out, {
        "benchmark": "allocator", "args": {k: v for k, v in vars(args).items() if k != "worker"},
        "medians": medians, "passes": passes, "wall_ratio_default_to_kept": ratio, "wall_ratios": ratios,
        "load_average_before": load_before, "load_average_after": load_after, "machine": machine(),
    })


if __name__ == "__main__":
    main()
