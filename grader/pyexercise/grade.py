"""Grading a Python exercise: the student's functions run in a walled-off child; the grader judges.

The pipeline, as for kernels: read the submission (a .py module, or a notebook's definitions) ->
load it in a child (grader/pyexercise/sandbox.py) -> the public checks (the exercise's checks.py, what the
student's check cells run) and the hidden pytest tests (the exercise's tests/, through the
`student` fixture of grader/pyexercise/hidden_tests.py) -> one test per function in the results JSON.

The child only sends back values: what each call returned and what it left in its arguments.
Every expectation, comparison and score lives here and in the hidden tests' process, which the
child cannot see.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .. import notebook as notebook_module
from .. import submission as submission_module
from ..exercise import Exercise
from ..grading.output import shown_output
from ..grading.seed import derive_seed
from ..grading.submitted import Submitted
from ..submission import PolicyVerdict
from .sandbox import CallOutcome, Worker
from .spec import Function, PySpec
from ..results import NotRun, Report, TestResult, inert
from ..run.jail import layers as jail_layers
from ..run.parent.sandbox import python_argv, run_child

BACKEND = "python"
LOAD_NAME = "Loads"
JOB_VARIABLE = "KERNEL_GRADER_PY_HIDDEN_JOB"
MAX_MESSAGES = 8
TIMED_OUT = "stopped at the time limit"


@dataclass
class Outcomes:
    """Per function: (label, passed, message) of every public check and hidden test."""

    by_function: dict[str, list[tuple[str, bool, str]]] = field(default_factory=dict)

    def add(self, fn: str, label: str, passed: bool, message: str = "") -> None:
        self.by_function.setdefault(fn, []).append((label, passed, message))


# ---------------------------------------------------------------------------------------------
# Reading the submission

def read(path: Path, spec: PySpec) -> Submitted:
    """A .py module or a notebook's definitions, read once; a refusal (its verdict) says why it cannot be graded."""
    path = Path(path)
    name = submission_module.display_name(path)
    plain = notebook_module.SourceMap(name)

    def refused(problem: str) -> Submitted:
        return Submitted(name, None, None, PolicyVerdict(False, problem), plain)

    if notebook_module.is_notebook(path):
        data, problem = notebook_module._read_limited(path, name, spec.limits.max_notebook_bytes)
        if problem:
            return refused(problem)
        found, problem = notebook_module.extract_python(data, name)
        if found is None:
            return refused(problem)
        where = notebook_module.SourceMap(name, found.cells, "code cells")
        source, skipped = found.source, found.skipped
    else:
        sub, verdict = submission_module.read(path, name=name)
        if sub is None:
            return refused(verdict.message.replace("submit the .cu source", "submit your .py file"))
        if sub.size > spec.limits.max_source_bytes:
            return refused(f"{name} is {sub.size:,} bytes; the limit is {spec.limits.max_source_bytes:,}. Submit only your functions.")
        source, where, skipped = sub.source, plain, ()
    if not source.strip():
        return refused(f"{name} is empty; submit your functions")
    size = len(source.encode("utf-8"))
    if size > spec.limits.max_source_bytes:  # a notebook's definitions meet the same limit as a file
        return refused(f"{name}: the code graded is {size:,} bytes; the limit is {spec.limits.max_source_bytes:,}. Submit only your functions.")
    sha = hashlib.sha256(source.encode("utf-8")).hexdigest()
    return Submitted(name, source, sha, PolicyVerdict(True), where, tuple(skipped))


# ---------------------------------------------------------------------------------------------
# The exercise's public material, loaded in the grader (staff code, never the student's)

@dataclass(frozen=True)
class PublicMaterial:
    """The exercise's public modules (their text, for the child, and their classes) and its checks."""

    files: Mapping[str, str]
    classes: Mapping[str, type]
    checks: Mapping[str, Sequence[tuple[str, Callable[[], tuple], Callable[[Any, tuple], None]]]]


