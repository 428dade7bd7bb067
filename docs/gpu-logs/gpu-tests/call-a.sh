#!/usr/bin/env bash
# GPU call A: the time-limit tests (five gradings of the printf-from-every-thread matmul give one score
# within 60 s each; an endless loop reported within 10 s), then the rest of tests/gpu but the level2
# batch tests (call B).
set -u
source docs/gpu-logs/setup.sh
echo "tree: $(cat .tree-commit 2>/dev/null)"
t() { echo "\$ $*"; /usr/bin/time -f "[%e s]" "$@"; }
t timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_time_limits_gpu.py -rs -s --durations=3 2>&1 | tee "$OUT/time-limits.log" | grep -v "^ *$" | tail -8
t timeout 330 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu --deselect tests/gpu/test_time_limits_gpu.py \
    --ignore tests/gpu/test_time_limits_gpu.py --ignore tests/gpu/test_level2_gpu.py -rs --durations=8 2>&1 | tee "$OUT/tests-gpu-a.log" | tail -16
