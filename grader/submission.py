"""Reading a submission and the source policy applied before anything compiles it.

Nothing here executes student code. The policy refuses what NVRTC must never see (includes of
files on the grading machine) and what would make grading unsafe (huge or binary files).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from .spec import Limits

# A preprocessor directive that pulls in another file, however it is spelled: "# include",
# include_next, import, embed, and the line-continued forms (joined before matching).
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*(include_next|include|import|embed)\b(.*)$", re.MULTILINE)
_HAS_INCLUDE = re.compile(r"__has_include(_next)?\b")


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


def read(path: Path) -> tuple[Submission | None, PolicyVerdict]:
    """Read a submission file; a missing, binary or non-UTF-8 file gives a refusal, never an exception."""
    path = Path(path)
    name = display_name(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, PolicyVerdict(False, f"cannot read the submission {name}: {exc.strerror or exc}")
    sha = hashlib.sha256(data).hexdigest()
    if b"\x00" in data:
        return None, PolicyVerdict(False, f"{name} is not a text file (it contains NUL bytes); submit the .cu source")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, PolicyVerdict(False, f"{name} is not valid UTF-8 (byte {exc.start}); save the file as UTF-8 text")
    text = text.removeprefix("\ufeff")
    return Submission(path=path, name=name, source=text, sha256=sha, size=len(data)), PolicyVerdict(True)


def display_name(path: Path) -> str:
    """The file name shown to the student: the base name, printable, never an absolute grader path."""
    base = Path(path).name or "submission.cu"
    return "".join(ch if ch.isprintable() else "?" for ch in base)[:120]


def check_policy(sub: Submission, limits: Limits) -> PolicyVerdict:
    """Refuse oversized sources and includes the exercise does not allow, naming the line."""
    if sub.size > limits.max_source_bytes:
        return PolicyVerdict(False, f"{sub.name} is {sub.size:,} bytes; the limit is {limits.max_source_bytes:,}. Submit only your kernel source.")
    if not sub.source.strip():
        return PolicyVerdict(False, f"{sub.name} is empty; submit your kernel source")
    joined = _join_continued_lines(sub.source)
    for match in _INCLUDE.finditer(joined):
        line = joined.count("\n", 0, match.start()) + 1
        target = match.group(2).strip()
        bare = target.strip('<>"')
        if match.group(1) == "include" and target[:1] in "<\"" and bare in limits.allowed_includes:
            continue
        allowed = ", ".join(limits.allowed_includes) or "none"
        return PolicyVerdict(False, f"{sub.name}:{line}: '#{match.group(1)} {target}' is not allowed in this exercise "
                                    f"(allowed includes: {allowed}). Everything the kernel needs is built in; remove the line.", line)
    found = _HAS_INCLUDE.search(joined)
    if found:
        line = joined.count("\n", 0, found.start()) + 1
        return PolicyVerdict(False, f"{sub.name}:{line}: __has_include is not allowed; remove it.", line)
    return PolicyVerdict(True)


def _join_continued_lines(text: str) -> str:
    """Join backslash-continued lines, padding with empty lines so line numbers stay right."""
    out: list[str] = []
    buf, swallowed = "", 0
    for line in text.split("\n"):
        if line.endswith("\\"):
            buf, swallowed = buf + line[:-1], swallowed + 1
            continue
        out.append(buf + line)
        out.extend([""] * swallowed)
        buf, swallowed = "", 0
    if buf:
        out.append(buf)
    return "\n".join(out)
