# Ninth session of 2026-12-01, call 1 (one H200; commit 223f685): the GPU tests on this tree (the
# signals and reaper commits 9b0cf76..fa755b1 and the emulator's fast paths have not run on a GPU),
# the batch of 100, and the lone gradings against the hand-made pipeline.
source .devrun/prep.sh
git log --oneline -1 2>/dev/null || true
echo "== tests/gpu"; timeout 290 python3 -m pytest -q -p no:cacheprovider tests/gpu -rs --durations=5 > $OUT/tests-gpu.log 2>&1; echo "rc=$?"; tail -8 $OUT/tests-gpu.log | cut -c1-300
echo "== batch of 100"; env KERNEL_GRADER_PROFILER_LOG=$OUT/runs1.json timeout 95 python3 bench/grading_speed.py --backend gpu --batch-only --class-size 100 --batch-limit 88 > $OUT/batch1.log 2>&1; grep -E "last result|timeline|batch CPU|differ|per minute" $OUT/batch1.log | cut -c1-400
echo "== lone"; timeout 110 python3 bench/grading_speed.py --backend gpu --handmade --class-size 0 --limit 8 > $OUT/lone.log 2>&1; tail -14 $OUT/lone.log
