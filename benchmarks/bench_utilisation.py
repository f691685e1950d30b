"""Training utilisation: how much of the machine's own matrix-multiply peak one DINO step
uses, and where the rest of the time goes.

    python benchmarks/bench_utilisation.py                      # the ci and laptop tiers on this CPU
    python benchmarks/bench_utilisation.py --presets quick      # on a GPU: the quick tier's datasets

1. **Peak**: FLOP/s of one large ``torch.mm`` (4096 x 4096) in the step's precision on the
   same threads, the best case of the machine's arithmetic, timed in alternation with the
   step (a shared machine's speed drifts: a peak timed minutes apart from the step would
   misstate the fraction).
2. **Work**: the FLOPs of one training step (student forward and backward on every crop,
   teacher forward on the two global crops, the head), counted by
   ``torch.utils.flop_counter`` (matrix products and attention; elementwise work is not
   counted, which is the usual convention for model FLOPs).
3. **Achieved**: those FLOPs over the step's measured time (``bench_train.make_step``,
   random views of the configured shapes), as GFLOP/s and as a fraction of the peak; and
   the same with the augmentation a CPU tier runs in the training process (one loader
   worker's throughput, ``bench_train.augmentation_images_per_second``).
4. **Where the time goes**: ``torch.profiler``'s self time of the step's operators, grouped
   into matrix products, attention, normalisation and activations, elementwise arithmetic,
   the optimiser, and the rest.

Writes ``benchmarks/results/bench_utilisation_<device>.json``.
"""
from __future__ import annotations

import argparse
import time

import torch
from bench_train import augmentation_images_per_second, make_step
from common import interleaved_medians, machine, write_json
from torch.utils.flop_counter import FlopCounterMode

from ib_tutorial.machine import keep_freed_memory
from ib_tutorial.data import DATASETS
from ib_tutorial.presets import PRESETS, get_preset, resolve_device
from ib_tutorial.training.run_config import RunConfig

# Operator name fragments -> the group its time is counted in (first match wins).
OPERATOR_GROUPS = (
    ("matrix products", ("mm", "matmul", "linear", "addmm", "bmm", "baddbmm", "conv")),
    ("attention", ("attention", "softmax")),
    ("normalisation and activations", ("norm", "gelu", "erf")),
    ("optimiser", ("foreach", "adam", "lerp", "addcdiv", "addcmul", "sqrt", "clamp")),
    ("elementwise", ("add", "mul", "sub", "div", "copy", "fill", "zero", "cat", "sum", "mean", "exp", "log")),
)


def matmul_product(device: torch.device, dtype: torch.dtype = torch.float32, size: int = 4096):
    """One ``size x size`` matrix product (2 size^3 FLOPs) as a callable, and its FLOPs."""
    a, b = (torch.randn(size, size, device=device, dtype=dtype) for _ in range(2))

    def product():
        a @ b
        if device.type == "cuda":
            torch.cuda.synchronize()

    return product, 2 * size**3


def step_flops(step) -> int:
    """FLOPs of one call of ``step``, as ``FlopCounterMode`` counts them."""
    with FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops()


def time_by_group(step, device: torch.device, steps: int = 3) -> dict[str, float]:
    """Seconds per step spent in each operator group (self time, so nothing is counted twice)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profiler:
        for _ in range(steps):
            step()
    groups: dict[str, float] = {name: 0.0 for name, _ in OPERATOR_GROUPS} | {"other": 0.0}
    for event in profiler.key_averages():
        self_us = event.self_device_time_total if device.type == "cuda" else event.self_cpu_time_total
        name = event.key.lower().removeprefix("aten::")
        group = next((g for g, fragments in OPERATOR_GROUPS if any(f in name for f in fragments)), "other")
        groups[group] += self_us / 1e6 / steps
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="+", default=["ci", "laptop"], choices=list(PRESETS))
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: PyTorch's)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    keep_freed_memory()  # as the command line does
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = resolve_device(get_preset(args.presets[0]))

    results = {}
    for name in args.presets:
        preset = get_preset(name)
        dataset = "synthetic-objects" if preset.device == "cpu" else "tiny-imagenet"
        config = RunConfig.resolve(dataset, preset, {})
        step = make_step(config, device)
        step()  # warm-up
        flops = step_flops(step)
        product, product_flops = matmul_product(device, torch.bfloat16 if config.precision == "bf16" else torch.float32)
        medians = interleaved_medians({"step": step, "peak": product}, repeats=args.repeats)
        seconds, peak = medians["step"], product_flops / medians["peak"]
        batch = config.train.batch_size
        augmentation = augmentation_images_per_second(config.view, config.train.local_crops_number,
                                                      DATASETS[dataset].native_size, count=100, device=device,
                                                      batch=batch, repeats=3)["ib_tutorial"]
        # A CPU tier augments in the training process: every image costs its augmentation too.
        loop_seconds = seconds + (batch / augmentation if config.train.num_workers == 0 else 0.0)
        started = time.perf_counter()
        groups = time_by_group(step, device)
        record = {
            "dataset": dataset, "arch": config.train.arch, "batch": batch, "precision": config.precision,
            "img_size": config.view.img_size, "patch_size": config.view.patch_size,
            "local_crops": config.train.local_crops_number, "gflop_per_step": flops / 1e9,
            "matmul_peak_gflop_s": peak / 1e9,
            "seconds_per_step": seconds, "images_per_s": batch / seconds,
            "achieved_gflop_s": flops / seconds / 1e9, "fraction_of_peak": flops / seconds / peak,
            "augmentation_images_per_s": augmentation, "images_per_s_with_augmentation": batch / loop_seconds,
            "fraction_of_peak_with_augmentation": flops / loop_seconds / peak,
            "seconds_per_step_by_group": groups, "profiled_seconds": time.perf_counter() - started,
        }
        results[name] = record
        shares = ", ".join(f"{g} {100 * s / sum(groups.values()):.0f} %" for g, s in groups.items() if s > 0)
        print(f"{name:7s} {config.train.arch} batch {batch}: {flops / 1e9:.1f} GFLOP/step, {batch / seconds:.1f} images/s, "
              f"{flops / seconds / 1e9:.1f} GFLOP/s = {100 * flops / seconds / peak:.0f} % of the matmul peak "
              f"({peak / 1e9:.0f} GFLOP/s, timed in turn with the step) "
              f"({100 * flops / loop_seconds / peak:.0f} % with augmentation in the loop); time: {shares}")

    out = args.out or f"benchmarks/results/bench_utilisation_{device.type}.json"
    write_json(out, {"benchmark": "training_utilisation", "args": vars(args), "device": str(device),
                     "results": results, "machine": machine()})


if __name__ == "__main__":
    main()
