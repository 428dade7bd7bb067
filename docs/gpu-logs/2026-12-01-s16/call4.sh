# Ninth session, call 4 (the same machine as call 3, right after it; commit 913c08c): the batch of 100 twice more.
source .devrun/prep.sh
for k in 4 5; do
  echo "== batch of 100, run $k"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs$k.json timeout 95 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 > $OUT/batch$k.log 2>&1; grep -E "last result|timeline|batch CPU|differ|per minute" $OUT/batch$k.log | cut -c1-400
done
