#!/usr/bin/env bash
# Call 1: issue 33 baseline (class mix, old mix, ncu launch cost) and the Triton GPU environment's facts.
source docs/gpu-logs/setup.sh
echo "commit $(cat .tree-commit)"; date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/i33 $OUT/triton
( python3 - <<'PY'
import sys, os, time, shutil, sysconfig, importlib.util, subprocess
print("python", sys.version.split()[0], sys.executable)
import torch, triton
print("torch", torch.__version__, torch.__file__, "cuda", torch.version.cuda, torch.cuda.is_available())
print("triton", triton.__version__, triton.__file__)
print("include", sysconfig.get_paths()["include"], os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))
print("gcc", shutil.which("gcc"), shutil.which("cc"), shutil.which("clang"))
for n in ("nvidia", "cuda", "sympy", "networkx", "jinja2", "filelock", "fsspec", "typing_extensions", "mpmath", "markupsafe", "torchgen"):
    s = importlib.util.find_spec(n); print("spec", n, None if s is None else (s.origin, list(s.submodule_search_locations or [])[:3]))
import site; print("site", site.getsitepackages())
PY
) > $OUT/triton/env.txt 2>&1
pip list 2>/dev/null | grep -i -E "nvidia|torch|triton|cuda" >> $OUT/triton/env.txt
ls $(python3 -c "import triton,os;print(os.path.dirname(triton.__file__))")/backends/nvidia/bin >> $OUT/triton/env.txt 2>&1
# Triton compile cost with a fresh cache (outside any jail), vector add
( export TRITON_CACHE_DIR=$(mktemp -d); python3 - <<'PY'
import time; t0=time.perf_counter()
import torch, triton, triton.language as tl
t1=time.perf_counter()
@triton.jit
def k(x, y, o, n, B: tl.constexpr):
    i = tl.program_id(0)*B + tl.arange(0, B); m = i < n
    tl.store(o+i, tl.load(x+i, mask=m)+tl.load(y+i, mask=m), mask=m)
x=torch.randn(1000, device="cuda"); y=torch.randn_like(x); o=torch.empty_like(x)
t2=time.perf_counter(); k[(4,)](x,y,o,1000,B=256); torch.cuda.synchronize(); t3=time.perf_counter()
k[(4,)](x,y,o,1000,B=256); torch.cuda.synchronize(); t4=time.perf_counter()
print(f"import {t1-t0:.2f}s  tensors {t2-t1:.2f}s  first launch (compile+utils) {t3-t2:.2f}s  second {t4-t3:.4f}s", torch.allclose(o,x+y))
PY
) >> $OUT/triton/env.txt 2>&1
cat $OUT/triton/env.txt
timeout 200 python3 bench/ncu_launch_cost.py --jobs 8 --budget 170 > $OUT/i33/ncu_launch_cost.md 2> $OUT/i33/ncu_launch_cost.err; tail -30 $OUT/i33/ncu_launch_cost.md
KERNEL_GRADER_PROFILER_LOG=$OUT/i33/class-runs.json timeout 170 python3 bench/grading_speed.py --backend gpu --batch-only --mix class > $OUT/i33/class.log 2>&1; tail -25 $OUT/i33/class.log
date -u
