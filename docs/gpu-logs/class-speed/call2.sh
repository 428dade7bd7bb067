#!/usr/bin/env bash
# Issue 33, after the profiler's changes, back to back on one H200: the class of 100 on this tree and
# on c61dcf1 (the tree before the changes, carried as .gpuwork/before with this tree's bench scripts),
# each with a fresh compile cache and its results kept; every results document compared; then the
# bench's old mix on this tree and where a profiled launch goes (bench/ncu_launch_cost.py).
source docs/gpu-logs/setup.sh
echo "commit $(cat .tree-commit)"; date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
R=/tmp/res; mkdir -p $R
KERNEL_GRADER_CACHE=$(mktemp -d) KERNEL_GRADER_PROFILER_LOG=$R/after-runs.json timeout 150 python3 bench/grading_speed.py \
  --backend gpu --batch-only --mix class --keep-results $R/after > $R/after.log 2>&1; echo "after exit $?"
( cd .gpuwork/before && PYTHONPATH=/tmp/site:$PWD KERNEL_GRADER_CACHE=$(mktemp -d) KERNEL_GRADER_PROFILER_LOG=$R/before-runs.json \
  timeout 170 python3 bench/grading_speed.py --backend gpu --batch-only --mix class --keep-results $R/before > $R/before.log 2>&1; echo "before exit $?" )
python3 bench/compare_results.py $R/before $R/after > $R/compare.txt 2>&1; echo "compare exit $?"
KERNEL_GRADER_CACHE=$(mktemp -d) KERNEL_GRADER_PROFILER_LOG=$R/mix-runs.json timeout 110 python3 bench/grading_speed.py \
  --backend gpu --batch-only > $R/mix.log 2>&1; echo "mix exit $?"
timeout 90 python3 bench/ncu_launch_cost.py --jobs 8 --variants no-ncu,startup,grader,no-atomics,one-metric --budget 80 \
  > $R/ncu_launch_cost.md 2> $R/ncu_launch_cost.err; echo "ncu_launch_cost exit $?"
date -u
for f in after before mix; do echo "== $f"; tail -22 $R/$f.log; done
echo "== compare"; tail -40 $R/compare.txt
echo "== ncu_launch_cost"; tail -12 $R/ncu_launch_cost.md
tar czf $OUT/i33.tgz -C $R .
