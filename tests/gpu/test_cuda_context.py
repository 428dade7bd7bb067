"""grader.run.child.cuda_context on a real GPU: the context it makes early is the one CuPy then uses."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]

_PROGRAM = """
import ctypes
from grader.run.child import cuda_context
cuda_context.open_early().join()
assert len(cuda_context._held) == 1, "no context was retained"
import cupy as cp
assert int(cp.arange(10).sum()) == 45
current = ctypes.c_void_p()
assert ctypes.CDLL("libcuda.so.1").cuCtxGetCurrent(ctypes.byref(current)) == 0
assert current.value == cuda_context._held[0].value, (current.value, cuda_context._held[0].value)
print("same context")
"""


def test_the_early_context_is_the_one_cupy_uses():
    run = subprocess.run([sys.executable, "-c", _PROGRAM], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "same context" in run.stdout, run.stderr[-2000:]
