"""The pages of a batch: reports/<student>.html for each student and the class page, report.html.

Built from what the batch wrote (results/<student>.json) and the submissions themselves, after
grades.csv and the summary: a page that cannot be built never costs a grade. The class page shows
the score histogram, every check's pass rate, the most common failures with the students who have
each (linked to their pages), identical and near-identical submissions, and, where the results
hold GPU timings, traffic against time with the reference solution marked.
"""
from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import plots, similarity
from .display import one_line, shown
from .pages import render, write_page
from .submission_page import LD_SECTORS, ST_SECTORS, page_html

REPORTS = "reports"
CLASS_PAGE = "report.html"
MAX_LISTED = 12  # failures and finding kinds shown on the class page


@dataclass(frozen=True)
class Student:
    """One student as the class page lists them."""

    id: str            # the batch's sanitised id: safe in a file name and a link
    origin: str        # the file or folder name as submitted (shown, escaped)
    status: str
    score: float
    href: str | None   # their page, relative to the class page
    failed: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckRate:
    """How a class did on one test."""

    name: str
    category: str
    passed: int
    failed: int
    gated: int

    @property
    def rate(self) -> float:
        total = self.passed + self.failed + self.gated
        return self.passed / total if total else 0.0


@dataclass(frozen=True)
class ClassPage:
    """Everything the class template shows."""

    exercise: str
    max_score: float
    students: tuple[Student, ...]
    by_status: tuple[tuple[str, int], ...]
    histogram: plots.Plot
    bands: tuple[tuple[str, int], ...]
    rates: tuple[CheckRate, ...]
    rates_plot: plots.Plot | None
    not_run: tuple[tuple[str, str, int], ...]              # (check, reason, students)
    failures: tuple[tuple[str, tuple[Student, ...]], ...]  # (test name, students failing it)
    kinds: tuple[tuple[str, tuple[Student, ...]], ...]     # (finding kind, students who have one)
    identical: tuple[tuple[str, tuple[Student, ...]], ...]
    near: tuple[tuple[Student, Student | str, float], ...]
    scatter: plots.Plot | None
    timings: tuple[tuple[Student, float, float], ...]      # (student, sectors, ms)
    reference: tuple[float, float] | None
    plots_missing: str = ""
    notes: tuple[str, ...] = field(default=())


