#!/usr/bin/env bash
# GPU call B2: the 22 held-out files call B1's grading streams did not reach in time (they shared the
# GPU with the ground-truth run), graded eight at a time; then the level2 GPU tests with what is left.
set -u
source docs/gpu-logs/setup.sh
echo "tree: $(cat .tree-commit 2>/dev/null)"
REPO=$PWD
cd .heldout
start=$(date +%s)
xargs -P 8 -I{} sh -c 'ONLY="/{}.cu" REPO='"$REPO"' PYTHON=python3 TIMEOUT_S=100 bash grade_all.sh gpu /tmp/out-gpu > /dev/null 2>&1' < missing.txt
echo "graded $(ls /tmp/out-gpu/*/*.rc | wc -l) files in $(( $(date +%s) - start )) s"
tar czf "$OUT/out-gpu-b2.tgz" -C /tmp out-gpu
cd "$REPO"
timeout 95 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_level2_gpu.py -rs --durations=5 2>&1 | tee "$OUT/level2-gpu.log" | tail -8
