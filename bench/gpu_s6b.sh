#!/usr/bin/env bash
# Sixth session, on one H200: the batch of 100 with batch profiling (one ncu child per GPU for up to
# K gradings), a hang graded alone, every exercise validated on the GPU, the batch-profiling GPU test.
#   bash bench/gpu_s6b.sh OUT_DIR
set -u
out=${1:-.}
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
{
  run python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --per-gpu 8 --profile-group 8 --batch-limit 170
  for f in tests/hostile/endless_loop_ragged.cu tests/hostile/endless_loop_all.cu; do
    echo "\$ time grade exercises/level2 $f --backend gpu"
    s=$(date +%s.%N); timeout 150 python3 -m grader exercises/level2 "$f" --backend gpu --quiet --json "$out/hang-$(basename "$f" .cu).json"
    echo "[exit status $?] $(python3 -c "import sys; print(f'{float(sys.argv[2])-float(sys.argv[1]):.1f} s')" "$s" "$(date +%s.%N)")"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('score', d['score'], [(t['name'], t['status']) for t in d['tests']][:6])" "$out/hang-$(basename "$f" .cu).json"
  done
  bash bench/validate_all_gpu.sh "$out" 280 "FAIL|valid|exit status|promises"
  run timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_level2_gpu.py -k batch_profiles
} 2>&1 | tee "$out/gpu-s6b.log"
