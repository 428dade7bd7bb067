"""Reading a submission and the source policy applied before anything compiles it.

Nothing here executes student code. The policy refuses what NVRTC must never see (includes of
files on the grading machine) and what would make grading unsafe (huge or binary files).
"""
from __future__ import annotations

import bisect
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from .spec import Limits

# Directives a kernel may use. Everything else is refused: #include (unless the exercise allows
# the header), #include_next, #import, #embed, and #line or "# 1 "file"" markers, which make
# the compiler report another file's name (e.g. a grader source) in place of the student's.
_SAFE_DIRECTIVES = frozenset({"", "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef",
                              "else", "endif", "pragma", "error", "warning"})
# A directive: "#" or its digraph "%:" first on a line (after whitespace), then its name.
_DIRECTIVE = re.compile(r"^[ \t\f\v]*(?:#|%:)[ \t\f\v]*([A-Za-z_]\w*|\d+)?(.*)$", re.MULTILINE)
_HEADER = re.compile(r'^\s*(?:#|%:)\s*include\s*[<"]([^<>"]+)[>"]\s*(?://.*)?$')
_HAS_INCLUDE = re.compile(r"__has_include(_next)?\b")
# Backslash, optional blanks, newline: NVRTC's front end splices these like a plain backslash-newline.
_SPLICE = re.compile(r"\\[ \t\f\v]*\n")


@dataclass(frozen=True)
class Submission:
    """A submission as read from disk: display name, text, and the hash of its exact bytes."""

    path: Path
    name: str
    source: str
    sha256: str
    size: int


@dataclass(frozen=True)
class PolicyVerdict:
    """Whether a submission may be compiled, and if not, what the student should change."""

    ok: bool
    message: str = ""
    line: int | None = None


def read(path: Path, max_bytes: int | None = None, *, name: str | None = None) -> tuple[Submission | None, PolicyVerdict]:
    """Read a submission file; a missing, binary or non-UTF-8 file gives a refusal, never an exception.

    With max_bytes, a file longer than that is refused after reading only max_bytes + 1 bytes of it:
    a multi-gigabyte upload must not be read into memory just to be told it is too big. `name`: the
    display name when the caller has it already (display_name(path) otherwise).
    """
    path = Path(path)
    name = display_name(path) if name is None else name
    try:
        with open(path, "rb") as f:
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
            size = len(data)
            if max_bytes is not None and size > max_bytes:
                info = os.fstat(f.fileno())
                size = info.st_size if stat.S_ISREG(info.st_mode) else size
    except OSError as exc:
        return None, PolicyVerdict(False, f"cannot read the submission {name}: {exc.strerror or exc}")
    if max_bytes is not None and len(data) > max_bytes:
        return None, PolicyVerdict(False, _too_big(name, size, max_bytes))
    sha = hashlib.sha256(data).hexdigest()
    if b"\x00" in data:
        return None, PolicyVerdict(False, f"{name} is not a text file (it contains NUL bytes); submit the .cu source")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, PolicyVerdict(False, f"{name} is not valid UTF-8 (byte {exc.start}); save the file as UTF-8 text")
    text = text.removeprefix("\ufeff")
    return Submission(path=path, name=name, source=text, sha256=sha, size=len(data)), PolicyVerdict(True)


def read_checked(path: Path, limits: Limits, *, name: str | None = None) -> tuple[Submission | None, PolicyVerdict]:
    """Read a submission and apply the source policy: what every grading does before compiling."""
    sub, verdict = read(path, limits.max_source_bytes, name=name)
    if sub is not None and verdict.ok:
        verdict = check_policy(sub, limits)
    return sub, verdict


def display_name(path: Path) -> str:
    """The file name shown to the student: the base name, printable, never an absolute grader path."""
    return printable(Path(path).name or "submission.cu")


