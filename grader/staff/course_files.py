"""The files a course platform's grader needs beside the grader itself, and the one grading it runs.

PrairieLearn's question folder (grader.staff.prairielearn) and Autolab's autograde.tar
(grader.staff.autolab) both carry one exercise, hidden tests included, and its reference solution
(the traffic and performance checks compare with it), laid out as in this repository:

    exercises/<id>/...          every file of the exercise but dot-files and __pycache__
    reference/<id>/solution.cu  (solution.py for a Python exercise)

and both grade the file a student handed in the way `grade gradescope`'s run_autograder does:
grader.staff.gradescope.choose_submission picks the file (the expected name, else the only .cu or
notebook), and grader.run.parent.isolated.grade_in_child grades it in a child process with a
wall-clock limit, so that whatever the submission does the platform gets a results document.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .. import exercise as exercise_module
from ..errors import UsageError
from ..exercise import Exercise
from ..grading.backend import resolve_backend
from ..kinds.registry import kind_of
from ..run.parent.isolated import Graded, grade_in_child
from .gradescope import SECRET_VARIABLE, choose_submission

CONFIG_NAME = "kernel-grader.json"


@dataclass(frozen=True)
class Config:
    """What a platform's runner grades: read from the JSON file the builder wrote beside the exercise."""

    exercise: Path      # the exercise folder
    filename: str       # the file name students are told to submit
    timeout: float      # seconds one grading may take
    backend: str        # "emu", "gpu" or "auto" (the image decides: see BACKEND_VARIABLE)
    secret: str = ""    # the course's seed secret, if the builder had one


# The image may override the backend the question was built with: the GPU image sets it to auto.
BACKEND_VARIABLE = "KERNEL_GRADER_BACKEND"


def exercise_files(exercise: Exercise) -> dict[str, bytes]:
    """exercises/<id>/... and reference/<id>/<solution>, as relative paths -> bytes; a usage error
    without the reference solution."""
    if not exercise.solution_path.is_file():
        raise UsageError(f"{exercise.solution_path}: missing; the grader needs the reference solution "
                         "(the traffic check compares with it)")
    files: dict[str, bytes] = {}
    for path in sorted(exercise.root.rglob("*")):
        parts = path.relative_to(exercise.root).parts
        if path.is_file() and not any(part == "__pycache__" or part.startswith(".") for part in parts):
            files[f"exercises/{exercise.id}/{path.relative_to(exercise.root).as_posix()}"] = path.read_bytes()
    files[f"reference/{exercise.id}/{exercise.solution_path.name}"] = exercise.solution_path.read_bytes()
    return files


def submission_name(exercise: Exercise, filename: str) -> str:
    """The file name students submit: `filename`, or the kind's own (submission.py) for an exercise
    whose submissions are not .cu left at the .cu default; a usage error for anything but a plain .cu,
    .py or .ipynb name."""
    traits = kind_of(exercise).traits
    if filename.endswith(".cu") and not filename.endswith(traits.suffix):
        filename = traits.default_filename
    # Letters, digits, '.', '_' and '-' only: the name goes into question.html's attributes and a Makefile.
    if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*\.(cu|py|ipynb)", filename):
        raise UsageError(f"--filename {filename!r}: expected a plain file name (letters, digits, '.', '_', '-') "
                         "ending in .cu, .py or .ipynb")
    return filename


def config_document(exercise: Exercise, filename: str, timeout: float, backend: str) -> dict[str, Any]:
    """The JSON the runner reads (CONFIG_NAME), with the course's seed secret when one is set."""
    config: dict[str, Any] = {"exercise": f"exercises/{exercise.id}", "filename": filename, "timeout": float(timeout),
                              "backend": backend}
    secret = os.environ.get(SECRET_VARIABLE)
    if secret:  # it travels with the hidden tests, which are as secret
        config["secret"] = secret
    return config


def write_tree(files: Mapping[str, bytes], root: Path, executable: tuple[str, ...] = ()) -> None:
    """Write `files` (relative path -> bytes) under root; the paths in `executable` get mode 0755."""
    for name, data in sorted(files.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755 if name in executable else 0o644)


def read_config(path: Path) -> Config:
    """The runner's configuration; the exercise path is relative to the file's folder."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    backend = os.environ.get(BACKEND_VARIABLE) or raw.get("backend", "emu")
    return Config(Path(path).parent / raw["exercise"], raw.get("filename", "submission.cu"), float(raw.get("timeout", 480.0)),
                  backend, raw.get("secret", ""))


@dataclass(frozen=True)
class Outcome:
    """One handed-in submission's grading: the results document and status, or why nothing was graded."""

    graded: Graded | None   # None: no file to grade (problem says why)
    note: str = ""          # for the student: which file was graded, and why that one
    problem: str = ""


def grade_handed_in(config: Config, folder: Path) -> Outcome:
    """Choose the student's file in `folder` and grade it in a child; never raises for anything the
    submission does."""
    exercise = exercise_module.load(config.exercise)
    if config.secret:
        os.environ[SECRET_VARIABLE] = config.secret
    choice = choose_submission(folder, config.filename)
    if choice.source is None:
        return Outcome(None, problem=choice.problem)
    backend = resolve_backend(config.backend)[0] if config.backend == "auto" else config.backend
    graded = grade_in_child(exercise, choice.source, backend=backend, timeout=config.timeout, tag="platform")
    return Outcome(graded, note=choice.note)

