"""The verdict of `grade validate` on one exercise, and how it reads a grading's report: below the
kinds, which each prove their own exercises' promises (grader.kinds.base.Kind.validate)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..results import Report


@dataclass
class Validation:
    """The verdict on one exercise: each item is (ok, text)."""

    exercise: str
    backend: str
    items: list[tuple[bool, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(ok for ok, _ in self.items)

    def add(self, ok: bool, text: str) -> None:
        self.items.append((ok, text))


def failing(report: Report) -> set[str]:
    """Categories the report failed, leaving out checks that were only gated (not graded)."""
    return {t.category for t in report.tests if not t.passed and not t.extra.get("gated")}


def gated_reason(report: Report, category: str) -> str:
    """Why the check of `category` was not graded (gated behind an earlier failure), or "" when it was."""
    for t in report.tests:
        if t.category == category and t.extra.get("gated"):
            first = t.output.splitlines()[0] if t.output else "an earlier check failed"
            return first.removeprefix("Not graded: ").rstrip(".")
    return ""


def fault_text(report: Report) -> str:
    """The grader faults of a report, each reason once, with the first line of an exception's traceback's end."""
    texts = []
    for n in report.grader_faults:
        last = n.detail.strip().splitlines()[-1] if n.detail.strip() else ""
        texts.append(n.reason + (f": {last}" if last else ""))
    return "; ".join(dict.fromkeys(texts))


def wrong_file_verdict(name: str, report: Report, expect: str, also: frozenset[str] | set[str],
                       comment: str) -> tuple[bool, str]:
    """Whether a wrong file failed the check it names (`expect`) and no other than its `also` ones, and
    the line that says so; `comment` is the file's comment marker (`//`, `#`), for the header's name."""
    failed = failing(report)
    undeclared = failed - {expect} - set(also)
    gated = gated_reason(report, expect)
    if expect in failed:
        text = f"wrong/{name}: fails {expect}"
    elif gated:
        # Gated off by an earlier failure: the check never looked at this file, so it did not pass it.
        text = f"wrong/{name}: should fail {expect}, but {expect} was not graded (gated: {gated})"
    else:
        text = f"wrong/{name}: should fail {expect} but passed it"
    if undeclared:
        text += f"; also fails {', '.join(sorted(undeclared))} (not declared in `{comment} also:`)"
    return expect in failed and not undeclared, text