def printable(text: str, limit: int | None = 120) -> str:
    """A name a student chose (a file or folder name, a path inside their zip), safe to show anywhere:
    on one line, every character that is not printable (a newline, a terminal escape, a bidirectional
    override) shown as "?", cut to `limit` characters (None: not cut)."""
    shown = "".join(ch if ch.isprintable() else "?" for ch in text)
    return shown if limit is None else shown[:limit]


def _too_big(name: str, size: int, limit: int) -> str:
    return f"{name} is {size:,} bytes; the limit is {limit:,}. Submit only your kernel source."


def check_policy(sub: Submission, limits: Limits) -> PolicyVerdict:
    """Refuse oversized sources and includes the exercise does not allow, naming the line."""
    if sub.size > limits.max_source_bytes:
        return PolicyVerdict(False, _too_big(sub.name, sub.size, limits.max_source_bytes))
    if not sub.source.strip():
        return PolicyVerdict(False, f"{sub.name} is empty; submit your kernel source")
    physical = sub.source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for view in _directive_views(sub.source):
        for match in _DIRECTIVE.finditer(view):
            name = match.group(1) or ""
            if name in _SAFE_DIRECTIVES:
                continue
            line = view.count("\n", 0, match.start()) + 1
            # Literals are blanked in the views: the header's name comes from the line as written.
            text = printable(physical[line - 1].strip() if line <= len(physical) else name, None)
            target = _HEADER.match(text)
            if name == "include" and target and target.group(1) in limits.allowed_includes:
                continue
            return PolicyVerdict(False, _refusal(sub.name, line, name, text, limits), line)
    for view in _directive_views(sub.source):  # __has_include in code, not in a comment or string
        found = _HAS_INCLUDE.search(view)
        if found:
            line = view.count("\n", 0, found.start()) + 1
            return PolicyVerdict(False, f"{sub.name}:{line}: __has_include is not allowed; remove it.", line)
    return PolicyVerdict(True)


def _refusal(name: str, line: int, directive: str, text: str, limits: Limits) -> str:
    shown = text[:80] + ("..." if len(text) > 80 else "")
    if directive in ("include", "include_next", "import", "embed"):
        allowed = ", ".join(f"<{h}>" for h in limits.allowed_includes) or "none"
        return (f"{name}:{line}: '{shown}' is not allowed in this exercise (the headers you may include: {allowed}). "
                "Everything else a kernel needs is built in; remove the line.")
    if directive == "line" or directive.isdigit():
        return (f"{name}:{line}: '{shown}' is not allowed: #line directives change the file name and line numbers "
                "the grader reports for your code. Remove the line.")
    return f"{name}:{line}: the preprocessor directive '{shown}' is not allowed in a submission; remove the line."


def _directive_views(text: str) -> tuple[str, str]:
    """The source as the preprocessor sees its lines, two ways, each keeping physical line numbers.

    A directive may hide behind a comment: "#/**/include" and "/*<newline>*/ #include" both
    include a file in NVRTC (measured). The standard reads a comment spanning lines as one space,
    NVRTC's front end lets it end the line; directives are looked for in both readings and, found
    in either, refused. String, character and raw-string literals are blanked, so "#include"
    inside a string is no directive; "\r" counts as a line end (a false alarm costs a student an
    edit, a miss would let the compiler read files on the grading machine).
    """
    spliced, swallowed = _splice(text.replace("\r\n", "\n").replace("\r", "\n"))
    return tuple(_renumber(v, swallowed) for v in _strip_comments(spliced))  # type: ignore[return-value]


def _splice(text: str) -> tuple[str, list[int]]:
    """Join continued lines; for each logical line, how many physical lines it swallowed."""
    joined = _SPLICE.sub("\x01", text)
    out_lines = joined.split("\n")
    return "\n".join(l.replace("\x01", "") for l in out_lines), [l.count("\x01") for l in out_lines]


