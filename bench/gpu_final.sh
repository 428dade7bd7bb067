#!/usr/bin/env bash
# Run on one H200 from the repository root: the GPU checks of the course exercises, the counters,
# the launch budget and the reports, each echoed before its output. Logs and goldens go to OUT_DIR.
#   bash bench/gpu_final.sh [OUT_DIR]
set -u
out=${1:-.}
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
{
  # First: does ncu know the atomic sector names the traffic check now asks for?
  run timeout 120 python3 -m grader profile exercises/reduction reference/reduction/wrong/atomic_per_thread.cu --size 8197 --backend gpu
  run timeout 120 python3 -m grader exercises/level2 reference/level2/solution.cu --backend gpu --html "$out/gpu-solution.html"
  bash bench/validate_all_gpu.sh "$out" 290
  tar -czf "$out/validate-logs.tgz" -C "$out" $(cd "$out" && ls validate-*.log) && rm -f "$out"/validate-*.log
  run timeout 45 python3 bench/ncu_golden.py exercises/reduction --sizes 1000,4099,8197 --out "$out/ncu_reduction.json"
  run timeout 45 python3 bench/ncu_golden.py exercises/softmax --sizes "rows=4,cols=1000;rows=8,cols=257" --out "$out/ncu_softmax.json"
  run timeout 45 python3 bench/ncu_golden.py exercises/histogram --sizes 1000,4099,16384 --out "$out/ncu_histogram.json"
  run timeout 45 python3 bench/ncu_golden.py exercises/half_gemv --sizes "M=17,K=256;M=64,K=512;M=9,K=257" --out "$out/ncu_half_gemv.json"
  run timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu tests/test_launch_budget.py
  run timeout 40 python3 bench/library_ladder.py --out "$out/library_ladder.md"
} 2>&1 | tee "$out/gpu-final.log"
