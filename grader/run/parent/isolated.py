"""Grading one submission in its own child process, for tools that grade many (batch, Gradescope).

The child is `python -m grader run EXERCISE SUBMISSION --json ...` under grader.run.parent.sandbox.run_child
with a wall-clock limit. Whatever it does (hangs, crashes, floods its output, dies without a
JSON), the parent gets a schema-valid results document back and a status for the gradebook.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import jsonschema

from ...exercise import Exercise
from ...kinds.registry import kind_of
from ...results import validate
from .sandbox import run_child
from .tags import TAG_VARIABLE, kill_tagged  # noqa: F401 - tests import kill_tagged from here too
from ...ungraded import ungraded_document

# grader-error: the grader failed, or the exercise's own code raised (grader.run.tasks.HarnessFault);
# never a verdict on the submission, and regraded when a batch runs again.
STATUSES = ("graded", "compile-error", "timeout", "grader-error")
_DEVICES = {"gpu": "GPU", "emu": "CPU emulator"}


@dataclass(frozen=True)
class Graded:
    """One submission's results document and its gradebook status (one of STATUSES)."""

    status: str
    document: Mapping[str, Any]
    seconds: float


def status_of(document: Mapping[str, Any]) -> str:
    """graded, or compile-error when the compile test failed (including a file refused before compiling)."""
    for test in document.get("tests", ()):
        if test.get("tags", [""])[0] == "compile" and test.get("status") == "failed":
            return "compile-error"
    return "graded"


def grade_in_child(exercise: Exercise, source: Path, *, backend: str, timeout: float, seed: int | None = None,
                   env: Mapping[str, str] | None = None, scratch: Path | None = None, tag: str = "") -> Graded:
    """Grade `source` in a child with a wall-clock limit; never raises for anything the submission does.

    backend must already be resolved ("gpu" or "emu") so children do not each probe for a GPU.
    env adds to this process's environment (e.g. CUDA_VISIBLE_DEVICES); tag marks every process
    the child starts, and they are all killed once it is over.
    """
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="kg-one-", dir=scratch))
    out = work / "results.json"
    # Absolute paths: the child runs in `work`, where a relative path (grade batch ex subs/) names nothing.
    argv = [sys.executable, "-m", "grader", "run", str(Path(exercise.root).resolve()), str(Path(source).resolve()), "--backend", backend,
            "--json", str(out), "--quiet"]
    if seed is not None:
        argv += ["--seed", str(int(seed))]
    child_env = dict(os.environ)
    child_env.update(env or {})
    src_root = str(Path(__file__).resolve().parents[3])  # the checkout: the child imports this same grader
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, child_env.get("PYTHONPATH", "")) if p)
    child_env["TMPDIR"] = str(work)  # the grader's own scratch lands here and goes with it
    if tag:
        child_env[TAG_VARIABLE] = tag
    try:
        child = run_child(argv, timeout=timeout, env=child_env, cwd=str(work))
        if tag:
            kill_tagged(tag)
        seconds = time.perf_counter() - started
        name, sha = source.name, _sha256(source, python=kind_of(exercise).traits.python_source)
        if child.timed_out:
            reason = (f"Grading {name} did not finish within the {timeout:.0f} s limit for one submission, so it was "
                      "stopped and scored 0. A kernel that never ends (an endless loop, a barrier some threads never "
                      "reach) does this; fix it and resubmit.")
            return Graded("timeout", ungraded_document(exercise, reason, backend=backend, device=_DEVICES.get(backend, backend),
                                                       submission=name, sha256=sha, seconds=seconds), seconds)
        document, problem = _read_document(out)
        if child.returncode == 0 and document is not None:
            return Graded(status_of(document), document, seconds)
        if document is not None and _grader_faults(document):
            # The grading ran and says which checks the grader (or the exercise's own code) could not
            # run: its document is kept, with the traceback in its staff-only not_run detail, and
            # never the child's stderr, which would put that traceback in the output students read.
            return Graded("grader-error", document, seconds)
        tail = (child.stderr.strip() or child.stdout.strip() or "no output")[-1500:]
        why = problem or f"the grading process {child.describe()}"
        reason = (f"The grader failed on {name} ({why}); this is not a verdict on the submission. Course staff: "
                  f"re-run it, and report it if it repeats.\n{tail}")
        return Graded("grader-error", ungraded_document(exercise, reason, backend=backend, device=_DEVICES.get(backend, backend),
                                                        submission=name, sha256=sha, seconds=seconds), seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _grader_faults(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The not-run checks a results document blames on the grader or the exercise's own code."""
    return [n for n in document.get("extra_data", {}).get("not_run", ()) if n.get("grader_fault")]


def _read_document(path: Path) -> tuple[dict[str, Any] | None, str]:
    if not path.is_file():
        return None, "it wrote no results file"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        validate(document)
    except (ValueError, jsonschema.ValidationError) as exc:
        return None, f"its results file is not valid: {str(exc).splitlines()[0][:200]}"
    return document, ""


def _sha256(path: Path, *, python: bool = False) -> str | None:
    """The submission's hash as a grading reports it: a notebook's is that of its graded text."""
    import hashlib

    from ...notebook import graded_source, is_notebook

    if is_notebook(path):
        text, _ = graded_source(path, python=python)
        return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
