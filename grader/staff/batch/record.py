"""The record of a batch: results files, resume, the gradebook and the summary.

    results/<student>.json   each student's results document (as `grade --json` writes it), plus
                             extra_data.batch: status, input fingerprint, exercise key, ...
    grades.csv               rebuilt from results/*.json at the end: header, max points, one row per student
    summary.txt, summary.json  score histogram, most failed checks, identical submissions

Every executor ends each grading in record(), which writes its results file atomically. A later
run of the same command skips a student whose results file shows the same submission bytes and the
same exercise key (up_to_date), so an interrupted batch resumes where it stopped; what is recorded,
and what is graded again on resume, is decided here and nowhere else.
"""
from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import io
import json
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Mapping, Sequence

from ... import __version__
from ...errors import UsageError
from ...exercise import Exercise
from ...kinds.registry import kind_of
from ...notebook import graded_source
from ...results import write_atomic
from ...run.parent.isolated import STATUSES, Graded
from ...submission import printable
from ...ungraded import ungraded_document
from .executor import BatchContext, Outcome
from .intake import Entry

RESULTS = "results"
CSV_NAME = "grades.csv"
# The (max) line's last cell where some total is scaled: why the columns fall short of the total.
SCALED_NOTE = ("a check named in this column did not run for that row: its points left the maximum, and the "
               "total is the row's columns x max / scaled from")


@dataclass(frozen=True)
class Row:
    """One student's line in the gradebook, read back from the results file."""

    student: str
    status: str
    total: float
    scores: Mapping[str, float]
    max_scores: Mapping[str, float]
    max_total: float
    failed: tuple[str, ...]
    submitters: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()  # checks whose points left the denominator here (the total is scaled)
    scaled_from: float | None = None  # the points that could run, where not_run made the total a scaled one


@dataclass(frozen=True)
class Summary:
    """What a batch found, for the printed and saved summary."""

    students: int
    max_total: float
    by_status: Mapping[str, int]
    histogram: tuple[tuple[str, int], ...]        # (score band, students)
    failing: tuple[tuple[str, int], ...]          # (test name, students failing it), most first
    identical: tuple[tuple[str, tuple[str, ...]], ...]  # (label, students) for each group of 2+
    stale: tuple[str, ...] = ()                   # results files of students not in this input
    scaled: tuple[tuple[str, float, int], ...] = ()  # (checks not run, points that could run, students) per kind of scaling

    def lines(self) -> list[str]:
        out = [f"{self.students} submissions: " + ", ".join(f"{self.by_status.get(s, 0)} {s}" for s in STATUSES)]
        out.append(f"score histogram (of {self.max_total:g} points):")
        widest = max((n for _, n in self.histogram), default=0) or 1
        for band, n in self.histogram:
            out.append(f"  {band:>11}  {'#' * max(round(30 * n / widest), 1 if n else 0):<30} {n}")
        if self.failing:
            out.append("most often failed checks:")
            out += [f"  {n:>4}  {name}" for name, n in self.failing]
        if self.identical:
            out.append("identical submissions (same source once comments and whitespace are removed):")
            out += [f"  {label}: {', '.join(group)}" for label, group in self.identical]
        for checks, ran, n in self.scaled:
            out.append(f"note: {n} total(s) are scaled: {checks} did not run for them, so their columns in "
                       f"{CSV_NAME} add up to at most {ran:g} and the total is that sum x {self.max_total:g} / {ran:g} "
                       "(the column \"scaled from\")")
        if self.stale:
            out.append(f"note: {len(self.stale)} results file(s) belong to no submission in this input and were left out: "
                       + ", ".join(self.stale[:10]) + (" ..." if len(self.stale) > 10 else ""))
        return out

    def to_json(self) -> dict[str, Any]:
        return {"students": self.students, "max_total": self.max_total, "by_status": dict(self.by_status),
                "histogram": [{"band": b, "students": n} for b, n in self.histogram],
                "failing": [{"test": t, "students": n} for t, n in self.failing],
                "identical": [{"label": label, "students": list(g)} for label, g in self.identical],
                "stale": list(self.stale),
                "scaled": [{"not_run": c, "scaled_from": r, "students": n} for c, r, n in self.scaled]}


def exercise_key(exercise: Exercise, backend: str) -> str:
    """Changes when anything that decides a grade changes: the exercise's files, the backend, the grader."""
    h = hashlib.sha256(f"{__version__}\0{backend}\0".encode())
    files = sorted(p for p in exercise.root.rglob("*") if p.is_file()
                   and not any(part == "__pycache__" or part.startswith(".") for part in p.relative_to(exercise.root).parts))
    if exercise.solution_path.is_file():
        files.append(exercise.solution_path)
    for p in files:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def unsubmitted(ctx: BatchContext, entry: Entry) -> Graded:
    """The verdict of a student with no gradable file (none, or several)."""
    return Graded("compile-error", ungraded_document(ctx.exercise, entry.problem, submission=printable(entry.origin)), 0.0)


