#!/usr/bin/env bash
# Call 5: the Triton GPU path again (no audit hook in the GPU child): the four exercises validated on
# the GPU in parallel, and the held-out corpus graded with --backend gpu.
source docs/gpu-logs/setup.sh
echo "commit $(cat .tree-commit)"; date -u
W=/tmp/w5; mkdir -p $W/validate
for ex in triton_vector_add triton_softmax triton_rmsnorm triton_matmul; do
  ( /usr/bin/time -f "$ex %e s wall" timeout 150 python3 -m grader validate exercises/$ex --backend gpu > $W/validate/$ex.log 2>&1; echo "exit $?" >> $W/validate/$ex.log ) &
done
PYTHON=python3 timeout 150 bash docs/gpu-logs/heldout-triton/grade_all.sh gpu $W/grade-gpu .heldout/triton 4 > $W/grade_all.log 2>&1
wait
date -u
for ex in triton_vector_add triton_softmax triton_rmsnorm triton_matmul; do echo "== $ex"; grep -v "^  \.\.\." $W/validate/$ex.log | tail -22; done
tar czf $OUT/call5.tgz -C $W .
