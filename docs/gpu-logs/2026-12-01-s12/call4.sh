source .devrun/prep.sh
G='graded after [4-9]|graded after 1[0-9]|by original|speed against|batch CPU|per minute|profiler:|ncu \(batch|gpu launches  |waiting for the GPU'
run() { name=$1; shift; echo "== $name: $*"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs-$name.json "$@" timeout 170 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit ${LIMIT:-88} $EXTRA > $OUT/batch-$name.log 2>&1; grep -E "$G" $OUT/batch-$name.log | cut -c1-400; }
EXTRA= run P1-parking X=1
EXTRA= run N1-no-parking KERNEL_GRADER_PARKING=0
EXTRA= run P2-parking X=1
LIMIT=150 EXTRA="--mix correct" run PC-parking-correct X=1
echo "reset needed: $(nvidia-smi -q | grep -c 'requires reset')"
