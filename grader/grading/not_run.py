"""The tests and not-run entries of a kernel exercise that was not graded, in whole or in part: each
check listed with its points and the exercise's policy, so a results document never has a hole."""
from __future__ import annotations

from typing import Sequence

from ..checks import NAMES
from ..checks.hidden import NAME as HIDDEN_NAME
from ..results import NotRun, TestResult
from ..spec import Spec


def grader_broken(spec: Spec, problem: str) -> tuple[list[TestResult], list[NotRun]]:
    """Nothing graded because the grader's own compiler is missing or broken: every check listed as
    not run by the grader's fault (no points lost), and no test failed."""
    reason = f"the grader could not compile anything here ({problem}); this is the grader's problem, not your submission's"
    return [], every_check_not_run(spec, list(spec.checks), reason, grader_fault=True)


def every_check_not_run(spec: Spec, categories: Sequence[str], reason: str, *, policy: str | None = None,
                        grader_fault: bool = False, detail: str = "") -> list[NotRun]:
    """The checks of `categories`, and the hidden tests, listed as not run for one reason, each with
    its points and the exercise's policy for them (or `policy` in its place); `detail` is for staff
    only (results.NotRun)."""
    skipped = [NotRun(NAMES[c], c, reason, spec.checks[c].points, policy or spec.checks[c].if_not_run, grader_fault, detail)
               for c in categories]
    if spec.hidden_tests:
        h = spec.hidden_tests
        skipped.append(NotRun(HIDDEN_NAME, h.category, reason, h.points, policy or h.if_not_run, grader_fault, detail))
    return skipped


def not_compiled(spec: Spec, backend: str, message: str) -> tuple[list[TestResult], list[NotRun]]:
    """Every test of the exercise, failed: the compile test with the reason, the rest as not graded."""
    conf = spec.checks.get("compile")
    tests = [TestResult("Compiles", "compile", 0.0, conf.points if conf else 0.0, False, message,
                        visibility=conf.visibility if conf else "visible")]
    skipped = []
    for category, c in spec.checks.items():
        if category == "performance" and backend != "gpu":
            skipped.append(NotRun(NAMES[category], category, "needs a GPU", c.points, c.if_not_run))
        elif category != "compile":
            tests.append(TestResult(NAMES[category], category, 0.0, c.points, False, "Not graded: the submission did not compile.",
                                    visibility=c.visibility, extra={"gated": True}))
    if spec.hidden_tests:
        h = spec.hidden_tests
        tests.append(TestResult(HIDDEN_NAME, h.category, 0.0, h.points, False, "Not graded: the submission did not compile.",
                                visibility=h.visibility, extra={"gated": True}))
    return tests, skipped
