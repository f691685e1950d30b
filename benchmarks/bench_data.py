"""Synthetic images per second on one core, for each synthetic world.

    python benchmarks/bench_data.py [--img-size 32] [--images 2000] [--repeats 3]

Times ``dataset[index]`` (render + PIL image, what a DataLoader worker does) over
``--images`` consecutive indices for ``synthetic-objects``, ``synthetic-textures``
and ``synthetic-mix`` (texture_weight 0.5, which renders both layers), interleaved in
one run with ``torch.set_num_threads(1)``. Writes benchmarks/results/bench_data.json.
Target: >= 5,000 images/s at 32 px for each pure world.
"""
from __future__ import annotations

import argparse

import torch

from common import interleaved_medians, machine, write_json
from ib_tutorial.data import get_dataset

TARGET = 5_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--img-size", type=int, default=32)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results/bench_data.json")
    args = parser.parse_args()
    torch.set_num_threads(1)

    worlds = {
        name: get_dataset(name, "train", img_size=args.img_size, size=args.images)
        for name in ("synthetic-objects", "synthetic-textures", "synthetic-mix")
    }

    def render_all(dataset):
        return lambda: [dataset[index] for index in range(len(dataset))]

    medians = interleaved_medians({name: render_all(dataset) for name, dataset in worlds.items()}, args.repeats)
    rates = {name: args.images / seconds for name, seconds in medians.items()}
    for name, rate in rates.items():
        print(f"{name:20s} {rate:8.0f} images/s at {args.img_size} px on one core (target >= {TARGET:,} for the pure worlds)")
    write_json(args.out, {"benchmark": "synthetic_images_per_second", "args": vars(args), "seconds": medians,
                          "images_per_second": rates, "machine": machine()})


if __name__ == "__main__":
    main()