def public_material(exercise: Exercise) -> PublicMaterial:
    """Load the exercise's public modules and checks.py under their own names (as the child does)."""
    spec: PySpec = exercise.spec  # type: ignore[assignment]
    files = {name: (exercise.root / name).read_text(encoding="utf-8") for name in spec.public_modules + ("checks.py",)}
    classes: dict[str, type] = {}
    modules = {}
    with _LOADING:
        _load_public(exercise, files, modules, classes)
    checks = getattr(modules["checks"], "CHECKS", {})
    unknown = set(checks) - set(spec.names)
    if unknown:
        from ..errors import SpecError

        raise SpecError(f"{exercise.root / 'checks.py'}: CHECKS names functions the spec does not: {', '.join(sorted(unknown))}")
    return PublicMaterial(files, classes, checks)


# Gradings in threads of one process (an API user's pool) must not see each other's half-loaded
# public modules: one that is still executing would be reused without its classes.
_LOADING = threading.Lock()


def _load_public(exercise: Exercise, files: Mapping[str, str], modules: dict, classes: dict[str, type]) -> None:
    """Load each public file (reusing one a hidden test already imported from the same file) and
    collect the classes it defines."""
    for name in files:
        stem = Path(name).stem
        path = (exercise.root / name).resolve()
        loaded = sys.modules.get(stem)
        # Loaded already from the same file (a hidden test imported it): the same classes, so the
        # objects a test builds are the ones the codec knows.
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
            modules[stem] = loaded
        else:
            modules[stem] = _import_as(stem, path)
        for value in vars(modules[stem]).values():
            if isinstance(value, type) and value.__module__ == stem:
                classes[f"{stem}.{value.__qualname__}"] = value


def _import_as(name: str, path: Path) -> types.ModuleType:
    """Import an exercise's public file under its own name: the checks import the public modules by
    these names, as the student's code does. (Within one grading process: each grading is its own.)"""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def hide_paths(exercise: Exercise) -> list[Path]:
    """Folders the child must not see: the exercise (hidden tests), the reference, the grader's checkout."""
    grader_root = Path(__file__).resolve().parents[1]  # grader/, this file being grader/pyexercise/grade.py
    return [exercise.root, exercise.reference_dir, grader_root, grader_root.parent / "tests"]


def call_text(fn: str, out: CallOutcome, where: notebook_module.SourceMap) -> str:
    """Why a call failed, pointing at the submission's line when there is one."""
    at = f" (at {where.describe(out.line)})" if out.line else ""
    return f"{fn}() failed: {out.error}{at}"


# ---------------------------------------------------------------------------------------------
# Grading

