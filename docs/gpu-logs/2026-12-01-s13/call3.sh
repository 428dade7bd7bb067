# Session 6 of 2026-12-01, call 3: the batch of 100 at main (33ceab9), alternating the default slots and --per-gpu 6.
source .devrun/prep.sh
G='graded after [5-9]|by original|speed against|batch CPU|per minute|profiler:|ncu \(batch|gpu launches  |waiting for the GPU'
run() { name=$1; shift; echo "== $name: $*"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs-$name.json timeout 100 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 "$@" > $OUT/batch-$name.log 2>&1; grep -E "$G" $OUT/batch-$name.log | cut -c1-400; }
run A1-default
run B1-per6 --per-gpu 6
run A2-default
run B2-per6 --per-gpu 6
