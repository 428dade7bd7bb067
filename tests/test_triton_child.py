"""grader.triton.child's in-process parts: `@triton.autotune` pinned to its first config under the
interpreter (which cannot benchmark: "0 active drivers"), and spotting an autotuned submission."""
from __future__ import annotations

import os
import types

import pytest

from grader.triton.child import holds_autotuner, pin_first_config

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
os.environ.setdefault("TRITON_INTERPRET", "1")
if os.environ["TRITON_INTERPRET"] != "1":
    pytest.skip("the interpreter was not asked for", allow_module_level=True)

import triton.language as tl  # noqa: E402
import triton.runtime.autotuner as autotuner  # noqa: E402

SEEN = []


def _seen(nargs):
    SEEN.append(nargs["BLOCK"])


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=1, pre_hook=_seen),
                          triton.Config({"BLOCK": 128}, num_warps=2, pre_hook=_seen)], key=["n"])
@triton.jit
def tuned_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def launch(n=300):
    x, y, out = torch.rand(n), torch.rand(n), torch.full((n,), float("nan"))
    tuned_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    return x, y, out


@pytest.fixture
def pinned():
    saved = autotuner.Autotuner.run
    assert pin_first_config(autotuner)
    yield
    autotuner.Autotuner.run = saved


def test_unpinned_the_interpreter_cannot_benchmark():
    with pytest.raises(Exception):
        launch()


def test_pinned_an_autotuned_kernel_runs_its_first_config_without_benchmarking(pinned):
    SEEN.clear()
    x, y, out = launch()
    assert torch.allclose(out, x + y)
    assert SEEN == [64]  # the first config's pre_hook and BLOCK, once: nothing was timed
    assert [c.kwargs["BLOCK"] for c in tuned_add.configs] == [64, 128]  # the configs are left as declared
    assert pin_first_config(autotuner)  # twice is once
    SEEN.clear()
    launch()
    assert SEEN == [64]


def test_a_triton_without_the_hook_point_is_said_so():
    assert pin_first_config(types.SimpleNamespace()) is False
    assert pin_first_config(types.SimpleNamespace(Autotuner=type("Autotuner", (), {}))) is False


def test_an_autotuned_submission_is_spotted_through_its_wrappers():
    plain = types.SimpleNamespace(kernel=tuned_add.fn, launcher=launch, n=3)
    assert not holds_autotuner(plain, autotuner)
    assert holds_autotuner(types.SimpleNamespace(kernel=tuned_add), autotuner)
    assert holds_autotuner(types.SimpleNamespace(kernel=triton.heuristics({"X": lambda a: 1})(tuned_add)), autotuner)



# Run in a fresh Python: TRITON_INTERPRET must be set before triton is first imported, which this
# module cannot promise (pytest may have imported triton for another module).
MEND = """
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import numpy, torch, triton
import triton.runtime.interpreter as interpreter
from grader.triton import child, probe
sys.modules["tritonprobe"] = probe
current = interpreter._patch_lang_tensor
def as_in_triton_3_6(tensor, scope):  # Triton 3.6's own line: int() of an array of shape (1,)
    current(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))
interpreter._patch_lang_tensor = as_in_triton_3_6
print(repr(child._loop_probe(torch)))
print(repr(child._interpreter_ready(torch, triton, numpy)))
print(repr(child._loop_probe(torch)), child._mend_index(interpreter))
"""


def test_an_interpreter_broken_as_triton_3_6_is_with_numpy_2_4_is_mended_before_the_student_loads():
    import subprocess
    import sys

    import numpy

    if tuple(int(p) for p in numpy.__version__.split(".")[:2]) < (2, 4):
        pytest.skip("NumPy before 2.4 converts a one-element array to an int: nothing to mend")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", MEND], capture_output=True, text=True, timeout=120, env=env)
    broken, ready, after = done.stdout.splitlines()[-3:]
    assert "only 0-dimensional arrays" in broken, done.stderr[-2000:]
    assert ready == "''"  # mended, then the probe passes
    assert after == "'' False"  # and mended once only


def test_an_interpreter_that_still_fails_after_the_mend_is_the_graders_fault(monkeypatch):
    import numpy

    from grader.triton import child

    monkeypatch.setattr(child, "_loop_probe", lambda torch: "TypeError: something else")
    monkeypatch.setattr(child, "_mend_index", lambda interpreter: True)
    problem = child._interpreter_ready(torch, triton, numpy)
    assert problem.startswith("grader fault: Triton") and "something else" in problem
