#!/usr/bin/env bash
# The Triton performance check on one GPU: its GPU tests (the reference vector add earns every
# performance point, a chunk-by-chunk Python loop fewer), then each Triton exercise's reference and
# the slow vector add graded with --backend gpu (the performance lines show the measured times).
# Run from the repository root on the H200:  bash bench/triton_perf_gpu.sh
# (validation of every wrong file on the GPU is the second command: pytest -m gpu -k validates).
source docs/gpu-logs/setup.sh
mkdir -p "$OUT/log"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_triton_gpu.py -k "not validates" -rs --durations=8 \
  2>&1 | tee "$OUT/log/pytest.txt"
for ex in triton_vector_add triton_softmax triton_rmsnorm triton_matmul; do
  timeout 120 python3 -m grader "exercises/$ex" "reference/$ex/solution.py" --backend gpu 2>&1 | tee "$OUT/log/$ex.txt"
done
timeout 120 python3 -m grader exercises/triton_vector_add tests/data/triton_slow/vector_add_python_loop.py --backend gpu \
  2>&1 | tee "$OUT/log/vector_add_python_loop.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/log/gpu.csv" 2>&1
git log -1 --format=%H > "$OUT/log/commit.txt" 2>/dev/null
tar -C "$OUT" -czf "$OUT/x.tgz" log && rm -rf "$OUT/log"
