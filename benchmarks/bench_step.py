"""The DINO step, one change at a time, side by side: images per second and the share of the
device's peak it uses (model-FLOP utilisation, MFU).

    python benchmarks/bench_step.py                      # the `paper` configuration of Tiny ImageNet (one GPU)
    python benchmarks/bench_step.py --tiny               # the same variants with 2-image batches (a CPU check)

Each variant is the training loop's own step (:class:`ib_tutorial.training.dino.DINOTraining`:
teacher forward, student forward, loss and centre, backward, clipping, AdamW, EMA) on random
views of the configured shapes, with one change against ``eager``:

- ``batch_128``: batches of 128 instead of the recipe's 256 (the device plan's batch);
- ``fused_adamw``: AdamW's fused kernel (one launch for every parameter);
- ``compiled``: student and teacher through ``torch.compile`` (timed after its compilation).

The variants are timed in turn, so that the machine's drift hits them alike
(:func:`common.interleaved_medians`). The FLOPs of a step are the package's own count
(``DINOTraining.image_flops``); MFU divides the rate they imply by the device's dense peak in
the step's precision (:data:`PEAKS`; none on a CPU). Writes ``benchmarks/results/bench_step_<device>.json``.
"""
from __future__ import annotations

import argparse

import torch
from bench_train import make_step
from common import interleaved_medians, machine, write_json

from ib_tutorial.presets import get_preset, resolve_device
from ib_tutorial.training.objective import parameter_groups
from ib_tutorial.training.dino import DINOTraining
from ib_tutorial.training.run_config import RunConfig

# Dense bf16 peaks (FLOP/s) from the makers' data sheets, by the name CUDA reports.
PEAKS = {"NVIDIA H200": 989e12, "NVIDIA H100 80GB HBM3": 989e12, "NVIDIA A100-SXM4-80GB": 312e12}


def fused_adamw(state: DINOTraining) -> None:
    state.optimizer = torch.optim.AdamW(parameter_groups(state.student_module), fused=True)


def compiled(state: DINOTraining) -> None:
    state.student, state.teacher = torch.compile(state.student), torch.compile(state.teacher)


VARIANTS = {"eager": ({}, None), "batch_128": ({"batch_size": 128}, None), "fused_adamw": ({}, fused_adamw),
            "compiled": ({}, compiled)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="tiny-imagenet")
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--tiny", action="store_true", help="2-image batches, one timed step, no compilation")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.manual_seed(0)
    preset = get_preset(args.preset)
    device = resolve_device(preset)
    variants = {name: v for name, v in VARIANTS.items() if not (args.tiny and name == "compiled")}
    steps, configs = {}, {}
    for name, (settings, change) in variants.items():
        overrides = {**settings, **({"batch_size": 2} if args.tiny else {})}
        configs[name] = RunConfig.resolve(args.dataset, preset, overrides)
        steps[name] = make_step(configs[name], device, change)
    seconds = interleaved_medians(steps, repeats=1 if args.tiny else args.repeats, warmup=2)
    peak = PEAKS.get(torch.cuda.get_device_name(device)) if device.type == "cuda" else None
    results = {}
    for name, config in configs.items():
        rate = config.train.batch_size / seconds[name]
        flops = DINOTraining.image_flops(config.view, config.train)
        results[name] = {"batch": config.train.batch_size, "precision": config.precision, "images_per_s": rate,
                         "tflop_per_s": rate * flops / 1e12, "mfu": rate * flops / peak if peak else None}
        print(f"{name:12s} batch {config.train.batch_size:4d}: {rate:9.1f} images/s, {rate * flops / 1e12:7.2f} TFLOP/s"
              + (f", MFU {results[name]['mfu']:.1%}" if peak else ""))
    out = args.out or f"benchmarks/results/bench_step_{device.type}{'_tiny' if args.tiny else ''}.json"
    write_json(out, {"benchmark": "dino_step_variants", "dataset": args.dataset, "preset": preset.name,
                     "device": str(device), "peak_flops": peak, "args": vars(args), "results": results,
                     "machine": machine()})


if __name__ == "__main__":
    main()
