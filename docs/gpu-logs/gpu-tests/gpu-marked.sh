# Seventh session, call 5 (one H200, commit 9447409): every gpu-marked test outside tests/gpu again
# (printf flood's wording, checks 'Not graded' when their launch never completed), then
# tests/hostile/printf_flood.cu alone through the CLI.
source .devrun/prep.sh
echo "== gpu tests outside tests/gpu"; timeout 250 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hostile.py tests/test_launch_budget.py -rs --durations=5 > $OUT/gpu-marked.log 2>&1; echo "rc=$?"; tail -9 $OUT/gpu-marked.log | cut -c1-300
echo "== grade printf_flood.cu"; timeout 45 python3 -m grader exercises/level2 tests/hostile/printf_flood.cu > $OUT/flood.txt 2>&1; echo "rc=$?"; grep -E "PASS|FAIL|score" $OUT/flood.txt | cut -c1-160; grep -A3 "Memory safety\|Races and" $OUT/flood.txt | cut -c1-300
