"""grade(): the one entry point. Reads the exercise, hands it to its kind (grader.kinds), which reads
the submission once and grades it into a Report.

Defaults live here, once; the CLI reads them from this signature. The names re-exported below are
the library's public face for callers of `grader.api` (the CLI, the staff tools, scripts); each
lives in the module named beside it.
"""
from __future__ import annotations

import time
from pathlib import Path

from . import exercise as exercise_module
from .grading.backend import BACKENDS, resolve_backend  # noqa: F401 - public: the CLI's --backend choices
from .grading.children import child_env  # noqa: F401 - public: staff tools start children the same way
from .grading.seed import SECRET_VARIABLE, derive_seed  # noqa: F401 - public: the seed every kind uses
from .kinds.base import Options
from .kinds.registry import kind_of
from .results import Report


def grade(exercise_dir: Path, submission: Path, *, backend: str = "auto", seed: int | None = None,
          workdir: Path | None = None, keep_workdir: bool = False) -> Report:
    """Grade one submission against one exercise and return the Report (never raises for student errors).

    backend: "auto", "gpu" or "emu" (a kind without kernels ignores it); seed: a fixed base seed, or
    None to derive it from the submission (grader.grading.seed); workdir: a scratch folder to use and
    keep (else a temporary one, removed unless keep_workdir)."""
    started = time.perf_counter()
    exercise = exercise_module.load(Path(exercise_dir))
    kind = kind_of(exercise)
    submitted = kind.read(exercise, Path(submission))
    options = Options(started=started, backend=backend, seed=seed, workdir=workdir, keep_workdir=keep_workdir)
    return kind.grade(exercise, submitted, options)
