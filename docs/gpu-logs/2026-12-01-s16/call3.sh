# Ninth session, call 3 (a fresh H200; commit 913c08c: cheaper charts, the emulator's pages shared at
# the end): the batch of 100 and its pages on the GPU, and one grading's --html page.
source .devrun/prep.sh
echo "== batch of 100"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs3.json timeout 95 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 > $OUT/batch3.log 2>&1; grep -E "last result|timeline|batch CPU|differ|per minute" $OUT/batch3.log | cut -c1-400
echo "== one grading with its page"; ( time timeout 60 python3 -m grader exercises/level2 reference/level2/wrong/no_tiling.cu --html $OUT/no_tiling.html | tail -2 ) 2>&1 | grep -E "score|real"
python3 - <<'PY'
import os, re
html = open(os.environ["OUT"] + "/no_tiling.html").read()
print("page bytes", len(html), "charts", len(re.findall(r'<img src="data:image/svg\+xml;base64,', html)))
PY
