"""The child's comparison with the reference (grader.run.child.runner.compare) on outputs an exact spec rejects."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from grader.exercise import load
from grader.run.child.runner import compare

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