class _Runs:
    """Where each run of identifier and number characters (letters, digits, "_", "." and "'") of a
    source begins, found once: walking back from every quote instead made a line of digit
    separators (1'1'1'...) cost minutes, in the grader's own process, before any time limit."""

    _RUN = re.compile(r"[\w.']+")  # \w: what str.isalnum() accepts, and "_"

    def __init__(self, text: str) -> None:
        spans = [m.span() for m in self._RUN.finditer(text)]
        self.starts = [start for start, _ in spans]
        self.ends = [end for _, end in spans]

    def token_start(self, i: int) -> int:
        """Where the identifier or number that ends just before text[i] begins (i if none does)."""
        k = bisect.bisect_right(self.starts, i - 1) - 1
        return self.starts[k] if k >= 0 and self.ends[k] > i - 1 else i


def _in_number(text: str, i: int, runs: _Runs) -> bool:
    """Whether the quote at text[i] is a C++14 digit separator (1'000) rather than a literal (L'x')."""
    start = runs.token_start(i)
    return start < i and (text[start].isdigit() or (text[start] == "." and start + 1 < i and text[start + 1].isdigit()))


def _raw_close(text: str, i: int, runs: _Runs) -> str | None:
    """If the quote at text[i] opens a raw string (R"x(...)x", or with u8R, uR, UR, LR), its closing
    ')x"'. A malformed one is read as a plain string: line-bounded, so it can hide no directive."""
    if text[runs.token_start(i):i] not in ("R", "u8R", "uR", "UR", "LR"):
        return None
    k = text.find("(", i + 1, i + 18)
    delim = text[i + 1:k] if k >= 0 else None
    if delim is None or any(ch in delim for ch in ' ()\\\t\v\f\n"'):
        return None
    return ")" + delim + '"'


def _renumber(view: str, swallowed: list[int]) -> str:
    """Pad each logical line with the empty lines it swallowed, so match offsets give physical lines."""
    out = []
    for i, line in enumerate(view.split("\n")):
        out.append(line)
        if i < len(swallowed):
            out.extend([""] * swallowed[i])
    return "\n".join(out)


def _strip_comments(text: str) -> tuple[str, str]:
    """Views 1 and 2 of _directive_views: comments removed, literals blanked, line count kept.

    In view 1 a comment spanning lines is one space, and the newlines it swallowed are added at the
    end of the logical line it belongs to; in view 2 the comment becomes those newlines.
    """
    one: list[str] = []
    two: list[str] = []
    carry = 0
    i, n = 0, len(text)
    runs = _Runs(text)
    # Where each raw string's closing ')x"' was last looked for in vain: not there from that point
    # on, so thousands of unclosed R"( are not each searched for to the end of the file.
    unclosed: dict[str, int] = {}
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            newlines = text.count("\n", i, n if j < 0 else j)
            one.append(" ")
            two.append("\n" * newlines or " ")
            carry += newlines
            i = n if j < 0 else j + 2
        elif c == '"' and (close := _raw_close(text, i, runs)) and (j := _find_close(text, close, i + 1, unclosed)) >= 0:
            end = j + len(close)
            newlines = text.count("\n", i, end)
            one.append('""' + "\n" * newlines)
            two.append('""' + "\n" * newlines)
            i = end
        elif c in "\"'" and not (c == "'" and _in_number(text, i, runs)):
            # A literal ends at its closing quote or, unterminated, at the end of the line.
            j = i + 1
            while j < n and text[j] not in (c, "\n"):
                j += 2 if text[j] == "\\" else 1
            one.append(c + c)
            two.append(c + c)
            i = j + 1 if j < n and text[j] == c else min(j, n)
        else:
            if c == "\n":
                one.append("\n" * carry)
                carry = 0
            one.append(c)
            two.append(c)
            i += 1
    one.append("\n" * carry)
    return "".join(one), "".join(two)


def _find_close(text: str, close: str, start: int, unclosed: dict[str, int]) -> int:
    """text.find(close, start), remembering where it was not found (it is not found after that either)."""
    if close in unclosed and unclosed[close] <= start:
        return -1
    found = text.find(close, start)
    if found < 0:
        unclosed[close] = start
    return found
