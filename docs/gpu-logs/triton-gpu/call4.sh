#!/usr/bin/env bash
# Call 4: the Triton GPU path: every Triton exercise validated on the GPU (in parallel), the held-out
# corpus's truth on the GPU (guards; no memcheck: time) and its gradings with --backend gpu, and the
# vector add's sector table (model against ncu).
source docs/gpu-logs/setup.sh
echo "commit $(cat .tree-commit)"; date -u
W=/tmp/w4; mkdir -p $W/validate $W/truth $W/sectors
for ex in triton_vector_add triton_softmax triton_rmsnorm triton_matmul; do
  ( /usr/bin/time -f "$ex %e s wall" timeout 380 python3 -m grader validate exercises/$ex --backend gpu > $W/validate/$ex.log 2>&1; echo "exit $?" >> $W/validate/$ex.log ) &
done
for ex in triton_vector_add triton_softmax triton_rmsnorm triton_matmul; do
  ( PYTHONPATH=/tmp/site timeout 380 python3 docs/gpu-logs/heldout-triton/truth.py .heldout/triton --out $W/truth --no-memcheck --only $ex/ > $W/truth/$ex.log 2>&1 ) &
done
( timeout 300 python3 bench/triton_sectors.py triton_vector_add --sizes=1000,4096 > $W/sectors/vector_add.md 2> $W/sectors/err.log ) &
sleep 5
PYTHON=python3 timeout 380 bash docs/gpu-logs/heldout-triton/grade_all.sh gpu $W/grade-gpu .heldout/triton 4 > $W/grade_all.log 2>&1
wait
date -u
for ex in triton_vector_add triton_softmax triton_rmsnorm triton_matmul; do echo "== $ex"; tail -25 $W/validate/$ex.log; done
python3 docs/gpu-logs/heldout-triton/compare.py $W/truth gpu=$W/grade-gpu > $W/compare.md 2>&1; cat $W/compare.md | head -80
cat $W/sectors/vector_add.md; tail -5 $W/sectors/err.log
tar czf $OUT/call4.tgz -C $W .
date -u
