"""How long a launch task holds its share of the GPU (grader.run.child.runner): only around the
launch's device work, never while the float64 reference is computed on the CPU, so that another
grading's timing on the same GPU waits milliseconds rather than a whole task."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from grader.backends.base import Buffer, LaunchOutcome, poison_fill
from grader.exercise import Harness, load
from grader.run.child import runner
from grader.run.child.cases import CaseSource
from grader.run.child.launch_budget import Budgets
from grader.run.tasks import Task

ROOT = Path(__file__).resolve().parents[1]


class _RecordingDevice:
    """A device in host memory that writes the right answer and records, for each call, whether a
    share of the GPU was held at that moment."""

    name = "gpu"

    def __init__(self) -> None:
        self.sharing = False
        self.log: list[tuple[str, bool]] = []

    @contextmanager
    def using(self) -> Iterator[None]:
        self.sharing = True
        try:
            yield
        finally:
            self.sharing = False

    def _note(self, what: str) -> None:
        self.log.append((what, self.sharing))

    def load(self, artifact: str, kernel: str) -> Any:
        return kernel

    def upload(self, name: str, data: np.ndarray) -> Buffer:
        self._note("upload")
        return Buffer(name, data.dtype, data.size, arg=np.array(data).ravel(), handle=None)

    def empty(self, name: str, dtype: np.dtype, count: int, fill_nan: bool) -> Buffer:
        self._note("empty")
        return Buffer(name, np.dtype(dtype), count, arg=poison_fill(count, dtype), handle=None)

    def launch(self, kernel: Any, grid, block, shared: int, args, *, step_limit: int, seconds: float | None = None) -> LaunchOutcome:
        self._note("launch")
        a, b, c, n = args
        c[:n] = a[:n] + b[:n]
        return LaunchOutcome()

    def download(self, buf: Buffer) -> np.ndarray:
        self._note("download")
        return np.array(buf.arg)

    def canary_damage(self, buf: Buffer) -> dict[str, int]:
        self._note("canaries")
        return {}

    def free(self, bufs) -> None:
        self._note("free")


class _WatchedHarness(Harness):
    """vector_add's harness, noting whether the device held a share while the reference was computed."""

    def __init__(self, exercise, device: _RecordingDevice):
        super().__init__(exercise)
        self._device = device

    def reference(self, inputs, sizes):
        self._device._note("reference")
        return super().reference(inputs, sizes)


def test_the_reference_is_computed_without_a_share_of_the_gpu():
    exercise = load(ROOT / "exercises" / "vector_add")
    device = _RecordingDevice()
    harness = _WatchedHarness(exercise, device)
    budgets = Budgets(exercise.spec, harness, "gpu", None, step_limit=200_000)
    task = Task(id="run:test", kind="run", backend="gpu", sizes={"n": 1000}, seeds=(1,))
    cases = CaseSource(harness, [])  # nothing made ahead: the case is made at the launch, as the test watches
    record, outcome = runner._launch_once(task, 1, exercise.spec, cases, device, "vector_add", budgets.fixed())
    assert record["compare"]["ok"], record
    held = dict(device.log)
    assert held["launch"] and held["upload"] and held["download"] and held["canaries"] and held["free"]
    assert held["reference"] is False, "the float64 reference was computed while holding a share of the GPU"
