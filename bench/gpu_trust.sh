#!/usr/bin/env bash
# Run on a GPU machine from the repository root: the trust checks docs/gpu-evidence.md records
# (full marks, everyday headers, the same file graded twice, NaN payloads, a batch of 100 whose
# copies must agree, the GPU tests). Each command is echoed before its output.
#   bash bench/gpu_trust.sh [OUT_DIR]
set -u
out=${1:-.}
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
{
  run nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  run python3 -m grader doctor
  run python3 bench/nan_payload.py
  run python3 -m grader exercises/level2 reference/level2/solution.cu --backend gpu
  run python3 -m grader exercises/level2 tests/hostile/include_everyday_headers.cu --backend gpu
  for k in 1 2; do
    run python3 -m grader exercises/level2 reference/level2/wrong/missing_second_barrier.cu --backend gpu --json "$out/twice-$k.json" --quiet
  done
  run python3 -c "import json,sys; a,b=(json.load(open(sys.argv[i])) for i in (1,2)); strip=lambda d:[(t['name'],t['score'],t['status']) for t in d['tests']]; print('same score and verdicts:', a['score']==b['score'] and strip(a)==strip(b), a['score'], b['score'])" "$out/twice-1.json" "$out/twice-2.json"
  run python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100
  run python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu tests/test_headers.py
} 2>&1 | tee "$out/gpu-trust.log"
