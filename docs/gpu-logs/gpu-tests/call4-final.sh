#!/usr/bin/env bash
# The last GPU call for issue 31: the time-limit tests (five gradings of a printf-from-every-thread
# matmul give one score; an endless loop reported within 10 s) and the timing tests, softmax and
# half_gemv validated on the GPU after the hidden-test fix, the held-out real kernels graded with
# --backend gpu, then the gpu-marked tests outside tests/gpu that fit.
set -u
source docs/gpu-logs/setup.sh
echo "tree: $(cat .tree-commit 2>/dev/null)"
t() { echo "\$ $*"; /usr/bin/time -f "[%e s]" "$@"; }
t timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_time_limits_gpu.py tests/gpu/test_timing.py -rs --durations=5 2>&1 | tee "$OUT/time-limits.log" | tail -12
for ex in softmax half_gemv; do
  t timeout 100 python3 -m grader validate exercises/$ex --backend gpu 2>&1 | grep -v "^  \.\.\." > "$OUT/validate-$ex.log"; grep -v "^  ok" "$OUT/validate-$ex.log"
done
if [ -d .heldout ]; then
  echo '$ (cd .heldout && BACKEND=gpu JOBS=6 PYTHON=python3 ./grade_all.sh $REPO $OUT/heldout-gpu.txt)'
  (cd .heldout && BACKEND=gpu JOBS=6 PYTHON=python3 timeout 170 ./grade_all.sh "$OLDPWD" "$OUT/heldout-gpu.txt") > "$OUT/heldout-gpu.log" 2>&1
  sed -n '1,45p' "$OUT/heldout-gpu.txt" | cut -c1-175
fi
t timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_staff_faults.py tests/test_hints.py \
    tests/emu/test_ptx_corpus_gpu.py tests/test_launch_budget.py -rs --durations=5 2>&1 | tee "$OUT/gpu-marked.log" | tail -12
