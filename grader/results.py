"""Results: the value every check produces, and the Gradescope-format JSON built from them.

The JSON layout is the contract in DESIGN.md; it is validated against
grader/schemas/results.schema.json before it is written, and written atomically.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

import jsonschema

from . import __version__
from .run.parent.stage_clock import StageTime


@dataclass(frozen=True)
class TestResult:
    """One graded test: a check's verdict in one category."""

    name: str
    category: str
    score: float
    max_score: float
    passed: bool
    output: str
    visibility: str = "visible"
    extra: Mapping[str, Any] = field(default_factory=dict)

    __test__ = False  # not a pytest test class, despite the name


# What happens to the points of a check that did not run here (spec.toml `if_not_run`, per check):
# "exclude" takes them out of the denominator (the default: passing everything that can run gives
# full marks), "award" gives them when every test that did run passed (else none), "zero" keeps
# them in the denominator with none earned.
NOT_RUN_POLICIES = ("exclude", "award", "zero")


@dataclass(frozen=True)
class NotRun:
    """A check that did not run here: listed, never counted as passed.

    Either it cannot run on this backend (timing without a GPU), or a tool of the grader's own is
    missing or broken, or the exercise's own code raised (`grader_fault`: pytest, CuPy, NVRTC, ncu,
    harness.py): never the student's doing. Its `points` are handled by `policy`; a grader fault's
    points always leave the denominator. `detail` (a traceback) is for course staff only: it goes to
    the JSON's extra_data and to stderr, never into the output a student reads.
    """

    name: str
    category: str
    reason: str
    points: float = 0.0
    policy: str = "exclude"
    grader_fault: bool = False
    detail: str = ""


@dataclass(frozen=True)
class Report:
    """Everything one grading produced."""

    exercise: str
    submission: str
    sha256: str | None
    backend: str
    device: str
    tests: tuple[TestResult, ...]
    not_run: tuple[NotRun, ...]
    max_score: float
    seconds: float
    seeds: Mapping[str, int]
    notes: tuple[str, ...] = ()
    student_output: str = ""
    stages: tuple[StageTime, ...] = ()  # the timeline of the grading (grader.run.parent.stage_clock)

    @property
    def raw_score(self) -> float:
        """Points earned in the tests that ran, plus those a policy awards for checks that did not
        (only when every test that ran passed: a check that could not run is no free points)."""
        perfect = bool(self.tests) and all(t.passed for t in self.tests)
        awarded = sum(n.points for n in self.not_run if n.policy == "award" and not n.grader_fault) if perfect else 0.0
        return round(sum(t.score for t in self.tests) + awarded, 4)

    @property
    def raw_max(self) -> float:
        """Points that could be earned here: the exercise's maximum less the points that left the
        denominator (not-run checks under the "exclude" policy, and every grader fault)."""
        return round(self.max_score - sum(n.points for n in self.excluded), 4)

    @property
    def score(self) -> float:
        """The score out of max_score: raw points scaled to the exercise's maximum when some points
        left the denominator (a check that cannot run here), rounded to two decimals."""
        if self.raw_max <= 0:
            return 0.0
        if abs(self.raw_max - self.max_score) < 1e-9:
            return round(self.raw_score, 2)
        return round(self.raw_score / self.raw_max * self.max_score, 2)

    @property
    def excluded(self) -> tuple[NotRun, ...]:
        """The not-run checks whose points left the denominator."""
        return tuple(n for n in self.not_run if n.points and (n.grader_fault or n.policy == "exclude"))

    @property
    def grader_faults(self) -> tuple[NotRun, ...]:
        """Checks that did not run because a tool of the grader's own is missing or broken."""
        return tuple(n for n in self.not_run if n.grader_fault)

    def score_line(self) -> str:
        """`score: 100 / 100 (performance not run here: needs a GPU)`: the score and why it is scaled."""
        text = f"score: {points_text(self.score, min_decimals=0)} / {points_text(self.max_score, min_decimals=0)}"
        if self.excluded:
            # The reason's first clause is enough here; the SKIP line and the JSON carry all of it.
            why = "; ".join(f"{n.name.lower()} not run here: {n.reason.split(' (')[0]}" for n in self.excluded)
            text += f" ({why}; {points_text(self.raw_score, min_decimals=0)} of the {points_text(self.raw_max, min_decimals=0)} points that could run, scaled)"
        return text


