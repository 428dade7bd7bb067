source .devrun/prep.sh
G='graded after [5-9]|by original|speed against|batch CPU|per minute|profiler:|ncu \(batch|gpu launches  |waiting for the GPU'
run() { name=$1; shift; echo "== $name: $*"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs-$name.json "$@" timeout 100 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 > $OUT/batch-$name.log 2>&1; grep -E "$G" $OUT/batch-$name.log | cut -c1-400; }
run X1-ncu-alone X=1
run S1-ncu-shared KERNEL_GRADER_NCU_ALONE=0
echo "== tests/gpu"; timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu --durations=5 > $OUT/tests-gpu.log 2>&1; tail -14 $OUT/tests-gpu.log | cut -c1-300
echo "reset needed: $(nvidia-smi -q | grep -c 'requires reset')"
