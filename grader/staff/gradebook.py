"""`grade gradebook`: a finished batch's grades as a file an LMS imports (Canvas, Moodle, or a plain CSV).

A separate command over `grade batch`'s output rather than options on it: the batch runs for
minutes to hours and resumes, while the export is a quick, pure function of its results that staff
re-run whenever the roster changes, or once per LMS, without grading anything again.

Input: the batch's --out folder (grades.csv, which exists once every submission is graded, names
the submissions; results/<id>.json holds each one's score, status and the submitters of a
Gradescope export), and a roster CSV the staff keep. A submission is matched to roster rows only by
an exact identity, never by a name or a likeness: the roster's key column (--key) equals the
submission's id (the file or folder name `grade batch` shows), or equals one of the emails or SIDs
Gradescope recorded for its submitters. Matching ignores case and surrounding blanks.
Submissions that match no roster row, roster rows that no submission matches, a roster row two
submissions match, and submissions the grader failed on are all listed, on stderr and in
FILE.problems.csv beside the export; none is dropped silently and none is given a score it did not
get (their grade cells are left empty).

Formats, with the conventions checked against each platform's own sources:

- canvas: Canvas's gradebook importer (instructure/canvas-lms, app/models/gradebook_importer.rb)
  wants the header `Student, ID, SIS User ID, SIS Login ID, Section` (row[0] =~ /Student/,
  row[1] =~ /ID/, the SIS columns third and fourth, /Section/ the last student column), then one
  column per assignment titled `Name (id)` (an existing assignment; a title alone creates one), and
  reads a second row starting `Points Possible` as the points of new assignments. It finds a student
  by ID, then SIS User ID, then SIS Login ID, then name. The roster is best Canvas's own gradebook
  export (Grades > Export), whose first five columns are these; its `Points Possible` row is skipped.
- moodle: Moodle's CSV grade import (moodle/moodle, grade/import/csv: "Identify user by" maps a
  column to the user's email, idnumber, username or id; each other column maps to a grade item or
  a new one). Moodle's own export names the identity columns `First name, Surname, ID number,
  Email address`; the export keeps those of them the roster has (at least one of Email address,
  ID number, Username is required) and adds one grade column.
- generic: every roster column, then submission, score, max score, status.

Every text cell is written through grader.staff.batch.record.spreadsheet_text: a cell starting
with =, +, -, @, a tab or a carriage return gets a leading apostrophe, so a name a student chose
is shown as text and never run as a formula.
"""
from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import UsageError
from ..submission import printable
from .batch.record import CSV_NAME, RESULTS, spreadsheet_text, write_text

FORMATS = ("canvas", "moodle", "generic")
DEFAULT_KEY = {"canvas": "SIS Login ID", "moodle": "Email address", "generic": "id"}
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_IDENTITY = ("First name", "Surname", "Last name", "ID number", "Username", "Email address")
MOODLE_REQUIRED = ("Email address", "ID number", "Username")


@dataclass(frozen=True)
class Submission:
    """One graded submission of the batch, as the gradebook needs it."""

    id: str
    status: str
    score: float | None          # None: no verdict (the grader failed)
    max_score: float
    identities: frozenset[str]   # the id, and the submitters' emails and SIDs, folded for matching


@dataclass(frozen=True)
class Problem:
    """A submission or roster row that could not be given a grade, and why."""

    kind: str       # unmatched-submission, no-submission, several-submissions, not-graded
    submission: str
    roster: str     # the roster row's key value
    detail: str


@dataclass(frozen=True)
class Export:
    """A written gradebook and what could not go in it."""

    path: Path
    problems_path: Path
    rows: int
    graded: int
    problems: tuple[Problem, ...] = field(default=())


@dataclass(frozen=True)
class Roster:
    """The staff's roster: its header and rows (Canvas's Points Possible row left out)."""

    header: tuple[str, ...]
    rows: tuple[Mapping[str, str], ...]


