# Ready for the next device session (one H200, about 300 s): the first GPU run of 9b0cf76, 4594ec1, 1ae6ae5 and fa755b1 (a lone
# grading kills whatever carries its tag when it ends; Ctrl-C, SIGTERM and SIGHUP kill its children at once), then the
# stall seen in calls 3 and 5 (a lone grading right after the hostile GPU tests).
source .devrun/prep.sh
echo "== a lone grading killed mid-run"; ( timeout -s TERM 6 python3 -m grader exercises/level2 tests/hostile/printf_flood.cu > /dev/null 2>&1; echo "rc=$?" )
sleep 2; echo "left running:"; ps -eo pid,ppid,etimes,args | grep -E "grader.run.child|ncu|compute-sanitizer|hidden_tests" | grep -v grep | cut -c1-160
echo "== hostile GPU tests, then a lone grading"; timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hostile.py -k "printf or trap or endless" 2>&1 | tail -1
ps -eo pid,ppid,etimes,args | grep -E "grader.run.child|ncu|compute-sanitizer|hidden_tests" | grep -v grep | cut -c1-160
( time timeout 60 python3 -m grader exercises/level2 tests/hostile/printf_flood.cu | tail -1 ) 2>&1 | grep -E "score|real"
echo "== a lone grading killed outright (SIGKILL): its reaper kills the children"; ( timeout -s KILL 6 python3 -m grader exercises/level2 tests/hostile/printf_flood.cu > /dev/null 2>&1; echo "rc=$?" )
sleep 2; echo "left running:"; ps -eo pid,ppid,etimes,args | grep -E "grader.run.child|ncu|compute-sanitizer|hidden_tests" | grep -v grep | cut -c1-160

