"""Results documents for a submission that could not be graded: no file, several files, a timeout,
a grader that died.

Course-staff tools (batch grading, the Gradescope runner) must still write one schema-valid
results document per submission, with every test of the exercise listed as failed and the reason
in words, so a gradebook never has a hole and a student never sees "the autograder failed".
"""
from __future__ import annotations

import dataclasses
from typing import Any

from .exercise import Exercise
from .kinds.registry import kind_of
from .results import Report, to_json


def ungraded_document(exercise: Exercise, reason: str, *, backend: str = "none", device: str = "none",
                      submission: str = "", sha256: str | None = None, seconds: float = 0.0,
                      seeds: dict[str, int] | None = None) -> dict[str, Any]:
    """Every test of the exercise at 0 with `reason` on the first test; validates against the results schema.

    backend is "gpu" or "emu" when grading started and was cut short, "none" when nothing ran.
    """
    # The same shape api.grade gives a submission refused before compiling, so columns line up.
    tests, not_run = kind_of(exercise).not_graded(exercise, backend, reason)
    gated = "Not graded: " + reason.splitlines()[0] if reason.strip() else "Not graded."
    tests = [t if i == 0 else dataclasses.replace(t, output=gated) for i, t in enumerate(tests)]
    report = Report(exercise=exercise.spec.id, submission=submission, sha256=sha256, backend=backend, device=device,
                    tests=tuple(tests), not_run=tuple(not_run), max_score=exercise.spec.max_score,
                    seconds=max(seconds, 0.0), seeds=dict(seeds or {}), notes=(reason.splitlines()[0],) if reason.strip() else ())
    return to_json(report)