def record(ctx: BatchContext, entry: Entry, graded: Graded, where: Mapping[str, str] | None = None) -> Outcome:
    """Write one finished grading's results file (atomically), with the batch's own record of it; every
    executor ends each grading here. where says what it ran on (device, and node on a cluster)."""
    document = dict(graded.document)
    extra = dict(document["extra_data"])
    extra["batch"] = {"student": entry.student, "origin": entry.origin, "status": graded.status,
                      "fingerprint": entry.fingerprint, "exercise_key": ctx.key, "timeout_s": ctx.timeout,
                      "submitters": list(entry.submitters), "device": "", **(where or {})}
    document["extra_data"] = extra
    write_atomic(document, ctx.out / RESULTS / f"{entry.student}.json")
    return Outcome(entry.student, graded.status, float(document["score"]), seconds=graded.seconds)


def up_to_date(out: Path, entry: Entry, key: str, timeout: float) -> bool:
    """Graded before, from the same bytes, by the same exercise and grader, and not worth retrying."""
    if entry.source is None:
        return False  # instant to redo, and its message may have changed
    batch = batch_info(out / RESULTS / f"{entry.student}.json")
    if not batch or batch.get("fingerprint") != entry.fingerprint or batch.get("exercise_key") != key:
        return False
    if batch.get("status") == "grader-error":
        return False
    if batch.get("status") == "timeout" and float(batch.get("timeout_s", 0)) < timeout:
        return False  # a longer limit this time may let it finish
    return True


