"""The child's comparison with the reference (grader.run.child.comparison.compare) on outputs an exact spec rejects."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from grader.exercise import load
from grader.run.child.comparison import compare

ROOT = Path(__file__).resolve().parents[1]


def test_an_exact_comparison_that_fails_reports_a_json_safe_ratio():
    """histogram's bins are compared exactly (no tolerance): a wrong count's ratio to the allowed error
    is infinite, and the record must still be JSON (the child writes it with allow_nan=False). Before,
    the child crashed and the student read a traceback instead of "wrong at n = ...". """
    spec = load(ROOT / "exercises" / "histogram").spec
    want = np.arange(256, dtype=np.float64)
    got = want.astype(np.uint32) + np.uint32(3_000_000_000)  # what uninitialised private bins give
    result = compare(spec, {"n": 1000}, {"bins": got}, {"bins": want}, {"bins": np.abs(want)})
    assert not result["ok"] and result["bad"] == 256
    assert result["worst_ratio"] == "inf"
    json.dumps(result, allow_nan=False)


def _plain_compare(want, have, allowed):
    """What compare reports about one output, the slow and obvious way: every element looked at."""
    err = np.abs(have - want)
    wrong = ~(err <= allowed)
    finite = np.isfinite(err)
    worst = 0.0
    if finite.any():
        worst = max(worst, float(np.max(err[finite] / np.maximum(allowed[finite], 1e-300))))
    first = [int(i) for i in np.argwhere(wrong)[0]] if wrong.any() else None
    return int(wrong.sum()), worst, first


def test_compare_names_the_first_wrong_element_and_the_worst_ratio_as_the_plain_way_does():
    """The fast comparison (whole-array operations, argmax for the first wrong element) against a
    plain one, on outputs with scattered errors, NaN, inf and exact elements, under a tolerance and
    an exact spec."""
    for exercise, shape, sizes, name in (("level2", (37, 37), {"N": 37}, "C"), ("histogram", (256,), {"n": 1000}, "bins")):
        spec = load(ROOT / "exercises" / exercise).spec
        rng = np.random.default_rng(7)
        for trial in range(20):
            want = rng.uniform(-1, 1, size=shape)
            have = want + rng.choice([0.0, 1e-9, 0.5], size=shape, p=[0.8, 0.15, 0.05])
            flat = have.reshape(-1)
            for value in rng.choice([np.nan, np.inf, -np.inf], size=trial % 4):
                flat[rng.integers(flat.size)] = value
            if trial == 0:
                have = want.copy()  # nothing wrong: no first element, ratio from the exact ones
            result = compare(spec, sizes, {name: have.astype(np.float32)}, {name: want}, {name: np.abs(want)})
            got = have.astype(np.float32).astype(np.float64)
            terms = sizes.get("N", 1)
            tol = spec.tolerance
            allowed = tol.atol + tol.rtol * np.abs(want) + tol.ulps * 2.0**-24 * max(terms, 1.0) * np.abs(want)
            with np.errstate(invalid="ignore", over="ignore"):
                bad, worst, first = _plain_compare(want, got, allowed)
            assert result["bad"] == bad
            assert (result["first"] or {}).get("index") == first
            assert result["worst_ratio"] == (round(worst, 4) if np.isfinite(worst) else str(worst))


def test_comparing_in_slices_reports_what_one_pass_over_the_whole_output_does(monkeypatch):
    """compare works through a large output a slice at a time (comparison.CHUNK elements); slices of 7
    elements, across row ends and several outputs, give the same record, down to the first wrong
    element's index and the worst ratio, as one slice for everything."""
    from grader.run.child import comparison

    spec = load(ROOT / "exercises" / "level2").spec
    rng = np.random.default_rng(11)
    want = rng.uniform(-1, 1, size=(23, 23))
    firsts = []
    for trial in range(12):
        have = (want + rng.choice([0.0, 1e-9, 0.5], size=want.shape, p=[0.9, 0.07, 0.03])).astype(np.float32)
        flat = have.reshape(-1)
        for value in rng.choice([np.nan, np.inf], size=trial % 3):
            flat[rng.integers(flat.size)] = value
        args = (spec, {"N": 23}, {"C": flat}, {"C": want}, {"C": np.abs(want) + 1.0})
        monkeypatch.setattr(comparison, "CHUNK", 7)
        sliced = compare(*args)
        monkeypatch.setattr(comparison, "CHUNK", 1 << 20)
        assert sliced == compare(*args)
        firsts.append(sliced["first"])
    # the trials did find wrong elements, some of them past the first slice
    assert any(f is not None and f["index"][0] * 23 + f["index"][1] >= 7 for f in firsts), firsts
