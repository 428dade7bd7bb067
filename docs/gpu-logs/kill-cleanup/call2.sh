# Ninth session, call 2 (same machine, commit 223f685): docs/gpu-logs/2026-12-01-s14/next-call.sh, then the batch of 100 again.
source .devrun/prep.sh
echo "== a lone grading killed mid-run"; ( timeout -s TERM 6 python3 -m grader exercises/level2 tests/hostile/printf_flood.cu > /dev/null 2>&1; echo "rc=$?" )
sleep 2; echo "left running:"; ps -eo pid,ppid,etimes,args | grep -E "grader.run.child|ncu|compute-sanitizer|hidden_tests" | grep -v grep | cut -c1-160
echo "== hostile GPU tests, then a lone grading"; timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hostile.py -k "printf or trap or endless" 2>&1 | tail -1
ps -eo pid,ppid,etimes,args | grep -E "grader.run.child|ncu|compute-sanitizer|hidden_tests" | grep -v grep | cut -c1-160
( time timeout 60 python3 -m grader exercises/level2 tests/hostile/printf_flood.cu | tail -1 ) 2>&1 | grep -E "score|real"
echo "== a lone grading killed outright (SIGKILL): its reaper kills the children"; ( timeout -s KILL 6 python3 -m grader exercises/level2 tests/hostile/printf_flood.cu > /dev/null 2>&1; echo "rc=$?" )
sleep 2; echo "left running:"; ps -eo pid,ppid,etimes,args | grep -E "grader.run.child|ncu|compute-sanitizer|hidden_tests" | grep -v grep | cut -c1-160

echo "== batch of 100, again"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs2.json timeout 95 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 > $OUT/batch2.log 2>&1; grep -E "last result|timeline|batch CPU|differ|per minute" $OUT/batch2.log | cut -c1-400
