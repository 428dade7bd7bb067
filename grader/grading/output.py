"""What a student's code printed, as every kind shows it in the report."""
from __future__ import annotations

import re

from ..results import inert

SHOWN_CHARS = 4000  # more than a screen of output is cut, with a line saying so


def student_text(text: str) -> str:
    """Kernel output made inert for the report: no control characters (terminal escapes), and no run
    of three backticks, which would close the Markdown fence around it and let the output pose as
    the grader's own text."""
    return re.sub(r"`{3,}", lambda m: "'" * len(m.group()), inert(text))


def shown_output(text: str) -> str:
    """What the report shows of a submission's printed output: inert, and cut at SHOWN_CHARS."""
    text = student_text(text.strip())
    return text[:SHOWN_CHARS] + ("\n[... more output not shown]" if len(text) > SHOWN_CHARS else "")
