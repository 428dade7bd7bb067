"""The environment and the tag of a grading's child processes."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..run.parent import math_threads
from ..run.parent.sandbox import TAG_VARIABLE


def grading_tag(tmp: Path) -> str:
    """The tag ($KERNEL_GRADER_TAG, grader.run.parent.sandbox) every child of the grading in `tmp` carries."""
    return "grading-" + hashlib.sha256(str(tmp).encode()).hexdigest()[:16]


def child_env(tmp: Path) -> dict[str, str]:
    """The environment of the grading's children: its scratch folder, this grader first on the path,
    a share of the cores for BLAS, and a tag that finds them all (a batch's own tag, if it set one)."""
    env = dict(os.environ)
    env.update({"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(tmp)})
    env.setdefault(TAG_VARIABLE, grading_tag(tmp))
    # Unless a batch (or the user) has already set it: a share of the cores for each child's BLAS.
    env.update(math_threads.limits(math_threads.usable_cores() // math_threads.SIDE_BY_SIDE))
    src_root = str(Path(__file__).resolve().parents[2])
    # Children import this same grader first, whatever their cwd.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH", "")) if p)
    return env
