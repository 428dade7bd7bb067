source .devrun/prep.sh
G='graded after [5-9]|per minute|profiler:|ncu \(batch|gpu launches  |waiting for the GPU'
run() { name=$1; shift; echo "== $name: $*"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs-$name.json "$@" timeout 100 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 $EXTRA > $OUT/batch-$name.log 2>&1; grep -E "$G" $OUT/batch-$name.log | cut -c1-400; }
echo "== lone solution.cu"; timeout 60 python3 bench/grading_speed.py --backend gpu --limit 1 --class-size 0 2>&1 | tail -12 | cut -c1-1500
EXTRA= run A3-default X=1
EXTRA= run C2-linger05 KERNEL_GRADER_PROFILER_LINGER=0.5
EXTRA= run A4-default X=1
