#!/usr/bin/env bash
# The time-limit tests alone with room to finish (call-final.sh gave them 200 s, not enough), the
# held-out real kernels graded with --backend gpu beside them (four at a time), and the PTX corpus
# replayed on the GPU after its test's fixes.
set -u
source docs/gpu-logs/setup.sh
echo "tree: $(cat .tree-commit 2>/dev/null)"
if [ -d .heldout ]; then
  (cd .heldout && BACKEND=gpu JOBS=4 PYTHON=python3 timeout 230 ./grade_all.sh "$OLDPWD" "$OUT/heldout-gpu.txt" > "$OUT/heldout-gpu.log" 2>&1) &
fi
echo '$ python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_time_limits_gpu.py -rs -s --durations=5'
/usr/bin/time -f "[%e s]" timeout 250 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_time_limits_gpu.py -rs -s --durations=5 2>&1 | tee "$OUT/time-limits.log" | grep -v "^ *$" | tail -25
wait
sed -n '1,42p' "$OUT/heldout-gpu.txt" 2>/dev/null | cut -c1-175
timeout 40 python3 -m pytest -q -p no:cacheprovider -m gpu tests/emu/test_ptx_corpus_gpu.py -k "templates or fast_math or float_math" 2>&1 | tail -3
