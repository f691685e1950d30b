"""Cost of profiling every block relative to a plain forward pass of the same batch.

    python benchmarks/bench_probe.py [--batch 16] [--img-size 224] [--repeats 5] [--device cpu]

Prints and writes (to benchmarks/results/bench_probe.json) the ratio
time(profile_model on one batch) / time(model.forward_features on the same batch),
both timed in alternation in one run. Target: <= 1.15 for ViT-S on CPU.
"""
from __future__ import annotations

import argparse

import torch

from common import interleaved_medians, machine, write_json
from ib_tutorial.models import vit_small
from ib_tutorial.block_profile import profile_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--img-size", type=int, default=224)
    parser.add_argument("--patch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", default="all")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default="benchmarks/results/bench_probe.json")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device(args.device)
    model = vit_small(args.img_size, args.patch_size).to(device).eval()
    images = torch.randn(args.batch, 3, args.img_size, args.img_size, device=device)

    def forward():
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            model.forward_features(images)
        if device.type == "cuda":
            torch.cuda.synchronize()

    def profile():
        profile_model(model, images, tokens=args.tokens, progress=False)
        if device.type == "cuda":
            torch.cuda.synchronize()

    medians = interleaved_medians({"forward": forward, "profile": profile}, args.repeats)
    ratio = medians["profile"] / medians["forward"]
    print(f"forward {medians['forward']:.3f} s, profile {medians['profile']:.3f} s, ratio {ratio:.3f} (target <= 1.15)")
    write_json(args.out, {"benchmark": "probe_overhead", "args": vars(args), "seconds": medians, "ratio": ratio, "machine": machine()})


if __name__ == "__main__":
    main()
