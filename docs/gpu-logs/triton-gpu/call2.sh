#!/usr/bin/env bash
# Call 2: the Triton GPU path's first run in the jail (a lone grading, then the GPU tests).
source docs/gpu-logs/setup.sh
echo "tree $(cat .tree-commit) + working changes"; date -u
mkdir -p $OUT/t2
for f in reference/triton_vector_add/solution.py reference/triton_vector_add/wrong/no_mask.py; do
  /usr/bin/time -f "%e s wall" python3 -m grader exercises/triton_vector_add $f --backend gpu --json $OUT/t2/$(basename $f .py).json > $OUT/t2/$(basename $f .py).txt 2> $OUT/t2/$(basename $f .py).err
  python3 - $OUT/t2/$(basename $f .py).json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(sys.argv[1].split("/")[-1], d.get("score"), d.get("extra_data", {}).get("backend"), d.get("extra_data", {}).get("device"))
for t in d.get("tests", []): print("  ", t.get("name"), t.get("score"), "/", t.get("max_score"), (t.get("output") or "")[:300].replace("\n", " | "))
print("  notes:", d.get("extra_data", {}).get("notes"))
PY
  tail -3 $OUT/t2/$(basename $f .py).err
done
timeout 330 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_triton_gpu.py -k "reference_runs or unmasked or vector_add" 2>&1 | tail -30
date -u
