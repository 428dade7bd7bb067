#!/usr/bin/env bash
# Every exercise validated on the H200 (bench/validate_all_gpu.sh: all at once, CUDA and Triton),
# the Triton GPU tests, and the Triton traffic model's ncu and memcheck columns for the row kernels
# and the matmul (their model columns come from a Triton 3.9 machine: --parts=model).
source docs/gpu-logs/setup.sh
echo "commit $(cat .tree-commit)"; date -u
R=/tmp/res3; mkdir -p $R/validate $R/sectors
( for ex in triton_softmax triton_rmsnorm; do
    timeout 200 python3 bench/triton_sectors.py $ex --sizes=32x1000,32x1024 --parts=ncu,memcheck > $R/sectors/$ex.md 2> $R/sectors/$ex.err
  done
  timeout 150 python3 bench/triton_sectors.py triton_matmul --sizes=64x64x64,33x17x70 --parts=ncu,memcheck > $R/sectors/triton_matmul.md 2> $R/sectors/triton_matmul.err ) &
/usr/bin/time -f "validate all: %e s wall" timeout 330 bash bench/validate_all_gpu.sh $R/validate 320 > $R/validate-summary.txt 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_triton_gpu.py -k "not validates" -rs --durations=3 > $R/pytest-triton-gpu.log 2>&1
wait
date -u
cat $R/validate-summary.txt; tail -8 $R/pytest-triton-gpu.log; for f in $R/sectors/*.md; do echo "== $f"; cat $f; done
tar czf $OUT/call3.tgz -C $R .
