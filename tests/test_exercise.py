"""grader.exercise.Harness: the float64 reference on the CPU and, through an array module, on a GPU."""
from __future__ import annotations

import contextlib
import types
from pathlib import Path

import numpy as np

from grader.exercise import Harness, load
from grader.staff import conventions
from grader.staff.conventions import DeviceArray

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


def test_every_timed_exercise_s_harness_runs_on_arrays_that_refuse_numpy():
    """The timing computes its float64 reference with the harness's own code on CuPy arrays (milliseconds
    on the GPU, against up to seconds of CPU); a harness that converts to NumPy falls back to the CPU.
    Each course exercise's harness runs on the stand-in and gives exactly the CPU's values (the GPU's
    own float64 sums may differ in the last bits: tests/gpu/test_timing.py compares those); `grade
    validate` holds a course's own exercise to the same convention (grader.staff.conventions)."""
    with contextlib.suppress(TypeError):
        np.ascontiguousarray(DeviceArray(np.ones(2)))
        raise AssertionError("the stand-in must refuse conversion, as CuPy does")
    for exercise in sorted(ROOT.glob("exercises/*/spec.toml")):
        loaded = load(exercise.parent)
        assert conventions.harness_on_device(loaded) == [], loaded.id


def test_a_harness_that_converts_to_numpy_breaks_the_convention(tmp_path):
    import shutil

    folder = tmp_path / "exercises" / "vector_add"
    shutil.copytree(ROOT / "exercises" / "vector_add", folder)
    (folder / "harness.py").write_text((folder / "harness.py").read_text() + """

def magnitude(inputs, sizes):
    return {"out": np.ascontiguousarray(abs(inputs["x"]) + abs(inputs["y"]), dtype=np.float64)}
""")
    problems = conventions.harness_on_device(load(folder))
    assert len(problems) == 1 and "does not run on CuPy arrays" in problems[0]
