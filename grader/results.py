"""Results: the value every check produces, and the Gradescope-format JSON built from them.

The JSON layout is the contract in DESIGN.md; it is validated against
grader/schemas/results.schema.json before it is written, and written atomically.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

import jsonschema

from . import __version__
from .stage_clock import StageTime


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


@dataclass(frozen=True)
class NotRun:
    """A check that cannot run here (e.g. timing without a GPU): listed, never counted as passed."""

    name: str
    category: str
    reason: str


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
    stages: tuple[StageTime, ...] = ()  # the timeline of the grading (grader.stage_clock)

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tests), 4)


def to_json(report: Report) -> dict[str, Any]:
    """The Gradescope-compatible results document; keys outside Gradescope's spec go in extra_data."""
    lines = [f"**{report.exercise}**: {report.score:g} / {report.max_score:g} on the {report.backend} backend ({report.device})."]
    lines += [f"- {note}" for note in report.notes]
    lines += [f"- not run: {n.name}: {n.reason}" for n in report.not_run]
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
            "not_run": [{"name": n.name, "category": n.category, "reason": n.reason} for n in report.not_run],
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


def summary_lines(report: Report, *, color: bool = False) -> Sequence[str]:
    """The human summary: one line per test with its verdict, then what to fix."""
    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    out = [f"{report.exercise} - {report.submission} - backend {report.backend} ({report.device})"]
    for t in report.tests:
        mark = paint("PASS", "32") if t.passed else paint("FAIL", "31")
        out.append(f"  {mark}  {t.name:<34} {t.score:>6.1f} / {t.max_score:<5g} [{t.category}]")
        if not t.passed and t.output:
            out.extend(f"          {line}" for line in t.output.splitlines())
    for n in report.not_run:
        out.append(f"  {paint('SKIP', '33')}  {n.name:<34}   not run: {n.reason}")
    for note in report.notes:
        out.append(f"  note: {note}")
    out.append(f"  score: {round(report.score, 2):g} / {report.max_score:g}   ({report.seconds:.1f} s)")
    return out
