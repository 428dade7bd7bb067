#!/usr/bin/env bash
# Run on a machine with two GPUs from the repository root: the batch of 100 on one GPU, then on two
# with one ncu temp folder for both (the old layout), then on two with a folder per GPU (the default).
#   bash bench/gpu_scaling.sh [OUT_DIR] [BATCH_LIMIT_SECONDS]
set -u
out=${1:-.}
limit=${2:-200}
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
{
  run nvidia-smi -L
  run nproc
  run env CUDA_VISIBLE_DEVICES=0 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit "$limit"
  run env KERNEL_GRADER_NCU_TMPDIR=/tmp/kg-ncu-one-folder python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit "$limit"
  run python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit "$limit"
} 2>&1 | tee "$out/gpu-scaling.log"
