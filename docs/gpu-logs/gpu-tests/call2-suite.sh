#!/usr/bin/env bash
# tests/gpu on one H200 after issue 31's work (the work budget, time limits, hints, staff faults,
# PTX coverage): every test in tests/gpu, the course exercises validated on the GPU among them.
set -u
source docs/gpu-logs/setup.sh
{
  echo "tree: $(cat .tree-commit 2>/dev/null)"
  echo '$ python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rs --durations=10'
  timeout 560 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rs --durations=10
} 2>&1 | tee "$OUT/tests-gpu.log"
