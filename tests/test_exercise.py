"""grader.exercise.Harness: the float64 reference on the CPU and, through an array module, on a GPU."""
from __future__ import annotations

import contextlib
import types
from pathlib import Path

import numpy as np

from grader.exercise import Harness, load

ROOT = Path(__file__).resolve().parent.parent
# NumPy standing in for CuPy: the same calls reference_on_device makes (CuPy's asnumpy downloads).
NUMPY_AS_CUPY = types.SimpleNamespace(asarray=np.asarray, float64=np.float64, abs=np.abs, asnumpy=np.asarray)


def test_the_reference_through_an_array_module_is_the_plain_one():
    for exercise_id, sizes in (("level2", {"N": 37}), ("softmax", None)):  # a magnitude of its own; |expected|
        exercise = load(ROOT / "exercises" / exercise_id)
        sizes = sizes or dict(exercise.spec.cases_for("emu")[-1])
        harness = Harness(exercise)
        inputs = harness.make_inputs(sizes, np.random.default_rng(3))
        want = harness.reference(inputs, sizes)
        got, magnitude = harness.reference_on_device(NUMPY_AS_CUPY, inputs, sizes)
        assert got.keys() == want.keys()
        for name in want:
            assert np.array_equal(got[name], want[name])
            assert np.array_equal(magnitude[name], harness.magnitude(inputs, sizes, want)[name])


def test_a_harness_that_cannot_run_on_the_gpu_is_computed_on_the_cpu():
    """The timing asks for the reference on the GPU; a harness whose code converts to NumPy (CuPy then
    raises) is computed on the CPU instead, and every block the attempt used is zeroed either way."""
    from grader.run.child.cases import Case
    from grader.run.child.timing import _checked_case

    class Refusing:
        def asarray(self, *args, **kwargs):
            raise TypeError("Implicit conversion to a NumPy array is not allowed")

        cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=lambda: None))

    class Memory:
        zeroed = 0

        def zero(self, kept):
            self.zeroed += 1

    device = types.SimpleNamespace(using=contextlib.nullcontext)
    exercise = load(ROOT / "exercises" / "level2")
    harness = Harness(exercise)
    sizes = {"N": 9}
    inputs = harness.make_inputs(sizes, np.random.default_rng(5))
    memory = Memory()
    case, where = _checked_case(Case(inputs), harness, device, sizes, memory, Refusing())
    assert where == "cpu" and memory.zeroed == 1
    assert np.array_equal(case.expected["C"], harness.reference(inputs, sizes)["C"])
    assert case.inputs is inputs and case.magnitude["C"].shape == (9, 9)


class _DeviceArray(np.lib.mixins.NDArrayOperatorsMixin):
    """An array that behaves as CuPy's does in the respect that matters to a harness: NumPy hands its
    operators and functions on it back to it, and it refuses to be converted to a NumPy array
    implicitly (np.ascontiguousarray(x), np.array([x[0] + 1]) raise TypeError, as with CuPy)."""

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs)))

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    def __getattr__(self, name):
        if name.startswith("__"):  # no __array_interface__ and the like: NumPy must not see through it
            raise AttributeError(name)
        attr = getattr(self._data, name)
        return (lambda *a, **k: _wrap(attr(*_unwrap(a), **_unwrap(k)))) if callable(attr) else _wrap(attr)

    def __getitem__(self, key):
        return _wrap(self._data[_unwrap(key)])

    def __float__(self) -> float:  # CuPy reads a one-element array back for float()
        return float(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _wrap(value):
    # CuPy gives 0-d arrays where NumPy gives scalars (x[0], x.sum()): so does the stand-in.
    if isinstance(value, np.generic):
        return _DeviceArray(np.asarray(value))
    return _DeviceArray(value) if isinstance(value, np.ndarray) else value


def _unwrap(value):
    if isinstance(value, _DeviceArray):
        return value._data
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


# A stand-in for CuPy on the CPU: what reference_on_device uses of it, on arrays that refuse NumPy.
STRICT_CUPY = types.SimpleNamespace(asarray=lambda v, dtype=None: _DeviceArray(np.array(_unwrap(v), dtype=dtype)),
                                    float64=np.float64, abs=lambda v: _wrap(np.abs(_unwrap(v))),
                                    asnumpy=lambda v: np.asarray(_unwrap(v)))


def test_every_timed_exercise_s_harness_runs_on_arrays_that_refuse_numpy():
    """The timing computes its float64 reference with the harness's own code on CuPy arrays (milliseconds
    on the GPU, against up to seconds of CPU); a harness that converts to NumPy falls back to the CPU.
    Each course exercise's harness runs on the stand-in and gives exactly the CPU's values (the GPU's
    own float64 sums may differ in the last bits: tests/gpu/test_timing.py compares those)."""
    with contextlib.suppress(TypeError):
        np.ascontiguousarray(_DeviceArray(np.ones(2)))
        raise AssertionError("the stand-in must refuse conversion, as CuPy does")
    for exercise in sorted(ROOT.glob("exercises/*/spec.toml")):
        loaded = load(exercise.parent)
        if loaded.kind == "python" or "performance" not in loaded.spec.checks:
            continue
        sizes = dict(loaded.spec.cases_for("emu")[-1])
        harness = Harness(loaded)
        inputs = harness.make_inputs(sizes, np.random.default_rng(11))
        want = harness.reference(inputs, sizes)
        got, magnitude = harness.reference_on_device(STRICT_CUPY, inputs, sizes)
        for name in want:
            assert np.array_equal(got[name], want[name]), (loaded.id, name)
            assert got[name].flags.c_contiguous and want[name].flags.c_contiguous, (loaded.id, name)
            assert np.array_equal(magnitude[name], harness.magnitude(inputs, sizes, want)[name]), (loaded.id, name)
