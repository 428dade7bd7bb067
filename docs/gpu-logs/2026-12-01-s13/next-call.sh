# Ready for the next device session (one H200, ~450 s): the first GPU run of 2f91349 (children killed
# and reaped in the background) and ebeefdb (the batch's timeline). The batch ran on 5.8 to 8.1 s
# after its last result in this session's runs; the timeline line says which step that was.
source .devrun/prep.sh
echo "== tests/gpu"; timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu -rs --durations=5 > $OUT/tests-gpu.log 2>&1; echo "rc=$?"; tail -8 $OUT/tests-gpu.log | cut -c1-300
echo "== batch of 100"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs.json timeout 95 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 > $OUT/batch.log 2>&1; grep -E "graded after|last result|timeline|batch CPU|profiler:|per minute" $OUT/batch.log | cut -c1-400
echo "== lone"; timeout 110 python3 bench/grading_speed.py --backend gpu --handmade --class-size 0 --limit 8 > $OUT/lone.log 2>&1; tail -14 $OUT/lone.log
