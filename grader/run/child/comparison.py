"""Outputs against the float64 reference, under the exercise's tolerance: the verdict of one launch
(and of each timed call, grader.run.child.timing), naming the first wrong element."""
from __future__ import annotations

import hashlib
from typing import Any, Mapping

import numpy as np

from ... import expressions
from ...backends.base import untouched
from ...spec import Spec
from .cases import Case


# Elements compared at a time. A slice's float64 temporaries (8 MiB each) come back from the heap
# for the next slice and stay in the caches; whole-array ones for a 16-million-element output are
# 128 MiB each, mapped afresh from the kernel, page by page, for every comparison (1.5 CPU-s for a
# 4096 x 4096 output against about 0.05 s for 2048 x 2048).
CHUNK = 1 << 20


def compare(spec: Spec, sizes: Mapping[str, int], got: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
            magnitude: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Compare outputs with the float64 reference under the spec's tolerance; name the first bad element."""
    tol = spec.tolerance
    terms = float(expressions.evaluate(tol.terms, sizes))
    scale = tol.ulps * 2.0**-24 * max(terms, 1.0)
    total = bad = nan = kept = 0
    first = None
    box: dict[str, Any] | None = None       # the box of wrong indices of the first output with any
    kept_box: dict[str, Any] | None = None  # the same for its elements never written
    worst = 0.0
    poisoned = {p.name for p in spec.kernel.params if p.role == "out"}  # filled with the poison pattern
    for name, want in expected.items():
        never = None
        if name in poisoned:
            never = untouched(got[name])
            kept += int(np.count_nonzero(never))
            if kept_box is None and np.any(never):
                kept_box = _box(name, np.ascontiguousarray(never).reshape(-1), 0, want.shape, None)
        if np.size(got[name]) != want.size:
            raise ValueError(f"{name}: {np.size(got[name])} elements to compare with {want.size}")
        have_all = np.ascontiguousarray(got[name]).reshape(-1)
        want_all = np.ascontiguousarray(want).reshape(-1)
        size_all = np.ascontiguousarray(np.broadcast_to(magnitude[name], want.shape)).reshape(-1)
        total += want.size
        for start in range(0, want.size, CHUNK):
            have = have_all[start:start + CHUNK].astype(np.float64)
            want_part = want_all[start:start + CHUNK]
            allowed = tol.atol + tol.rtol * np.abs(want_part) + scale * size_all[start:start + CHUNK]
            with np.errstate(invalid="ignore", over="ignore"):
                err = np.abs(have - want_part)
                wrong = ~(err <= allowed)  # NaN and inf count as wrong
            count = int(np.count_nonzero(wrong))
            bad += count
            nan += int(np.count_nonzero(np.isnan(have)))
            # The worst ratio of error to tolerance over the finite errors; an exact comparison allows
            # 0, so a wrong element's ratio to the floor overflows to inf.
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                ratio = err / np.maximum(allowed, 1e-300)
            highest = np.max(ratio, where=np.isfinite(err), initial=-np.inf)
            if highest != -np.inf:  # some error was finite (a NaN here is kept, as before)
                worst = max(worst, float(highest))
            if count and (box is None or box["param"] == name):
                box = _box(name, wrong, start, want.shape, box)
            if count and first is None:
                # argmax of a boolean array is its first True: the first wrong element in C order
                at = int(np.argmax(wrong))
                idx = [int(i) for i in np.unravel_index(start + at, want.shape)]
                first = {"param": name, "index": idx, "got": _num(have[at]), "want": _num(want_part[at]), "tol": _num(allowed[at])}
    # nan counts every NaN; untouched only those still holding the grader's pattern (never written)
    out = {"ok": bad == 0, "bad": bad, "total": total, "nan": nan, "untouched": kept, "first": first,
           "worst_ratio": _num(round(worst, 4))}  # "inf" where an exact comparison failed
    if box is not None:  # where the wrong elements lie: advice names the pattern (grader.checks.evidence)
        out["box"] = box
    if kept_box is not None:
        out["untouched_box"] = kept_box
    return out


def _box(name: str, flags: np.ndarray, start: int, shape: tuple[int, ...], box: dict[str, Any] | None) -> dict[str, Any]:
    """`box` grown by the set flags of a flat slice starting at `start`: per dimension the lowest and
    highest index, and the count of flagged elements."""
    at = np.flatnonzero(flags) + start
    idx = np.unravel_index(at, shape) if len(shape) > 1 else (at,)
    lo = [int(i.min()) for i in idx]
    hi = [int(i.max()) for i in idx]
    if box is not None:
        lo = [min(a, b) for a, b in zip(lo, box["lo"])]
        hi = [max(a, b) for a, b in zip(hi, box["hi"])]
    return {"param": name, "lo": lo, "hi": hi, "count": int(at.size) + (box["count"] if box else 0)}  # "inf" where an exact comparison failed


def _num(x: Any) -> float | str:
    x = float(x)
    return x if np.isfinite(x) else str(x)


def compared(case: Case, spec: Spec, sizes: Mapping[str, int], outputs: Mapping[str, np.ndarray], digest: str) -> dict[str, Any]:
    """The comparison of these outputs with the case's reference; outputs identical to ones already
    compared (the same digest: a repeated launch that gave the same bits) reuse that comparison."""
    if digest not in case.compared:
        case.compared[digest] = compare(spec, sizes, outputs, case.expected, case.magnitude)
    return case.compared[digest]


def output_digest(outputs: Mapping[str, np.ndarray]) -> str:
    """SHA-256 of the outputs' bytes, one after another in the mapping's order: launches that gave the
    same bits share one digest (and one comparison, `compared`)."""
    digest = hashlib.sha256()
    for array in outputs.values():
        digest.update(np.ascontiguousarray(array).data)  # no copy of a large output into one bytes object
    return digest.hexdigest()

