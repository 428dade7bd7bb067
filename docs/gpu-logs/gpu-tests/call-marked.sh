#!/usr/bin/env bash
# The gpu-marked tests outside tests/gpu (hostile CUDA files, the launch budget, staff faults, hints
# from evidence, the PTX corpus replayed on the GPU), then the held-out real kernels graded with
# --backend gpu (.heldout is an untracked copy of the corpus the device tool carries).
set -u
source docs/gpu-logs/setup.sh
{
  git log --oneline -1 2>/dev/null || true
  echo '$ python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hostile.py tests/test_launch_budget.py tests/test_staff_faults.py tests/test_hints.py tests/emu/test_ptx_corpus_gpu.py -rs --durations=10'
  timeout 330 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hostile.py tests/test_launch_budget.py \
      tests/test_staff_faults.py tests/test_hints.py tests/emu/test_ptx_corpus_gpu.py -rs --durations=10
} 2>&1 | tee "$OUT/gpu-marked.log"
if [ -d .heldout ]; then
  echo '$ BACKEND=gpu JOBS=4 PYTHON=python3 .heldout/grade_all.sh $PWD gpu.txt' | tee "$OUT/heldout-gpu.log"
  (cd .heldout && BACKEND=gpu JOBS=4 PYTHON=python3 timeout 200 ./grade_all.sh "$OLDPWD" "$OUT/heldout-gpu.txt") >> "$OUT/heldout-gpu.log" 2>&1
  tail -45 "$OUT/heldout-gpu.txt"
fi
