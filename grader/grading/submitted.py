"""A submission as read once, by its kind, before any grading starts; then only passed on."""
from __future__ import annotations

from dataclasses import dataclass

from ..notebook import SourceMap
from ..submission import PolicyVerdict


@dataclass(frozen=True)
class Submitted:
    """What a grading knows of the file handed in, read once: the name shown to the student, the text
    graded (a notebook's extracted cells for a notebook), the hash of that text's exact bytes, the
    source policy's verdict, and where each graded line came from.

    `source` and `sha256` are None when nothing could be read (missing, binary, too big); a text that
    was read but refused by the policy keeps both, so its seed and its results document name it.
    """

    name: str
    source: str | None
    sha256: str | None
    verdict: PolicyVerdict
    where: SourceMap
    skipped: tuple[str, ...] = ()  # what a Python notebook held that is never run (calls, magics)

    @property
    def ok(self) -> bool:
        """Whether the submission may be graded (read, and accepted by the policy)."""
        return self.verdict.ok and self.source is not None
