# Session 6 of 2026-12-01, call 1: the warm-up launch (ncu_launch_cost), the GPU tests, a batch, the lone gradings.
source .devrun/prep.sh
nvidia-smi -L; git log --oneline -1 2>/dev/null
G='graded after [5-9]|by original|speed against|batch CPU|per minute|profiler:|ncu \(batch|gpu launches  |waiting for the GPU'
echo "== ncu_launch_cost"; timeout 120 python3 bench/ncu_launch_cost.py --jobs 8 --variants default,prestart,warm-up,warm-up,prestart 2>&1 | tail -8
echo "== tests/gpu"; timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu -rs --durations=5 > $OUT/tests-gpu.log 2>&1; echo "rc=$?"; tail -14 $OUT/tests-gpu.log | cut -c1-300
echo "== batch default"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs-default.json timeout 95 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 > $OUT/batch-default.log 2>&1; grep -E "$G" $OUT/batch-default.log | cut -c1-400
echo "== lone"; timeout 110 python3 bench/grading_speed.py --backend gpu --handmade --class-size 0 --limit 8 > $OUT/lone.log 2>&1; tail -14 $OUT/lone.log
