# Session 6 of 2026-12-01, call 2: a timing no longer waits for its grading's ncu run (lone gradings): the GPU tests, the lone gradings, one batch.
source .devrun/prep.sh
nvidia-smi -L
G='graded after [5-9]|by original|speed against|batch CPU|per minute|profiler:|ncu \(batch|gpu launches  |waiting for the GPU'
echo "== lone"; timeout 110 python3 bench/grading_speed.py --backend gpu --handmade --class-size 0 --limit 8 > $OUT/lone.log 2>&1; tail -14 $OUT/lone.log
echo "== tests/gpu"; timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu -rs --durations=5 > $OUT/tests-gpu.log 2>&1; echo "rc=$?"; tail -14 $OUT/tests-gpu.log | cut -c1-300
echo "== lone again"; timeout 110 python3 bench/grading_speed.py --backend gpu --handmade --class-size 0 --limit 8 > $OUT/lone2.log 2>&1; tail -14 $OUT/lone2.log
