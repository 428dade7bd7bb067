# Seventh session, call 3 (one H200): the printf flood's message (a18878f), then the hostile file's
# grading on its own through the CLI, to show what the student reads.
source .devrun/prep.sh
echo "== printf tests"; timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hostile.py -k "printf" -rs > $OUT/printf.log 2>&1; echo "rc=$?"; tail -6 $OUT/printf.log | cut -c1-400
echo "== grade printf_flood.cu"; timeout 120 python3 -m grader exercises/level2 tests/hostile/printf_flood.cu > $OUT/flood.txt 2>&1; echo "rc=$?"; grep -A4 "Correctness" $OUT/flood.txt | cut -c1-400; tail -1 $OUT/flood.txt
