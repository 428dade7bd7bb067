# Session 6 of 2026-12-01, call 6 (the last seconds of device time): after the kill-and-reap commit, the time a batch runs after its last result, and lone gradings.
source .devrun/prep.sh >/dev/null 2>&1; export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PATH=/tmp/site/bin:$PATH
echo "== batch of 30"; timeout 60 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 30 --batch-limit 55 > $OUT/batch30.log 2>&1; grep -E "graded after|last result|per minute" $OUT/batch30.log
echo "== lone"; timeout 50 python3 bench/grading_speed.py --backend gpu --class-size 0 --limit 8 > $OUT/lone.log 2>&1; grep -E "^\| |Per submission" $OUT/lone.log
