# Seventh session of 2026-12-01, call 1 (one H200): the GPU tests (the warm-worker test now breaks
# the context with a misaligned load), then the batch of 100 three times with the pages drawn as
# results land (f668fb3) and the relative-path fix (beb939d).
source .devrun/prep.sh
echo "== tests/gpu"; timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu -rs --durations=5 > $OUT/tests-gpu.log 2>&1; echo "rc=$?"; tail -4 $OUT/tests-gpu.log | cut -c1-300
for k in 1 2 3; do
  echo "== batch of 100, run $k"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs$k.json timeout 95 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 > $OUT/batch$k.log 2>&1; grep -E "last result|timeline|batch CPU|differ|per minute" $OUT/batch$k.log | cut -c1-400
done
