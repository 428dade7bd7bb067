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
