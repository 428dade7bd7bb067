#!/usr/bin/env bash
# After call7 (the staff timing child killed with the thread that started it): the Triton performance
# check again (bench/triton_perf_gpu.sh), then the four Triton exercises and vector_add validated on
# the GPU at once (vector_add's ncu run was killed in call7's all-sixteen-at-once validation), and
# beside them the matmul files' Nsight Compute sector counts.
source docs/gpu-logs/setup.sh
echo "commit $(cat .tree-commit)"; date -u
R=/tmp/res8; mkdir -p $R/validate
OUT_SAVED=$OUT; export OUT=$R
/usr/bin/time -f "perf script: %e s wall" timeout 220 bash bench/triton_perf_gpu.sh > $R/perf.txt 2>&1
export OUT=$OUT_SAVED
date -u
( timeout 250 python3 bench/triton_sectors.py triton_matmul --sizes=64x64x64,33x17x70 --parts=ncu > $R/sectors-triton_matmul.md 2> $R/sectors-triton_matmul.err ) &
for ex in triton_vector_add triton_softmax triton_rmsnorm triton_matmul vector_add; do
  ( timeout 280 python3 -m grader validate exercises/$ex --backend gpu > $R/validate/validate-$ex.log 2>&1; echo "[exit status $?]" >> $R/validate/validate-$ex.log ) &
done
wait
date -u
grep -E "passed|failed|score|Performance|µs|perf script" $R/perf.txt | cut -c1-400 | head -40
cat $R/sectors-triton_matmul.md
for f in $R/validate/*.log; do echo "== $f"; grep -E "FAIL|valid|exit status|performance" $f | cut -c1-300; done
tar czf $OUT/call8.tgz -C $R .
