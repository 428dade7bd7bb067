#!/usr/bin/env bash
# Run on a GPU machine from the repository root: the commands whose output docs/gpu-evidence.md records.
#   bash bench/gpu_evidence.sh [OUT_DIR] [EXERCISE...]
# Each command is echoed before its output, so the log shows exactly what was run.
set -u
out=${1:-.}
shift || true
exercises=${*:-exercises/level2}
run() { echo "\$ $*"; "$@"; echo "[exit status $?]"; echo; }
{
  run nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  run python3 -c "import sys, cupy; print('python', sys.version.split()[0], 'cupy', cupy.__version__)"
  run ncu --version
  run compute-sanitizer --version
  run python3 -m grader exercises/level2 reference/level2/solution.cu --backend gpu --seed 1
  run python3 -m grader exercises/level2 exercises/level2/skeleton.cu --backend gpu --seed 1
  run python3 -m pytest -m gpu -v -p no:cacheprovider tests/gpu
  for ex in $exercises; do run python3 -m grader validate "$ex" --backend gpu; done
} 2>&1 | tee "$out/gpu-evidence.log"