def to_json(report: Report) -> dict[str, Any]:
    """The Gradescope-compatible results document; keys outside Gradescope's spec go in extra_data."""
    lines = [f"**{report.exercise}**: {report.score_line()}, on the {report.backend} backend ({report.device})."]
    lines += [f"- {note}" for note in report.notes]
    lines += [f"- not run: {n.name}: {n.reason}" + (" (a problem of the grader's, not of your submission: "
                                                     "these points were not counted against you)" if n.grader_fault else "")
              for n in report.not_run]
    if report.student_output:
        lines += ["", "Output printed by your kernel (capped; it never affects the score):", "```", report.student_output, "```"]
    return {
        "score": report.score,
        "execution_time": round(report.seconds, 3),
        "output": "\n".join(lines),
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": t.name, "score": round(t.score, 4), "max_score": t.max_score,
                "status": "passed" if t.passed else "failed", "output": t.output,
                "visibility": t.visibility, "tags": [t.category, *t.extra.get("tags", ())], "extra_data": dict(t.extra),
            }
            for t in report.tests
        ],
        "extra_data": {
            "max_score": report.max_score, "grader_version": __version__, "backend": report.backend,
            "device": report.device, "exercise": report.exercise, "submission": report.submission,
            "submission_sha256": report.sha256, "seeds": dict(report.seeds),
            "raw_score": report.raw_score, "raw_max_score": report.raw_max,
            "not_run": [{"name": n.name, "category": n.category, "reason": n.reason, "points": n.points,
                         "policy": n.policy, "grader_fault": n.grader_fault, **({"detail": n.detail} if n.detail else {})}
                        for n in report.not_run],
            "stages": [{"name": st.name, "start": st.start, "seconds": st.seconds} for st in report.stages],
        },
    }


def schema() -> dict[str, Any]:
    """The JSON Schema for results documents."""
    return json.loads(resources.files("grader").joinpath("schemas/results.schema.json").read_text())


def validate(document: Mapping[str, Any]) -> None:
    """Raise jsonschema.ValidationError if a results document breaks the contract."""
    jsonschema.Draft202012Validator(schema()).validate(document)


def write_atomic(document: Mapping[str, Any], path: Path) -> None:
    """Validate, then write to a temporary file beside `path` and rename it into place."""
    validate(document)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=2, allow_nan=False)
            f.write("\n")
        # mkstemp makes the file private (0600); results are meant to be read by staff and tools.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def inert(text: str) -> str:
    """Text that may carry a student's characters (compiler output quoting their source, a file name,
    what their kernel printed) made safe to print on a terminal or show in a report: every character
    that is not printable (an escape sequence's ESC, a carriage return that overwrites a line, a
    bidirectional override) becomes "?"; newlines and tabs stay."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else "?" for ch in text)


def points_text(value: float, *, min_decimals: int = 1) -> str:
    """Points as a person reads them: at most two decimals, halves rounded up, trailing zeros
    trimmed down to ``min_decimals`` (1.25 prints as 1.25, 40 as 40.0, 13.333 as 13.33).

    Python's own formatting rounds the binary value half to even, so ``f"{1.25:.1f}"`` is "1.2":
    a student adding up the lines would find points missing.
    """
    value = float(value) + 0.0  # -0.0 reads as 0
    text = str(Decimal(repr(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0").ljust(min_decimals, "0")
    return f"{whole}.{frac}" if frac else whole


def summary_lines(report: Report, *, color: bool = False) -> Sequence[str]:
    """The human summary: one line per test with its verdict, then what to fix.

    Every text in it goes through inert(), whoever built the Report: the only escape sequences that
    reach the terminal are the colours painted here.
    """
    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    out = [inert(f"{report.exercise} - {report.submission} - backend {report.backend} ({report.device})")]
    for t in report.tests:
        mark = paint("PASS", "32") if t.passed else paint("FAIL", "31")
        out.append(f"  {mark}  {inert(t.name):<34} {points_text(t.score):>6} / {points_text(t.max_score, min_decimals=0):<5} [{inert(t.category)}]")
        if not t.passed and t.output:
            out.extend(f"          {line}" for line in inert(t.output).splitlines())
    for n in report.not_run:
        fault = paint(" (the grader's problem, not your submission's)", "31") if n.grader_fault else ""
        out.append(f"  {paint('SKIP', '33')}  {inert(n.name):<34}   not run: {inert(n.reason)}{fault}")
    for note in report.notes:
        out.append(f"  note: {inert(note)}")
    out.append(f"  {report.score_line()}   ({report.seconds:.1f} s)")
    return out