def read_batch(batch_out: Path) -> list[Submission]:
    """The submissions of a finished batch, in grades.csv's order; a usage error if it is not finished."""
    batch_out = Path(batch_out)
    table = batch_out / CSV_NAME
    if not table.is_file():
        raise UsageError(f"{batch_out}: no {CSV_NAME}; it is written once every submission is graded. "
                         "Run (or finish) `grade batch` with this --out first.")
    with open(table, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    ids = [r[0] for r in rows[1:] if r and r[0] != "(max)"]
    subs = []
    for sid in ids:
        try:
            doc = json.loads((batch_out / RESULTS / f"{sid}.json").read_text(encoding="utf-8"))
            extra = doc["extra_data"]
            status = extra.get("batch", {}).get("status", "graded")
            submitters = extra.get("batch", {}).get("submitters", [])
            score = None if status == "grader-error" else float(doc["score"])
            max_score = float(extra["max_score"])
        except (OSError, ValueError, KeyError, TypeError):
            status, submitters, score, max_score = "grader-error", [], None, 0.0
        subs.append(Submission(sid, status, score, max_score, frozenset({_fold(sid), *_identities(submitters)})))
    return subs


def _identities(submitters: Sequence[str]) -> set[str]:
    """The emails and SIDs in Gradescope's submitter strings ("Name <email> sid"); names are left
    out, since two students may share one."""
    found = set()
    for text in submitters:
        email = re.search(r"<([^<>\s]+@[^<>\s]+)>", text)
        if email:
            found.add(_fold(email.group(1)))
            sid = text[email.end():].strip()
            if sid:
                found.add(_fold(sid))
    return found


def _fold(text: str) -> str:
    return text.strip().casefold()


def read_roster(path: Path) -> Roster:
    """The roster CSV (UTF-8, a byte-order mark allowed); Canvas's `Points Possible` row is skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--roster {path}: cannot read it as UTF-8 text ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    header = tuple(h.strip() for h in (reader.fieldnames or ()))
    if not header:
        raise UsageError(f"--roster {path}: no header row")
    rows = []
    for raw in reader:
        row = {h.strip(): (v or "").strip() for h, v in raw.items() if h is not None}
        first = row.get(header[0], "")
        if first.startswith("Points Possible") or not any(row.values()):
            continue
        rows.append(row)
    return Roster(header, tuple(rows))


def export(batch_out: Path, roster_path: Path, fmt: str, out: Path, *, key: str | None = None,
           assignment: str = "", assignment_id: str = "", points: float | None = None) -> Export:
    """Write the gradebook for `fmt` to `out` and the list of what could not go in it to
    out.problems.csv; returns what was written.

    assignment: the grade column's title (default: the batch folder's name); assignment_id: Canvas's
    id of an existing assignment (the column becomes `Name (id)`); points: scale scores to this many
    points (default: the exercise's maximum)."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    subs = read_batch(batch_out)
    roster = read_roster(roster_path)
    key = key or DEFAULT_KEY[fmt]
    if key not in roster.header:
        raise UsageError(f"--roster {roster_path}: no column {key!r} to match submissions by (--key); its columns are "
                         + ", ".join(repr(h) for h in roster.header))
    _check_columns(fmt, roster, roster_path)
    title = assignment or Path(batch_out).resolve().name
    best = max((s.max_score for s in subs), default=0.0)
    scale = (points / best) if points and best else 1.0
    grades, problems = match(subs, roster, key)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    header, rows = _table(fmt, roster, grades, title, assignment_id, points or best, scale)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([spreadsheet_text(h) for h in header])
    writer.writerows([[spreadsheet_text(c) for c in row] for row in rows])
    write_text(out, buf.getvalue())
    problems_path = out.with_name(out.name + ".problems.csv")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["problem", "submission", key, "detail"])
    writer.writerows([[spreadsheet_text(p.kind), spreadsheet_text(p.submission), spreadsheet_text(p.roster),
                       spreadsheet_text(p.detail)] for p in problems])
    write_text(problems_path, buf.getvalue())
    graded = sum(1 for g in grades.values() if not isinstance(g, str) and g.score is not None)
    return Export(out, problems_path, len(roster.rows), graded, tuple(problems))