def write_reports(out: Path, exercise: Any, entries: Sequence[Any], summary: Any, *, python: bool = False) -> Path:
    """Write reports/<student>.html for every entry with a results file, then report.html; return its path.

    `entries` are grader.staff.batch.intake.Entry values, `summary` a grader.staff.batch.record.Summary
    (histogram, identical groups); `python`: the sources are Python (a notebook's graded text is then
    its definitions), as the exercise's kind says.
    """
    out = Path(out)
    folder = out / REPORTS
    folder.mkdir(exist_ok=True)
    students, documents, sources, notes = [], {}, {}, []
    for entry in entries:
        results_path = out / "results" / f"{entry.student}.json"
        try:
            doc = json.loads(results_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            students.append(Student(entry.student, one_line(entry.origin), "grader-error", 0.0, None))
            continue
        source, problem = _source(entry, python=python)
        if source is not None:
            sources[entry.student] = source
        href = f"{REPORTS}/{entry.student}.html"
        try:
            _write_student_page(out, entry, doc, source, problem)
        except Exception as exc:  # noqa: BLE001 - one page the report writer could not build must not stop the others
            notes.append(f"the page of {entry.student} could not be built ({type(exc).__name__}: {one_line(exc, 200)})")
            href = None
        documents[entry.student] = doc
        failed = tuple(one_line(t["name"]) for t in doc.get("tests", [])
                       if t.get("status") == "failed" and not (t.get("extra_data") or {}).get("gated"))
        status = (doc.get("extra_data", {}).get("batch") or {}).get("status", "graded")
        students.append(Student(entry.student, one_line(entry.origin), one_line(status), float(doc.get("score", 0)), href, failed))
    page = build(exercise, students, documents, sources, summary, notes)
    return write_page(render("class.html.j2", page=page, title=f"{page.exercise}: class report"), out / CLASS_PAGE)


def write_student_page(out: Path, entry: Any, python: bool = False) -> None:
    """reports/<student>.html from results/<student>.json and the submission, unless the page is
    already newer than both. The batch calls it as each result lands (grader.report.page_stream), so
    that write_reports, after the last grading, finds those pages fresh and writes only the rest.
    Raises what went wrong (write_reports, which tries again, records it on the class page)."""
    doc = json.loads((Path(out) / "results" / f"{entry.student}.json").read_text(encoding="utf-8"))
    source, problem = _source(entry, python=python)
    _write_student_page(Path(out), entry, doc, source, problem)


def _write_student_page(out: Path, entry: Any, doc: Mapping[str, Any], source: str | None, problem: str) -> None:
    page = out / REPORTS / f"{entry.student}.html"
    if not _fresh(page, out / "results" / f"{entry.student}.json", entry.source):
        write_page(page_html(doc, source, source_problem=problem, back=f"../{CLASS_PAGE}"), page)


def build(exercise: Any, students: Sequence[Student], documents: Mapping[str, Mapping[str, Any]],
          sources: Mapping[str, str], summary: Any, notes: Sequence[str] = ()) -> ClassPage:
    """The class page's content from each student's results document and source."""
    by_id = {s.id: s for s in students}
    max_score = float(summary.max_total or exercise.spec.max_score)
    rates = _rates(documents)
    not_run = Counter((one_line(n.get("name", "")), shown(n.get("reason", "")))
                      for doc in documents.values() for n in doc.get("extra_data", {}).get("not_run", []))
    failing: dict[str, list[Student]] = {}
    for s in students:
        for name in s.failed:
            failing.setdefault(name, []).append(s)
    kinds: dict[str, list[Student]] = {}
    for sid, doc in documents.items():
        seen = {one_line(f.get("kind", "")) for t in doc.get("tests", []) for f in (t.get("extra_data") or {}).get("findings", [])
                if isinstance(f, Mapping)}
        for kind in seen:
            kinds.setdefault(kind, []).append(by_id[sid])
    identical = tuple((one_line(label), tuple(by_id[s] for s in group if s in by_id)) for label, group in summary.identical)
    near = _near(exercise, sources, summary, by_id)
    timings, reference = _timings(documents, by_id)
    scatter = None
    if timings:
        scatter = plots.scatter("Global traffic against time", [(sectors, ms) for _, sectors, ms in timings], reference,
                                "global sectors (load + store)", "median time (ms)")
    return ClassPage(
        exercise=one_line(exercise.spec.id), max_score=max_score, students=tuple(students),
        by_status=tuple((status, n) for status, n in Counter(s.status for s in students).most_common()),
        histogram=plots.histogram(f"Scores of {len(students)} submissions", [s.score for s in students], max_score),
        bands=tuple(summary.histogram), rates=rates,
        rates_plot=plots.rates("Pass rate of every check", [r.name for r in rates], [r.rate for r in rates]) if rates else None,
        not_run=tuple((name, reason, n) for (name, reason), n in not_run.most_common()),
        failures=tuple((name, tuple(group)) for name, group in sorted(failing.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_LISTED]),
        kinds=tuple((kind, tuple(group)) for kind, group in sorted(kinds.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_LISTED]),
        identical=identical, near=near, scatter=scatter, timings=tuple(timings), reference=reference,
        plots_missing=plots.available(), notes=tuple(notes))


def _source(entry: Any, python: bool = False) -> tuple[str | None, str]:
    """What was graded (a notebook's kernel cell or definitions, not its JSON), to show and compare."""
    from ..notebook import graded_source

    if entry.source is None:
        return None, entry.problem
    source, problem = graded_source(entry.source, python=python)
    return (source, "") if source is not None else (None, f"The source is not shown: {problem}")


def _fresh(page: Path, results_path: Path, source: Path | None) -> bool:
    """Whether the page was written after its results and its source last changed (a resumed batch)."""
    try:
        built = page.stat().st_mtime
        return built >= results_path.stat().st_mtime and (source is None or built >= source.stat().st_mtime)
    except OSError:
        return False


def _rates(documents: Mapping[str, Mapping[str, Any]]) -> tuple[CheckRate, ...]:
    order: dict[str, str] = {}
    counts: dict[str, list[int]] = {}
    for doc in documents.values():
        for t in doc.get("tests", []):
            name = one_line(t.get("name", ""))
            order.setdefault(name, one_line((t.get("tags") or [""])[0]))
            c = counts.setdefault(name, [0, 0, 0])
            if t.get("status") == "passed":
                c[0] += 1
            elif (t.get("extra_data") or {}).get("gated"):
                c[2] += 1
            else:
                c[1] += 1
    return tuple(CheckRate(name, category, *counts[name]) for name, category in order.items())


def _near(exercise: Any, sources: Mapping[str, str], summary: Any, by_id: Mapping[str, Student]):
    starter = [t for t in (_read(exercise.skeleton_path),) if t]
    solution = _read(exercise.solution_path)
    known = {"the reference solution": solution} if solution else {}
    skip = similarity.groups_to_pairs([group for _, group in summary.identical])
    # A student identical to the reference is already listed with it.
    skip |= {frozenset((s, "the reference solution")) for label, group in summary.identical if "reference" in label for s in group}
    pairs = similarity.near_identical(sources, starter=starter, known=known, skip=skip)
    return tuple((by_id[p.first], by_id.get(p.second, p.second), p.similarity) for p in pairs)


def _timings(documents: Mapping[str, Mapping[str, Any]], by_id: Mapping[str, Student]):
    """(student, global sectors, median ms) for every student with both a GPU timing and traffic
    counts, and the reference solution's point (its sectors; the median of its timings)."""
    points, ref_sectors, ref_ms = [], [], []
    for sid, doc in documents.items():
        tests = {(t.get("tags") or [""])[0]: t.get("extra_data") or {} for t in doc.get("tests", [])}
        ms = tests.get("performance", {}).get("median_ms")
        traffic = tests.get("traffic", {})
        if not isinstance(ms, Mapping) or not isinstance(traffic.get("submission"), Mapping):
            continue
        mine = sum(float(traffic["submission"].get(m, 0)) for m in (LD_SECTORS, ST_SECTORS))
        if isinstance(ms.get("submission"), (int, float)):
            points.append((by_id[sid], mine, float(ms["submission"])))
        if isinstance(traffic.get("reference"), Mapping) and isinstance(ms.get("reference"), (int, float)):
            ref_sectors.append(sum(float(traffic["reference"].get(m, 0)) for m in (LD_SECTORS, ST_SECTORS)))
            ref_ms.append(float(ms["reference"]))
    reference = (statistics.median(ref_sectors), statistics.median(ref_ms)) if ref_ms else None
    return points, reference


def _read(path: Path | None) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path and path.is_file() else None
    except (OSError, UnicodeDecodeError):
        return None
