# Seventh session, call 4 (one H200): why a lone `grade` of tests/hostile/printf_flood.cu ran past
# 120 s in call 3 (the hostile test, with run_seconds = 60, graded it in 14.5 s): the process tree and
# the grading's Python stack at 45 s, then the stages' timeline from the results JSON.
source .devrun/prep.sh
( timeout 250 python3 -m grader exercises/level2 tests/hostile/printf_flood.cu --json $OUT/flood.json > $OUT/flood.txt 2>&1; echo "grade rc=$?" ) &
sleep 45
echo "== processes at 45 s"; ps -eo pid,ppid,etimes,pcpu,rss,args --forest | grep -v "ps -eo" | grep -E "grader|ncu|sanitizer|python" | cut -c1-220 | head -30
P=$(pgrep -f "grader exercises/level2 tests/hostile/printf_flood.cu" | head -1); echo "grade pid $P"
timeout 20 py-spy dump --pid $P 2>&1 | head -60
wait
echo "== stages"; python3 -c "
import json;d=json.load(open('$OUT/flood.json'));print('score',d['score'],'seconds',d.get('execution_time'))
for s in d['extra_data'].get('stages',[]): print(s)
for t in d['tests']: print(t['name'],t['status'],t['output'][:300].replace(chr(10),' | '))" 2>&1 | cut -c1-400