def grade(exercise: Exercise, sub: Submitted, *, seed: int | None = None, started: float | None = None) -> Report:
    """Grade one Python submission, read once by `read`; never raises for anything the submission does."""
    started = time.perf_counter() if started is None else started
    spec: PySpec = exercise.spec  # type: ignore[assignment]
    material = public_material(exercise)
    notes: list[str] = []
    if seed is None:  # as for kernels (nothing here is random yet; the seed is recorded for regrades)
        seed = derive_seed(spec.id, sub.sha256)

    def report(tests: Sequence[TestResult], sha: str | None, output: str = "", isolation: str = "",
               not_run: Sequence[NotRun] = ()) -> Report:
        device = f"CPU, a Python child process ({isolation})" if isolation else "CPU, a Python child process"
        # Outputs quote what the student's code raised and printed: inert, like the kernel kind's.
        tests = [dataclasses.replace(t, output=inert(t.output)) for t in tests]
        return Report(exercise=spec.id, submission=sub.name, sha256=sha, backend=BACKEND,
                      device=device, tests=tuple(tests), not_run=tuple(not_run), max_score=spec.max_score,
                      seconds=time.perf_counter() - started, seeds={"base": int(seed)}, notes=tuple(map(inert, notes)),
                      student_output=output)

    if not sub.ok:
        return report(not_loaded(spec, f"Refused before loading: {sub.verdict.message}"), sub.sha256)
    if sub.where.is_notebook:
        cells = sorted({c.cell for c in sub.where.cells})
        notes.append(f"Graded the definitions in notebook cells {', '.join(map(str, cells))}; cells are counted from the top "
                     "of the notebook, text cells included. Calls, shell escapes and magics in the notebook are never run.")
    if sub.skipped:
        shown = "; ".join(sub.skipped[:MAX_MESSAGES]) + ("; ..." if len(sub.skipped) > MAX_MESSAGES else "")
        notes.append(f"Left out of the grading, never run: {shown}")
    outcomes = Outcomes()
    tmp = Path(tempfile.mkdtemp(prefix="kg-pygrade-"))
    try:
        stop_hidden = threading.Event()
        jail_layers.current()  # found once here, inherited by the hidden tests' process
        with ThreadPoolExecutor(max_workers=2) as pool:
            hidden = (pool.submit(_hidden_tests, exercise, sub, tmp, stop_hidden)
                      if spec.hidden_tests and _test_files(exercise) else None)
            with Worker(sub.source, functions=spec.names, public_files=material.files, limits=spec.limits,
                        hide=hide_paths(exercise), public_classes=material.classes, changes=spec.changes) as worker:
                loaded = worker.loaded
                if loaded.ok:
                    _public_checks(worker, spec, material, sub.where, outcomes)
                else:
                    stop_hidden.set()  # a module that does not load scores 0 whatever the tests say: no need to wait
                isolation = worker.isolation
            output = worker.output  # read once the child is gone: all it printed, however short
            hidden_problem = hidden.result() if hidden else None
        if hidden is not None:
            _read_hidden(tmp / "hidden-results.jsonl", spec, outcomes)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not loaded.ok:
        at = f" (at {sub.where.describe(loaded.line)})" if loaded.line else ""
        return report(not_loaded(spec, f"{sub.name} does not load: {loaded.error}{at}"), sub.sha256, shown_output(output),
                      isolation)
    if hidden_problem and hidden_problem != TIMED_OUT:
        # pytest itself failed (not the student's functions, which run in their own child): the
        # functions cannot be graded fairly on their public checks alone. Their points leave the
        # denominator, as for any failure of the grader's own tools.
        reason = f"the hidden tests could not run ({hidden_problem}); this is the grader's fault, not a verdict"
        skipped = [NotRun(fn.title or f"{fn.name}()", "correctness", reason, fn.points, "exclude", True) for fn in spec.functions]
        return report([TestResult(LOAD_NAME, "compile", 0.0, 0.0, True, f"{sub.name} loads.")], sub.sha256,
                      shown_output(output), isolation, skipped)
    if hidden_problem:
        notes.append(f"The hidden tests stopped early: {hidden_problem}")
    if not jail_layers.current().kernel_wall:
        notes.append("This submission ran without a kernel sandbox (no namespaces or Landlock on the grading machine: "
                     "`grade doctor` says why): grade where there is one before trusting hidden tests to stay hidden.")
    missing = [fn for fn, ok in loaded.defined.items() if not ok]
    load_text = (f"{sub.name} loads and defines {', '.join(f + '()' for f in spec.names)}." if not missing else
                 f"{sub.name} loads but does not define {', '.join(f + '()' for f in missing)}: each must be a top-level "
                 "function with exactly that name.")
    # It loaded: a missing function costs that function's test, and the gradebook says "graded".
    tests = [TestResult(LOAD_NAME, "compile", 0.0, 0.0, True, load_text)]
    for fn in spec.functions:
        tests.append(_judge(fn, outcomes.by_function.get(fn.name, []), defined=loaded.defined.get(fn.name, False)))
    return report(tests, sub.sha256, shown_output(output), isolation)


def _public_checks(worker: Worker, spec: PySpec, material: PublicMaterial, where: notebook_module.SourceMap,
                   outcomes: Outcomes) -> None:
    for fn in spec.functions:
        for label, make, verify in material.checks.get(fn.name, ()):
            args = tuple(make())
            out = worker.call(fn.name, args, timeout=fn.call_seconds)
            if not out.ok:
                outcomes.add(fn.name, f"check: {label}", False, call_text(fn.name, out, where))
                if worker.dead:
                    worker.restart()
                continue
            try:
                verify(out.value, args)
            except AssertionError as exc:
                outcomes.add(fn.name, f"check: {label}", False, str(exc).strip() or "wrong result")
            except Exception as exc:  # noqa: BLE001 - a value of the wrong shape or type breaks the comparison
                outcomes.add(fn.name, f"check: {label}", False, f"the result could not be compared: {type(exc).__name__}: "
                             f"{str(exc)[:200]}")
            else:
                outcomes.add(fn.name, f"check: {label}", True)


