#!/usr/bin/env bash
# tests/gpu on one H200 after issue 31's work (the work budget, time limits, hints, staff faults,
# PTX coverage): every test in tests/gpu, the course exercises validated on the GPU among them.
set -u
source docs/gpu-logs/setup.sh
{
  git log --oneline -1 2>/dev/null || true
  echo '$ python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rs --durations=10'
  timeout 560 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rs --durations=10
} 2>&1 | tee "$OUT/tests-gpu.log"
