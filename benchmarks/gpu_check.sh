#!/usr/bin/env bash
# The device plan (benchmarks/gpu_plan.py says what each part does):
#
#     python benchmarks/gpu_plan.py pack     # here, once: the subsets and wheels into .device/
#     bash benchmarks/gpu_check.sh 1         # on the GPU machine, carrying .device (at most 8 minutes)
#     bash benchmarks/gpu_check.sh 2         # right after, on the same machine (at most 8 minutes)
#
# Each part writes gpu-check-<part>.tar.gz and plan-<part>.json under $OUT (default
# benchmarks/results/gpu); `tar xzf gpu-check-2.tar.gz` in a checkout puts the bundle under
# results/gpu-paper-subsets/. `bash benchmarks/gpu_check.sh 1 --dry-run` runs part 1 on a CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 benchmarks/gpu_plan.py "$@"
