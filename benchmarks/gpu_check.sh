#!/usr/bin/env bash
# The device plan, one command (benchmarks/gpu_plan.py says what it does):
#
#     python benchmarks/gpu_plan.py pack     # here, once: the subsets and wheels into .device/
#     bash benchmarks/gpu_check.sh           # on the GPU machine, carrying .device: at most 8 minutes
#
# It writes gpu-check-<n>-<part>.tar.gz (one a part, each complete on its own) and
# plan-<commit>.json under $OUT (default benchmarks/results/gpu); `tar xzf` the last archive
# in a checkout puts the bundle under results/gpu-vits8-subsets/ and the record under
# benchmarks/results/gpu/. `bash benchmarks/gpu_check.sh --dry-run` runs it on a CPU in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 benchmarks/gpu_plan.py run "$@"
