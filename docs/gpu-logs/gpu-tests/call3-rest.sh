#!/usr/bin/env bash
# After call-suite.sh ran out of time: the two course exercises whose GPU validation failed there,
# graded by `grade validate --backend gpu` directly (what failed, in its words), then the tests of
# tests/gpu that call-suite.sh never reached.
set -u
source docs/gpu-logs/setup.sh
echo "tree: $(cat .tree-commit 2>/dev/null)"
for ex in softmax half_gemv; do
  echo "\$ python3 -m grader validate exercises/$ex --backend gpu"
  /usr/bin/time -f "%e s" timeout 150 python3 -m grader validate exercises/$ex --backend gpu 2>&1 | grep -v "^  \.\.\." | tee "$OUT/validate-$ex.log" | grep -v "^  ok"
done
echo '$ python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_level2_gpu.py -k "batch or warm" tests/gpu/test_time_limits_gpu.py tests/gpu/test_timing.py -rs --durations=10'
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_level2_gpu.py -k "batch or warm" \
    tests/gpu/test_time_limits_gpu.py tests/gpu/test_timing.py -rs --durations=10 2>&1 | tee "$OUT/tests-gpu-rest.log" | tail -25
