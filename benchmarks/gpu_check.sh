#!/usr/bin/env bash
# DINO on one CUDA GPU in under 8 minutes:
#   1. a short real training run through the command line (paper preset, bf16 autocast,
#      synthetic world: nothing to download), checked for bf16, a finite loss and a
#      loadable checkpoint;
#   2. the `quick` tier on the real Tiny ImageNet and DTD subsets (trained, profiled and
#      exported as a bundle), when a data root with them is at $IB_TUTORIAL_REAL_DATA
#      (default ../shared/data/real; skipped with a message otherwise);
#   3. training throughput of each dataset's `paper` configuration, with the projected
#      wall time of the full 100-epoch reproduction (benchmarks/bench_train.py --preset paper);
#   4. the cost of profiling every block beside a bf16 forward pass (bench_probe.py), and the
#      `quick` step's FLOP/s against the GPU's own matmul peak (bench_utilisation.py).
#
#     bash benchmarks/gpu_check.sh        # writes under benchmarks/results/, or under $OUT if set
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
results="${OUT:-benchmarks/results}"
run_dir="$(mktemp -d)/run"
start=$(date +%s)
mkdir -p "$results"

python -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU visible'; print(torch.cuda.get_device_name(), '| bf16 supported:', torch.cuda.is_bf16_supported())"

timeout 100 python -m ib_tutorial train --dataset synthetic-objects --preset paper --out "$run_dir" \
  --epochs 2 --warmup-epochs 1 --train-images 4096 --knn-train-images 2000 --knn-eval-images 1000 \
  --knn-every 1 --checkpoint-every 1 --log-every 4 --no-progress
cp "$run_dir/metrics.jsonl" "$results/gpu_check_metrics.jsonl"
python - "$run_dir" <<'PY'
import math, sys
from ib_tutorial.training.runs import RunDirectory
run = RunDirectory(sys.argv[1])
config, steps = run.read_config(), run.read_metrics("train")
assert config.precision == "bf16", f"expected bf16 autocast, got {config.precision}"
assert steps and all(math.isfinite(r["loss"]) for r in steps), "non-finite loss"
run.load_backbone(device="cuda")
knn = [round(r["top1"], 1) for r in run.read_metrics("knn")]
print(f"short run ok: {steps[-1]['step']} steps, loss {steps[0]['loss']:.3f} -> {steps[-1]['loss']:.3f}, "
      f"{steps[-1]['images_per_s']:.0f} images/s in the loop, k-NN top-1 by epoch {knn}")
PY
echo "== short run done after $(( $(date +%s) - start )) s"

real="${IB_TUTORIAL_REAL_DATA:-../shared/data/real}"
if [ -d "$real/tiny-imagenet-200" ] && [ -d "$real/dtd/images" ]; then
  timeout 170 python -m ib_tutorial reproduce --preset quick --root "$real" --datasets tiny-imagenet dtd:folder=dtd \
    --out "$(dirname "$run_dir")/quick-real" --no-progress --export "$results/quick-real"
  echo "== quick tier on real images done after $(( $(date +%s) - start )) s"
else
  echo "no real-image data root at $real (tiny-imagenet-200/ and dtd/images/); skipping the quick-tier runs"
fi

timeout 100 python benchmarks/bench_train.py --preset paper --repeats 3 --out "$results/bench_train_paper.json"
echo "== throughput done after $(( $(date +%s) - start )) s"

timeout 45 python benchmarks/bench_probe.py --device cuda --batch 64 --out "$results/bench_probe_cuda.json"
timeout 45 python benchmarks/bench_utilisation.py --presets quick --out "$results/bench_utilisation_cuda.json"
echo "== profiling overhead and utilisation done after $(( $(date +%s) - start )) s"
