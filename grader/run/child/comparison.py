"""Outputs against the float64 reference, under the exercise's tolerance: the verdict of one launch
(and of each timed call, grader.run.child.timing), naming the first wrong element."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ... import expressions
from ...backends.base import untouched
from ...spec import Spec
from .cases import Case


def compare(spec: Spec, sizes: Mapping[str, int], got: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
            magnitude: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Compare outputs with the float64 reference under the spec's tolerance; name the first bad element."""
    tol = spec.tolerance
    terms = float(expressions.evaluate(tol.terms, sizes))
    total = bad = nan = kept = 0
    first = None
    worst = 0.0
    poisoned = {p.name for p in spec.kernel.params if p.role == "out"}  # filled with the poison pattern
    for name, want in expected.items():
        if name in poisoned:
            kept += int(np.count_nonzero(untouched(got[name])))
        have = got[name].astype(np.float64).reshape(want.shape)
        allowed = tol.atol + tol.rtol * np.abs(want) + tol.ulps * 2.0**-24 * max(terms, 1.0) * magnitude[name]
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(have - want)
            wrong = ~(err <= allowed)  # NaN and inf count as wrong
        total += want.size
        count = int(np.count_nonzero(wrong))
        bad += count
        nan += int(np.count_nonzero(np.isnan(have)))
        # The worst ratio of error to tolerance over the finite errors; an exact comparison allows 0,
        # so a wrong element's ratio to the floor overflows to inf. (Whole-array operations with
        # `where=`: a large output is compared in milliseconds, not in copies of its finite part.)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ratio = err / np.maximum(allowed, 1e-300)
        highest = np.max(ratio, where=np.isfinite(err), initial=-np.inf)
        if highest != -np.inf:  # some error was finite (a NaN here is kept, as before)
            worst = max(worst, float(highest))
        if count and first is None:
            # argmax of a boolean array is its first True: the first wrong element in C order
            idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(wrong)), wrong.shape))
            first = {"param": name, "index": list(idx), "got": _num(have[idx]), "want": _num(want[idx]), "tol": _num(allowed[idx])}
    # nan counts every NaN; untouched only those still holding the grader's pattern (never written)
    return {"ok": bad == 0, "bad": bad, "total": total, "nan": nan, "untouched": kept, "first": first,
            "worst_ratio": _num(round(worst, 4))}  # "inf" where an exact comparison failed


def _num(x: Any) -> float | str:
    x = float(x)
    return x if np.isfinite(x) else str(x)


def compared(case: Case, spec: Spec, sizes: Mapping[str, int], outputs: Mapping[str, np.ndarray], digest: str) -> dict[str, Any]:
    """The comparison of these outputs with the case's reference; outputs identical to ones already
    compared (the same digest: a repeated launch that gave the same bits) reuse that comparison."""
    if digest not in case.compared:
        case.compared[digest] = compare(spec, sizes, outputs, case.expected, case.magnitude)
    return case.compared[digest]
