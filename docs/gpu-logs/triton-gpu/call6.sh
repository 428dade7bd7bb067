#!/usr/bin/env bash
# The held-out Triton corpus on the H200 (gpu-run.sh: truth with memcheck, grade --backend gpu and
# --backend emu, compare) and, beside it, the row kernels' Nsight Compute sector columns.
source docs/gpu-logs/setup.sh
echo "commit $(cat .tree-commit)"; date -u
S=/tmp/sectors; mkdir -p $S
( for ex in triton_softmax triton_rmsnorm; do
    timeout 200 python3 bench/triton_sectors.py $ex --sizes=32x1000,32x1024 --parts=ncu,memcheck > $S/$ex.md 2> $S/$ex.err
  done ) &
PYTHON=python3 CAP_S=470 bash docs/gpu-logs/heldout-triton/gpu-run.sh .heldout/triton 6
wait
for f in $S/*; do echo "== $f"; cat $f | cut -c1-600; done
mkdir -p /tmp/c6 && cp -r $S /tmp/c6/ && tar czf $OUT/sectors.tgz -C /tmp/c6 .
date -u
