#!/usr/bin/env bash
# GPU call B1: the held-out corpus of real kernels (90 files, outside the repository, carried as
# .heldout): its ground truth measured by a script that shares no code with the grader, beside the
# grader's --backend gpu verdicts (six streams, one per folder), then both compared.
set -u
source docs/gpu-logs/setup.sh
echo "tree: $(cat .tree-commit 2>/dev/null)"
REPO=$PWD
cd .heldout
(timeout 430 python3 ground_truth.py --out "$OUT/truth.json" --jobs 8 --timeout 60 --san-timeout 60 > "$OUT/truth.log" 2>&1; echo "truth rc $?") &
for ex in reduction softmax histogram level2 transpose hostile; do
  (ONLY=/$ex/ REPO=$REPO PYTHON=python3 TIMEOUT_S=150 timeout 430 bash grade_all.sh gpu /tmp/out-gpu > /tmp/ga-$ex.log 2>&1) &
done
wait
tail -3 /tmp/ga-*.log
python3 compare.py "$OUT/truth.json" /tmp/out-gpu > "$OUT/compare-gpu.txt" 2>&1
python3 compare.py "$OUT/truth.json" out-emu > "$OUT/compare-emu.txt" 2>&1
tail -15 "$OUT/compare-gpu.txt"; tail -15 "$OUT/compare-emu.txt"
tar czf "$OUT/out-gpu.tgz" -C /tmp out-gpu