def batch_info(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["extra_data"]["batch"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def lock_folder(out: Path) -> IO[str]:
    """Hold the output folder for this batch (closing the handle lets it go); a usage error while
    another batch holds it."""
    handle = open(out / ".lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise UsageError(f"{out}: another `grade batch` is writing to this folder; wait for it or use another --out") from None
    return handle


# ---------------------------------------------------------------------------------------------
# Gradebook and summary

def write_gradebook(out: Path, entries: Sequence[Entry], exercise: Exercise) -> tuple[Path, Summary]:
    """grades.csv, summary.txt and summary.json, from the results files of `entries`; the gradebook's
    path and the summary."""
    rows, stale = read_rows(out, entries)
    csv_path = write_csv(out / CSV_NAME, rows)
    summary = summarize(rows, entries, exercise, stale)
    write_text(out / "summary.txt", "\n".join(summary.lines()) + "\n")
    write_text(out / "summary.json", json.dumps(summary.to_json(), indent=2) + "\n")
    return csv_path, summary


def read_rows(out: Path, entries: Sequence[Entry]) -> tuple[list[Row], tuple[str, ...]]:
    """One row per entry from its results file (a missing or unreadable one is a grader-error row)."""
    rows = []
    for entry in entries:
        path = out / RESULTS / f"{entry.student}.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            status = doc["extra_data"].get("batch", {}).get("status", "graded")
            scores: dict[str, float] = {}
            maxes: dict[str, float] = {}
            for t in doc["tests"]:
                scores[t["name"]] = scores.get(t["name"], 0.0) + float(t["score"])
                maxes[t["name"]] = maxes.get(t["name"], 0.0) + float(t["max_score"])
            # A test only gated off by an earlier failure (not graded at all) is not a failure of its own.
            failed = tuple(t["name"] for t in doc["tests"] if t["status"] == "failed" and not t["extra_data"].get("gated"))
            excluded = tuple(n["name"] for n in doc["extra_data"].get("not_run", [])
                             if n.get("points") and (n.get("grader_fault") or n.get("policy", "exclude") == "exclude"))
            ran = doc["extra_data"].get("raw_max_score")
            scaled_from = float(ran) if excluded and ran is not None else None
            rows.append(Row(entry.student, status, float(doc["score"]), scores, maxes,
                            float(doc["extra_data"]["max_score"]), failed, entry.submitters, excluded, scaled_from))
        except (OSError, ValueError, KeyError, TypeError):
            rows.append(Row(entry.student, "grader-error", 0.0, {}, {}, 0.0, (), entry.submitters))
    known = {f"{e.student}.json" for e in entries}
    stale = tuple(sorted(p.stem for p in (out / RESULTS).glob("*.json") if p.name not in known))
    return rows, stale


def write_csv(path: Path, rows: Sequence[Row]) -> Path:
    """id, total, scaled from, one column per test, status, submitters, not run; the second line holds
    the maximum points, as in the results JSON. A check that did not run (performance without a GPU)
    has no column of its own: its points left the denominator, so a row's columns add up to at most
    `scaled from` (the points that could run) and its total is their sum x max / scaled from. The
    (max) line says so in its last cell, so that a gradebook whose columns fall short of the total
    explains itself."""
    tests: list[str] = []
    maxes: dict[str, float] = {}
    for row in rows:
        for name, m in row.max_scores.items():
            if name not in maxes:
                tests.append(name)
            maxes[name] = max(maxes.get(name, 0.0), m)
    max_total = max((r.max_total for r in rows), default=0.0)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    note = SCALED_NOTE if any(r.scaled_from is not None for r in rows) else ""
    w.writerow(["id", "total", "scaled from", *map(spreadsheet_text, tests), "status", "submitters", "not run (total scaled)"])
    w.writerow(["(max)", _num(max_total), "", *(_num(maxes[t]) for t in tests), "", "", note])
    for r in rows:
        # A grader error is no verdict: its total stays empty rather than read as a zero.
        total = "" if r.status == "grader-error" else _num(r.total)
        scaled = "" if r.scaled_from is None else _num(r.scaled_from)
        w.writerow([spreadsheet_text(r.student), total, scaled, *(_num(r.scores[t]) if t in r.scores else "" for t in tests),
                    spreadsheet_text(r.status), spreadsheet_text("; ".join(r.submitters)), spreadsheet_text("; ".join(r.not_run))])
    write_text(path, buf.getvalue())
    return path


# What a spreadsheet reads as the start of a formula: "=HYPERLINK(...)", "+1", "-1", "@SUM(...)",
# and a tab or carriage return before one of those.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(text: str) -> str:
    """A text cell of the gradebook that a spreadsheet shows as text, never runs as a formula.

    The submitters column holds names from Gradescope's export, which students choose themselves
    ("=HYPERLINK(...)"); with a leading apostrophe (OWASP's advice against CSV injection) Excel,
    LibreOffice and Google Sheets read such a cell as text.
    """
    return "'" + text if text.startswith(_FORMULA_START) else text


def normalized_hash(text: str) -> str:
    """Hash of a C/CUDA source with comments and all whitespace removed (string literals kept)."""
    pattern = r'("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')|(/\*.*?\*/|//[^\n]*)'
    stripped = re.sub(pattern, lambda m: m.group(1) or " ", text, flags=re.DOTALL)
    return hashlib.sha256(re.sub(r"\s+", "", stripped).encode()).hexdigest()


def summarize(rows: Sequence[Row], entries: Sequence[Entry], exercise: Exercise, stale: Sequence[str] = ()) -> Summary:
    """Status counts, a 10-band histogram of totals, the most failed tests, groups of identical sources."""
    max_total = max((r.max_total for r in rows), default=exercise.spec.max_score) or exercise.spec.max_score
    bands = [0] * 10
    for r in rows:
        if r.status == "grader-error":
            continue  # not graded: no score to place in a band
        frac = r.total / max_total if max_total else 0.0
        bands[min(int(frac * 10), 9)] += 1
    histogram = tuple((f"{i * max_total / 10:g}-{(i + 1) * max_total / 10:g}" if i < 9 else f"{i * max_total / 10:g}-{max_total:g}", n)
                      for i, n in enumerate(bands))
    failing = Counter(name for r in rows for name in r.failed)
    by_status = Counter(r.status for r in rows)
    known = {}
    for label, path in (("the unmodified skeleton", exercise.skeleton_path), ("the reference solution", exercise.solution_path)):
        text = _text(path)
        if text is not None:
            known[normalized_hash(text)] = label
    groups: dict[str, list[str]] = {}
    for e in entries:
        # What was graded: a notebook's kernel cell, not its JSON (outputs and ids differ copy to copy).
        text = graded_source(e.source, python=kind_of(exercise).traits.python_source)[0] if e.source else None
        if text is None or not re.sub(r"\s+", "", text):
            continue
        groups.setdefault(normalized_hash(text), []).append(e.student)
    identical = []
    for digest, students in groups.items():
        if len(students) >= 2 or digest in known:
            label = f"identical to {known[digest]}" if digest in known else f"group {digest[:8]}"
            identical.append((label, tuple(students)))
    identical.sort(key=lambda g: (-len(g[1]), g[0]))
    scaled = Counter((", ".join(r.not_run), r.scaled_from) for r in rows if r.scaled_from is not None)
    return Summary(len(rows), max_total, dict(by_status), histogram, tuple(failing.most_common(8)), tuple(identical),
                   tuple(stale), tuple((checks, ran, n) for (checks, ran), n in sorted(scaled.items())))


def _text(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        data = path.read_bytes()
        return None if b"\0" in data else data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _num(x: float) -> str:
    return f"{x:g}"


def write_text(path: Path, text: str) -> None:
    """Write a text file of the record atomically (a temp file, then a rename), readable as a gradebook is."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # a gradebook others may read, unlike mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_diagnostic(variable: str, record: Any) -> None:
    """`record` as JSON to the file the environment variable names, if it names one; a file that
    cannot be written costs only the record."""
    log = os.environ.get(variable, "").strip()
    if log:
        with contextlib.suppress(OSError):
            Path(log).write_text(json.dumps(record) + "\n")