def _check_columns(fmt: str, roster: Roster, path: Path) -> None:
    if fmt == "canvas":
        missing = [c for c in ("Student", "ID") if c not in roster.header]
        if missing or not any(c in roster.header for c in ("ID", "SIS User ID", "SIS Login ID")):
            raise UsageError(f"--roster {path}: Canvas's importer needs the columns {', '.join(CANVAS_COLUMNS)} "
                             f"(missing: {', '.join(missing)}); export the Canvas gradebook and use it as the roster")
    if fmt == "moodle" and not any(c in roster.header for c in MOODLE_REQUIRED):
        raise UsageError(f"--roster {path}: Moodle identifies users by one of the columns {', '.join(MOODLE_REQUIRED)}; "
                         "the roster has none")


def match(subs: Sequence[Submission], roster: Roster, key: str) -> tuple[dict[int, Submission | str], list[Problem]]:
    """Roster row index -> its submission, or why it has none (no submission, several); and the problems found."""
    by_identity: dict[str, list[int]] = {}
    for i, row in enumerate(roster.rows):
        value = _fold(row.get(key, ""))
        if value:
            by_identity.setdefault(value, []).append(i)
    claimed: dict[int, list[Submission]] = {}
    problems: list[Problem] = []
    for sub in subs:
        rows = sorted({i for ident in sub.identities for i in by_identity.get(ident, ())})
        if not rows:
            problems.append(Problem("unmatched-submission", sub.id, "",
                                    f"no roster row has {key} equal to its id or a submitter's email or SID"))
        for i in rows:
            claimed.setdefault(i, []).append(sub)
        if rows and sub.score is None:
            problems.append(Problem("not-graded", sub.id, "; ".join(roster.rows[i].get(key, "") for i in rows),
                                    "the grader failed on it (status grader-error): grade cell left empty; regrade it"))
    grades: dict[int, Submission | str] = {}
    for i, row in enumerate(roster.rows):
        mine = claimed.get(i, [])
        if not mine:
            grades[i] = "no submission"
            problems.append(Problem("no-submission", "", row.get(key, ""), "no submission matched this roster row"))
        elif len(mine) > 1:
            grades[i] = "several submissions"
            problems.append(Problem("several-submissions", "; ".join(s.id for s in mine), row.get(key, ""),
                                    "more than one submission matched this roster row: grade cell left empty"))
        else:
            grades[i] = mine[0]
    return grades, problems


def _table(fmt: str, roster: Roster, grades: Mapping[int, Submission | str], title: str, assignment_id: str,
           points: float, scale: float) -> tuple[list[str], list[list[str]]]:
    """The export's header and rows, one row per roster row in the roster's order."""
    def grade(i: int) -> str:
        sub = grades[i]
        return "" if isinstance(sub, str) or sub.score is None else f"{round(sub.score * scale, 4):g}"

    if fmt == "canvas":
        column = f"{title} ({assignment_id})" if assignment_id else title
        header = [*CANVAS_COLUMNS, column]
        rows = [["Points Possible", "", "", "", "", f"{points:g}"]]
        rows += [[row.get(c, "") for c in CANVAS_COLUMNS] + [grade(i)] for i, row in enumerate(roster.rows)]
        return header, rows
    if fmt == "moodle":
        identity = [c for c in MOODLE_IDENTITY if c in roster.header]
        return [*identity, title], [[row.get(c, "") for c in identity] + [grade(i)] for i, row in enumerate(roster.rows)]
    header = [*roster.header, "submission", "score", "max score", "status"]
    rows = []
    for i, row in enumerate(roster.rows):
        sub = grades[i]
        shown, status = ("", sub) if isinstance(sub, str) else (sub.id, sub.status)
        rows.append([row.get(c, "") for c in roster.header] + [shown, grade(i), f"{points:g}", status])
    return header, rows


def problem_lines(result: Export) -> list[str]:
    """The problems as lines for stderr, one each (the problems file holds the same)."""
    return [f"gradebook: {p.kind}: {printable(p.submission or p.roster)}: {p.detail}" for p in result.problems]
