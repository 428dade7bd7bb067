#!/usr/bin/env bash
# Run on a machine with two GPUs from the repository root: the batch of 100 on one GPU, then on two,
# one after the other (the ratio of the two is the scaling). Extra arguments go to grading_speed.py. Each
# run's profiler record (its ncu runs, per GPU) is kept beside the log as runs-*.json.
# docs/benchmarks.md ("Two GPUs") has the numbers.
#   bash bench/gpu_scaling.sh [OUT_DIR] [BATCH_LIMIT_SECONDS] [--per-gpu K --profile-group G ...]
set -u
out=${1:-.}
limit=${2:-200}
shift 2 2>/dev/null || shift $#
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
{
  run nvidia-smi -L
  run nproc
  run env CUDA_VISIBLE_DEVICES=0 KERNEL_GRADER_PROFILER_LOG="$out/runs-one-gpu.json" \
    python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit "$limit" "$@"
  run env KERNEL_GRADER_PROFILER_LOG="$out/runs-two-gpus.json" \
    python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit "$limit" "$@"
} 2>&1 | tee "$out/gpu-scaling.log"