def _judge(fn: Function, results: Sequence[tuple[str, bool, str]], *, defined: bool) -> TestResult:
    tags_extra = {"tags": list(fn.tags)} if fn.tags else {}
    name = fn.title or f"{fn.name}()"
    if not defined:
        return TestResult(name, "correctness", 0.0, fn.points, False, f"{fn.name}() is not defined in the submission.",
                          visibility=fn.visibility, extra=tags_extra)
    if not results:
        return TestResult(name, "correctness", 0.0, fn.points, False, f"No check of {fn.name}() ran.",
                          visibility=fn.visibility, extra=tags_extra)
    failed = [(label, message) for label, ok, message in results if not ok]
    passed = len(results) - len(failed)
    lines = [f"{passed} of {len(results)} checks of {fn.name}() passed."]
    lines += [f"- {label}: {message.splitlines()[0][:400] if message else 'failed'}" for label, message in failed[:MAX_MESSAGES]]
    if len(failed) > MAX_MESSAGES:
        lines.append(f"- ... and {len(failed) - MAX_MESSAGES} more")
    return TestResult(name, "correctness", fn.points * passed / len(results), fn.points, not failed, "\n".join(lines),
                      visibility=fn.visibility, extra=tags_extra)


def not_loaded(spec: PySpec, reason: str) -> list[TestResult]:
    """Every test failed: the load test with the reason, each function as not graded."""
    tests = [TestResult(LOAD_NAME, "compile", 0.0, 0.0, False, reason)]
    for fn in spec.functions:
        tests.append(TestResult(fn.title or f"{fn.name}()", "correctness", 0.0, fn.points, False,
                                "Not graded: the submission did not load.", visibility=fn.visibility,
                                extra={"gated": True, **({"tags": list(fn.tags)} if fn.tags else {})}))
    return tests


# ---------------------------------------------------------------------------------------------
# Hidden tests: a pytest child of the grader's (it reads tests/), which starts its own walled child

def _test_files(exercise: Exercise) -> list[Path]:
    return sorted((exercise.root / "tests").glob("test_*.py"))


def _hidden_tests(exercise: Exercise, sub: Submitted, tmp: Path, stop: threading.Event | None = None) -> str | None:
    """Run tests/test_*.py with the grader.pyexercise.hidden_tests plugin; why it stopped early, or None."""
    source = tmp / "submission-source.py"
    source.write_text(sub.source, encoding="utf-8")
    job = tmp / "hidden-job.json"
    job.write_text(json.dumps({"exercise": str(exercise.root), "source": str(source), "results": str(tmp / "hidden-results.jsonl"),
                               "name": sub.name, "cells": [[c.cell, c.line] for c in sub.where.cells]}))
    env = dict(os.environ)
    env[JOB_VARIABLE] = str(job)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")) if p)
    limits = exercise.spec.limits
    argv = python_argv("pytest", "-q", "-p", "grader.pyexercise.hidden_tests", "-p", "no:cacheprovider", "--rootdir", str(tmp),
                       *map(str, _test_files(exercise)))
    child = run_child(argv, timeout=limits.run_seconds + 30, env=env, cwd=str(tmp), output_cap=limits.output_bytes,
                      stop=stop)
    if child.timed_out:
        return TIMED_OUT
    return None if child.returncode in (0, 1) else f"pytest {child.describe()}: {child.stderr.strip()[-300:] or child.stdout.strip()[-300:]}"


def _read_hidden(path: Path, spec: PySpec, outcomes: Outcomes) -> None:
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            doc = json.loads(line)
            functions = [f for f in doc.get("functions", []) if f in spec.names] or [
                f for f in spec.names if doc["file"] == f"test_{f}"]
            for fn in functions:
                outcomes.add(fn, f"hidden test {doc['test']}", doc["outcome"] == "passed", doc.get("message", ""))
