"""Hidden tests of a Python exercise (`exercises/<id>/tests/test_*.py`), as a pytest plugin.

Course staff write ordinary pytest functions against one fixture, `student`, whose attributes are
the submission's functions:

    def test_misaligned_start(student):
        assert student.sectors_touched(np.arange(32) * 4 + 4) == (5, 0.8)

    def test_tiled_counts_the_partial_tile(student):
        mem = CountingMemory(A, B)                      # from the exercise's public module
        C = student.matmul_tiled(mem, 32)
        assert mem.reads == expected                    # mem holds what the call left in it

A call runs in the submission's walled-off child (grader/pyexercise/sandbox.py) and gives back the value;
arguments are brought up to date with what the call left in them. A call that fails raises
StudentError with the reason (and the submission's line), which fails the test. The test, its
inputs and every comparison stay in this process, which the child cannot see. Each test's outcome
is appended to the results file with the functions it called, so the grader scores it under them.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from ..exercise import load
from ..run.child.hidden_tests import outcome_record, write_record
from ..notebook import CellLine, SourceMap
from .grade import JOB_VARIABLE, call_text, hide_paths, public_material
from .sandbox import Worker

_CALLED: list[set[str]] = [set()]


class StudentError(Exception):
    """A call of the student's function that did not return a value (an exception, a timeout, a crash)."""


class Student:
    """The submission's functions, called in its child: student.f(*args) -> value."""

    def __init__(self, worker: Worker, where: SourceMap, seconds: dict[str, float]):
        self._worker, self._where, self._seconds = worker, where, seconds

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._worker.functions:
            raise AttributeError(f"the exercise asks for no function named {name}")
        return lambda *args: self._call(name, args)

    def _call(self, fn: str, args: tuple) -> Any:
        _CALLED[0].add(fn)
        if self._worker.dead:
            self._worker.restart()  # a test after a hang or crash gets a fresh child (the time limit stays)
        out = self._worker.call(fn, args, timeout=self._seconds.get(fn))
        if not out.ok:
            raise StudentError(call_text(fn, out, self._where))
        return out.value


@pytest.fixture(scope="session")
def student() -> Student:
    job = json.loads(Path(os.environ[JOB_VARIABLE]).read_text())
    exercise = load(Path(job["exercise"]))
    material = public_material(exercise)
    source = Path(job["source"]).read_text(encoding="utf-8")
    worker = Worker(source, functions=exercise.spec.names, public_files=material.files, limits=exercise.spec.limits,
                    hide=hide_paths(exercise), public_classes=material.classes, changes=exercise.spec.changes)
    where = SourceMap(job["name"], tuple(CellLine(c, l) for c, l in job.get("cells", [])))
    yield Student(worker, where, {f.name: f.call_seconds for f in exercise.spec.functions})
    worker.close()


def pytest_configure(config) -> None:
    """The tests import the exercise's public modules (`from lesson import CountingMemory`)."""
    path = os.environ.get(JOB_VARIABLE)
    if path:
        root = json.loads(Path(path).read_text())["exercise"]
        if root not in sys.path:
            sys.path.insert(0, root)


def pytest_runtest_setup(item) -> None:
    _CALLED[0] = set()


def pytest_runtest_logreport(report) -> None:
    """Stream each test's outcome (and the functions it called) to the results file."""
    record = outcome_record(report)
    if record is None:
        return
    record.update(file=Path(report.nodeid.split("::")[0]).stem, functions=sorted(_CALLED[0]))
    write_record(record, JOB_VARIABLE)
