"""The tolerance of a Triton exercise whose reference uses tl.dot admits TF32 and refuses fp16.

On a GPU an fp32 tl.dot runs on TF32 tensor cores: each input keeps 10 mantissa bits (rounded, or
truncated when the tensor cores read fp32 registers) and the products are summed in fp32. Here that
is simulated in NumPy on the exercise's own inputs at every public and hidden size: both roundings
must land within the spec's tolerance of harness.py's float64 reference, and tiles cast to fp16 must
not (the harness's inputs are chosen so that fp16 fails)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from grader.exercise import load

ROOT = Path(__file__).resolve().parent.parent
DOT_EXERCISES = sorted(p.parent.name for p in (ROOT / "exercises").glob("triton_*/spec.toml")
                       if "tl.dot" in (ROOT / "reference" / p.parent.name / "solution.py").read_text())


def harness(exercise):
    spec = importlib.util.spec_from_file_location(f"precision_harness_{exercise.id}", exercise.root / "harness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tf32(x: np.ndarray, rounding: str) -> np.ndarray:
    """fp32 values kept to TF32's 10 mantissa bits: rounded to nearest (ties away) or truncated."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    if rounding == "nearest":
        bits = bits + 0x1000
    return (bits & 0xFFFFE000).astype(np.uint32).view(np.float32)


def fp32_sum_of_products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b with each product rounded to fp32 and summed in fp32, one k at a time."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        acc += (a[:, k:k + 1].astype(np.float64) * b[k:k + 1, :]).astype(np.float32)
    return acc


def within(got: np.ndarray, expected: np.ndarray, spec) -> bool:
    return bool(np.all(np.abs(got.astype(np.float64) - expected) <= spec.atol + spec.rtol * np.abs(expected)))


def cases(name):
    ex = load(ROOT / "exercises" / name)
    return ex, [*ex.spec.public_cases, *(c for c in ex.spec.hidden_cases if c not in ex.spec.public_cases)]


def test_the_matmul_exercise_is_among_the_ones_checked():
    assert "triton_matmul" in DOT_EXERCISES


@pytest.mark.parametrize("name", DOT_EXERCISES)
@pytest.mark.parametrize("rounding", ["nearest", "truncated"])
def test_tf32_products_summed_in_fp32_are_within_the_tolerance(name, rounding):
    ex, sizes_list = cases(name)
    h = harness(ex)
    for sizes in sizes_list:
        inputs = h.make_inputs(sizes, np.random.default_rng(1))
        (a, b), (out,) = inputs.values(), h.reference(inputs, sizes).values()
        got = fp32_sum_of_products(tf32(a, rounding), tf32(b, rounding))
        assert within(got, out, ex.spec), f"{sizes}: TF32 ({rounding}) is outside the tolerance"


@pytest.mark.parametrize("name", DOT_EXERCISES)
def test_tiles_cast_to_fp16_are_outside_the_tolerance(name):
    ex, sizes_list = cases(name)
    h = harness(ex)
    wrong = []
    for sizes in ex.spec.public_cases:
        inputs = h.make_inputs(sizes, np.random.default_rng(1))
        (a, b), (out,) = inputs.values(), h.reference(inputs, sizes).values()
        with np.errstate(over="ignore", invalid="ignore"):
            got = a.astype(np.float16).astype(np.float32) @ b.astype(np.float16).astype(np.float32)
        wrong.append(not within(got, out, ex.spec))
    assert any(wrong), "fp16 tiles pass every public size: the harness's inputs do not show fp16"
