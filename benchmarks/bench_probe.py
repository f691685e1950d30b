"""Cost of profiling every block relative to a plain forward pass of the same images.

    python benchmarks/bench_probe.py [--batch 16] [--batches 1] [--img-size 224] [--repeats 9] [--device cpu]

Times ``model.forward_features`` and ``profile_model`` (the same forward, plus a
covariance accumulator per block and, once per profile, one eigendecomposition per
block) on the same images, alternately: forward first in even repeats, profile first in
odd ones. Prints and writes (to benchmarks/results/bench_probe.json) the ratio
profile / forward of each repeat's pair, as median, quartiles and range, with the
number of repeats, the load average before and after, and torch's thread count: the
CPU may be shared. With ``--batches`` above 1 the images stream through as that many
batches, as a real profile does, so the once-per-profile cost is spread over them.

The once-per-profile part (an eigendecomposition per block) is also timed on its own,
in the same alternation, so the streaming ratio (profile less that part, over forward)
says what each further batch costs: the cost of a profile of many images.
Target: median ratio <= 1.05 for ViT-S on CPU.
"""
from __future__ import annotations

import argparse

import torch
from common import interleaved_times, load_average, machine, spread, write_json

from ib_tutorial.machine import keep_freed_memory
from ib_tutorial.measure.block_profile import profile_model
from ib_tutorial.measure.covariance import CovarianceAccumulator
from ib_tutorial.models import vit_small

TARGET = 1.05


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16, help="images per batch")
    parser.add_argument("--batches", type=int, default=1, help="batches per timed run")
    parser.add_argument("--img-size", type=int, default=224)
    parser.add_argument("--patch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--tokens", default="all")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default="benchmarks/results/bench_probe.json")
    args = parser.parse_args()
    keep_freed_memory()  # as the command line does

    torch.manual_seed(0)
    device = torch.device(args.device)
    model = vit_small(args.img_size, args.patch_size).to(device).eval()
    batches = [torch.randn(args.batch, 3, args.img_size, args.img_size, device=device) for _ in range(args.batches)]

    def forward():
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            for images in batches:
                model.forward_features(images)
        if device.type == "cuda":
            torch.cuda.synchronize()

    def profile():
        profile_model(model, batches, tokens=args.tokens, progress=False)
        if device.type == "cuda":
            torch.cuda.synchronize()

    # One accumulator per block, as a profile ends with: the eigendecompositions alone.
    accumulators = [CovarianceAccumulator(model.embed_dim) for _ in model.blocks]
    for accumulator in accumulators:
        accumulator.update(torch.randn(4 * model.embed_dim, model.embed_dim))

    def spectra():
        for accumulator in accumulators:
            accumulator.spectrum()

    load_before = load_average()
    times = interleaved_times({"forward": forward, "profile": profile, "spectra": spectra}, args.repeats)
    load_after = load_average()
    ratios = [p / f for f, p in zip(times["forward"], times["profile"])]
    streaming_ratios = [(p - e) / f for f, p, e in zip(times["forward"], times["profile"], times["spectra"])]
    ratio, streaming = spread(ratios), spread(streaming_ratios)
    seconds = {name: spread(values) for name, values in times.items()}
    threads = torch.get_num_threads()
    print(
        f"forward {seconds['forward']['median']:.3f} s, profile {seconds['profile']['median']:.3f} s (medians); "
        f"ratio median {ratio['median']:.3f}, quartiles {ratio['q1']:.3f}-{ratio['q3']:.3f}, "
        f"range {ratio['min']:.3f}-{ratio['max']:.3f} over {args.repeats} repeats (target <= {TARGET})\n"
        f"once per profile, the {len(accumulators)} eigendecompositions: {seconds['spectra']['median'] * 1e3:.0f} ms; "
        f"without them (each further batch) the ratio is {streaming['median']:.3f}, "
        f"quartiles {streaming['q1']:.3f}-{streaming['q3']:.3f}\n"
        f"torch threads {threads}, load average (1, 5, 15 min) before {load_before}, after {load_after}"
    )
    write_json(args.out, {
        "benchmark": "probe_overhead",
        "args": vars(args),
        "repeats": args.repeats,
        "ratio": ratio,
        "ratios": ratios,
        "streaming_ratio": streaming,
        "streaming_ratios": streaming_ratios,
        "seconds": seconds,
        "target": TARGET,
        "torch_threads": threads,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "machine": machine(),
    })


if __name__ == "__main__":
    main()
