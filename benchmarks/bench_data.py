"""Synthetic images per second on one core, for each synthetic world.

    python benchmarks/bench_data.py [--img-size 32] [--images 2000] [--repeats 5]

Times ``dataset[index]`` (render + PIL image, what a DataLoader worker does) over
``--images`` consecutive indices for ``synthetic-objects``, ``synthetic-textures``
and ``synthetic-mix`` (texture_weight 0.5, which renders both layers), interleaved in
one run, on one thread. Reports images per second of CPU time (what one core
delivers, whatever else the machine runs) and of wall time (what this run got), with
the load average. Writes benchmarks/results/bench_data.json.
Target: >= 5,000 images per CPU second at 32 px for each pure world.
"""
from __future__ import annotations

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"  # one core: set before numpy loads its BLAS

import argparse
import time

import torch
from common import interleaved_medians, machine, write_json

from ib_tutorial.machine import keep_freed_memory
from ib_tutorial.data import get_dataset

TARGET = 5_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--img-size", type=int, default=32)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/bench_data.json")
    args = parser.parse_args()
    keep_freed_memory()  # as the command line does
    torch.set_num_threads(1)

    worlds = {
        name: get_dataset(name, "train", img_size=args.img_size, size=args.images)
        for name in ("synthetic-objects", "synthetic-textures", "synthetic-mix")
    }

    def render_all(dataset):
        return lambda: [dataset[index] for index in range(len(dataset))]

    candidates = {name: render_all(dataset) for name, dataset in worlds.items()}
    load_before = os.getloadavg()
    seconds = {
        "cpu": interleaved_medians(candidates, args.repeats, clock=time.process_time),
        "wall": interleaved_medians(candidates, args.repeats),
    }
    rates = {clock: {name: args.images / s for name, s in medians.items()} for clock, medians in seconds.items()}
    load = [round((a + b) / 2, 2) for a, b in zip(load_before, os.getloadavg())]
    for name in worlds:
        print(f"{name:20s} {rates['cpu'][name]:7.0f} images per CPU second, {rates['wall'][name]:7.0f} per wall second"
              f" at {args.img_size} px on one thread")
    print(f"target >= {TARGET:,} per CPU second for the pure worlds; load average {load[0]} on {os.cpu_count()} CPUs")
    write_json(args.out, {"benchmark": "synthetic_images_per_second", "args": vars(args), "seconds": seconds,
                          "images_per_second": rates, "load_average_1_5_15_min": load, "machine": machine()})


if __name__ == "__main__":
    main()
