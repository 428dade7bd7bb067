"""The header a wrong submission declares about itself: `// expect: race` names the check it must fail,
`// also: correctness` the others it may fail too (`#` in place of `//` in a Python file).

Below both `grade validate` (which holds each wrong file to its header) and the conventions (which
require every wrong file to have one), so that neither imports the other for it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_EXPECT = re.compile(r"^\s*(?://|#)\s*expect:\s*([\w-]+)\s*$", re.MULTILINE)
_ALSO = re.compile(r"^\s*(?://|#)\s*also:\s*([\w\s,-]+?)\s*$", re.MULTILINE)
# The header is read from the file's first characters only: a line deep in the code is no header.
HEAD_CHARS = 2000


@dataclass(frozen=True)
class Expectation:
    """What a wrong submission declares about itself."""

    expect: str
    also: frozenset[str] = frozenset()


def read_expectation(path: Path) -> Expectation | None:
    """The `// expect:` and `// also:` header of a wrong submission, or None if it has none."""
    head = path.read_text(encoding="utf-8", errors="replace")[:HEAD_CHARS]
    match = _EXPECT.search(head)
    if not match:
        return None
    also = _ALSO.search(head)
    names = frozenset(a.strip() for a in also.group(1).split(",") if a.strip()) if also else frozenset()
    return Expectation(match.group(1), names)
