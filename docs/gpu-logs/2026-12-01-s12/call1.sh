source .devrun/prep.sh
nvidia-smi -L; nproc
G='graded after [5-9]|by original|speed against|batch CPU|warm_worker  |per minute|profiler:|ncu \(batch|gpu launches  '
run() { name=$1; shift; echo "== $name: $*"; env "$@" timeout 100 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 $EXTRA > $OUT/batch-$name.log 2>&1; grep -E "$G" $OUT/batch-$name.log | cut -c1-300; }
EXTRA= run A-default X=1
EXTRA="--per-gpu 12" run B-per12 X=1
EXTRA= run C-linger05 KERNEL_GRADER_PROFILER_LINGER=0.5
EXTRA="--per-gpu 12" run D-per12-linger05 KERNEL_GRADER_PROFILER_LINGER=0.5
EXTRA="--per-gpu 16" run E-per16 X=1
EXTRA= run A2-default X=1
echo "reset needed: $(nvidia-smi -q | grep -c 'requires reset')"
