#!/usr/bin/env bash
# Call 3: the Triton GPU tests (every Triton exercise validated on the GPU) and the vector add's sector table.
source docs/gpu-logs/setup.sh
echo "tree $(cat .tree-commit) + working changes"; date -u
mkdir -p $OUT/t3
/usr/bin/time -f "%e s wall" python3 -m grader exercises/triton_vector_add reference/triton_vector_add/solution.py --backend gpu > $OUT/t3/solution.txt 2>&1; tail -12 $OUT/t3/solution.txt
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_triton_gpu.py 2>&1 | tail -30
timeout 150 python3 bench/triton_sectors.py triton_vector_add --sizes=1000,4096 > $OUT/t3/sectors_vector_add.md 2> $OUT/t3/sectors.err; cat $OUT/t3/sectors_vector_add.md; tail -5 $OUT/t3/sectors.err
date -u
