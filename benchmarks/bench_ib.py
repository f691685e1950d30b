"""Speed of the Information Bottleneck toy, and the two choices that make it fast on a CPU.

    python benchmarks/bench_ib.py [--repeats 5]

Prints and writes (to benchmarks/results/bench_ib.json), all timed in alternation in one run:

- throughput of the package: training epochs per second (full batch and batches of 256),
  and seconds per layer and epoch for the binning and KDE estimators on a 10-unit layer;
- threads: one optimisation step of the network with 2 threads over 1 thread (the package
  trains and runs the KDE on one thread);
- denormals: exp of pairwise exponents clamped at -80 over unclamped (the KDE clamps).
"""
from __future__ import annotations

import argparse
import dataclasses

import torch
import torch.nn.functional as F
from common import interleaved_medians, machine, write_json

from ib_tutorial.machine import keep_freed_memory
from ib_tutorial.ib import (
    InformationNetwork,
    binned_information,
    kde_information,
    toy_task,
    train_information_network,
)
from ib_tutorial.presets import get_preset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/bench_ib.json")
    args = parser.parse_args()
    keep_freed_memory()  # as the command line does

    task = toy_task()
    x_train, y_train = task.train
    settings = get_preset("ci").ib
    full_batch = dataclasses.replace(settings, epochs=100, batch_size=None, logged_epochs=2)
    mini_batch = dataclasses.replace(settings, epochs=10, batch_size=256, logged_epochs=2)
    network = InformationNetwork("tanh", torch.Generator().manual_seed(0))
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-3, fused=True)
    with torch.no_grad():
        layer = network.layer_outputs(x_train)[0] * 3  # a 10-unit layer, partly saturated
    exponents = -2000 * torch.rand(512, len(y_train))

    def step(threads: int):
        def run():
            torch.set_num_threads(threads)
            for _ in range(20):
                loss = F.cross_entropy(network(x_train), y_train)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()

        return run

    threads_before = torch.get_num_threads()
    medians = interleaved_medians(
        {
            "train_full_batch_100_epochs": lambda: train_information_network("tanh", full_batch, task, progress=False),
            "train_batch256_10_epochs": lambda: train_information_network("tanh", mini_batch, task, progress=False),
            "binning_one_layer": lambda: binned_information(layer, y_train),
            "kde_one_layer": lambda: kde_information(layer, y_train),
            "step_x20_1_thread": step(1),
            "step_x20_2_threads": step(2),
            "exp_clamped": lambda: exponents.clamp(min=-80.0).exp_(),
            "exp_unclamped": lambda: exponents.clone().exp_(),
        },
        args.repeats,
    )
    torch.set_num_threads(threads_before)
    result = {
        "full_batch_epochs_per_s": 100 / medians["train_full_batch_100_epochs"],
        "batch256_epochs_per_s": 10 / medians["train_batch256_10_epochs"],
        "binning_s_per_layer_epoch": medians["binning_one_layer"],
        "kde_s_per_layer_epoch": medians["kde_one_layer"],
        "two_threads_over_one_thread": medians["step_x20_2_threads"] / medians["step_x20_1_thread"],
        "unclamped_over_clamped_exp": medians["exp_unclamped"] / medians["exp_clamped"],
    }
    for name, value in result.items():
        print(f"{name:30s} {value:10.4g}")
    write_json(args.out, {"benchmark": "ib_toy", "args": vars(args), "seconds": medians, "result": result, "machine": machine()})


if __name__ == "__main__":
    main()
