# Ninth session, call 5 (a fresh H200; commit after 913c08c, code unchanged): fewer gradings per GPU,
# an experiment the fifth session listed as not tried: the batch of 100 at --per-gpu 6 and 8, alternating.
source .devrun/prep.sh
for k in 6a 8a 6b 8b; do
  per=${k%?}
  echo "== batch of 100, --per-gpu $per ($k)"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs$k.json timeout 95 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --per-gpu $per --batch-limit 88 > $OUT/batch$k.log 2>&1; grep -E "last result|batch CPU|differ|lane busy" $OUT/batch$k.log | cut -c1-300
done
