#!/usr/bin/env bash
# Sixth session, first call on one H200: how ncu counts atomics lane by lane (bench/atomic_probe.py),
# the GPU tests (course exercises, launch budgets, the hostile corpus), the library ladder, and where
# one grading's CPU seconds go, by kind of process. Each command is echoed before its output.
#   bash bench/gpu_s6a.sh OUT_DIR
set -u
out=${1:-.}
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
{
  run nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  run timeout 150 python3 bench/atomic_probe.py --out "$out/ncu_atomic_probe.json"
  run timeout 60 python3 bench/library_ladder.py --out "$out/library_ladder.md"
  run timeout 90 python3 bench/cpu_one_grading.py --backend gpu exercises/level2 reference/level2/solution.cu reference/level2/wrong/no_tiling.cu reference/level2/wrong/wrong_index.cu
  run timeout 260 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu tests/test_launch_budget.py tests/test_hostile.py tests/test_headers.py
} 2>&1 | tee "$out/gpu-s6a.log"
