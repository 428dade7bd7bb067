#!/usr/bin/env bash
# The Triton performance check on the H200 (bench/triton_perf_gpu.sh: the Triton GPU tests, the four
# references and a slow vector add graded with --backend gpu), then every exercise validated on the
# GPU at once (bench/validate_all_gpu.sh), CUDA and Triton.
source docs/gpu-logs/setup.sh
echo "commit $(cat .tree-commit)"; date -u
R=/tmp/res7; mkdir -p $R/validate
OUT_SAVED=$OUT; export OUT=$R
/usr/bin/time -f "perf script: %e s wall" timeout 240 bash bench/triton_perf_gpu.sh > $R/perf.txt 2>&1
export OUT=$OUT_SAVED
date -u
/usr/bin/time -f "validate all: %e s wall" timeout 330 bash bench/validate_all_gpu.sh $R/validate 320 > $R/validate-summary.txt 2>&1
date -u
grep -E "passed|failed|score|Performance|µs|perf script" $R/perf.txt | cut -c1-300 | head -60
cat $R/validate-summary.txt
tar czf $OUT/call7.tgz -C $R .
