"""Hidden pytest tests shipped with an exercise (`exercises/<id>/tests/test_*.py`).

Course staff write ordinary pytest functions against three fixtures the grader provides:

    def test_identity_gives_b(launch, make_inputs):
        inputs = make_inputs({"N": 40})
        inputs["A"] = np.eye(40, dtype=np.float32)
        out = launch({"N": 40}, inputs)          # runs the student's kernel on this backend
        assert out.error is None, out.error
        np.testing.assert_array_equal(out["C"], inputs["B"].ravel())

`launch(sizes, inputs)` returns a KernelRun (outputs by parameter name, `.error`), `make_inputs`
gives the harness's random inputs, `backend` names the backend ("gpu" or "emu"). The tests run in a
child process beside the other launches: `python -m pytest -p grader.run.child.hidden_tests EXERCISE/tests`,
with the job described by the KERNEL_GRADER_HIDDEN_JOB environment variable.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pytest

from ...checks.hidden import EARLY_VARIABLE, JOB_VARIABLE
from .launch_budget import Budgets
from ..parent.supervisor import wait_for_file

_EARLY: dict[str, Any] = {}  # the device opened before the job existed (or a warm worker's own)
# Called with the exit status just before a hung kernel ends the process (a warm worker answers its
# job first, grader.run.child.warm_worker).
BEFORE_EXIT: list[Any] = []


def pytest_configure(config) -> None:
    """Started while the submission compiles: open the device now, idle until the job comes."""
    early = os.environ.get(EARLY_VARIABLE)
    if early and "device" not in _EARLY:
        from ...backends import open_device

        _EARLY["device"] = open_device(early.split()[0])  # no share of the GPU until a launch


def _read_job() -> Mapping[str, Any]:
    """The job, waiting for it when this child was started before the submission compiled."""
    path = Path(os.environ[JOB_VARIABLE])
    early = os.environ.get(EARLY_VARIABLE)
    if early:
        wait_for_file(path, float(early.split()[1]))
    return json.loads(path.read_text())


class KernelRun(dict):
    """Outputs of one launch by parameter name (flat arrays), plus `error` (None when it ran)."""

    error: str | None = None

    def __missing__(self, key: str) -> Any:
        # A launch that failed has no outputs to read. A test that reads one without checking `.error`
        # first fails as an assertion (the kernel's failure, the student's), not as a KeyError, which
        # would count as a bug in the exercise and take the hidden tests' points out of the grade.
        if self.error:
            raise AssertionError(f"no output {key!r}: the launch failed ({self.error})")
        raise KeyError(key)


class _Session:
    def __init__(self, job: Mapping[str, Any]):
        from ...backends import open_device
        from ...exercise import Harness, load

        self.job = job
        self.exercise = load(Path(job["exercise"]))
        self.harness = Harness(self.exercise)
        self.device = _EARLY.pop("device", None) or open_device(job["backend"])
        self.budgets = Budgets(self.exercise.spec, self.harness, job["backend"], job.get("reference"),
                               step_limit=int(job["step_limit"]), device=self.device)
        from .launch import load_chain

        self.kernel = load_chain(self.device, job["module"], self.exercise.spec)
        self.hung = ""  # set when a GPU kernel was left running: the device cannot be used again
        # the error of the launch that left the CUDA context unusable ("" while it is usable): later
        # launches report it instead of raising, and a warm worker must end
        self.broken = ""

    def launch(self, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray] | None = None, seed: int = 0) -> KernelRun:
        from .launch import launch_kernel

        sizes = dict(sizes)
        run = KernelRun()
        if self.hung:
            run.error = f"not run: an earlier launch ({self.hung}) did not finish"
            return run
        if self.broken:  # an earlier launch's fault left the CUDA context unusable: the kernel's doing
            run.error = f"not run: an earlier launch failed and left the GPU unusable ({self.broken})"
            return run
        earlier = self.budgets.stopped_at(sizes)
        if earlier is not None:  # it did not finish at this size: the same verdict, at no cost
            run.error = earlier.get("error") or "not run: an earlier launch did not finish"
            return run
        if inputs is None:
            inputs = self.harness.make_inputs(sizes, np.random.default_rng(seed))
        budget = self.budgets.for_sizes(sizes)  # the reference's cost at this size, measured before this launch
        with self.device.using():  # a share of the GPU per launch, as the runner holds one per launch
            done = launch_kernel(self.exercise.spec, self.device, self.kernel, sizes, inputs,
                                 step_limit=budget.step_limit, seconds=budget.seconds, work=budget.work)
            if not done.outcome.fatal:
                # Zeroed before their memory is reused: in a batch's warm worker the next submission runs here.
                getattr(self.device, "scrub", self.device.free)(list(done.buffers.values()))
        outcome = budget.explain(done.outcome)
        if done.outcome.fatal and not self.broken:
            self.broken = outcome.error or "a fatal CUDA error"
        if outcome.findings.get("status") == "time-limit":
            self.hung = ", ".join(f"{k} = {v}" for k, v in sizes.items())
        if outcome.findings.get("status") == "step-limit":
            self.budgets.stopped(sizes, {"error": outcome.error})
        run.update(done.contents)
        run.error = outcome.error
        return run


_SESSION: list[_Session] = []


@pytest.fixture(scope="session")
def _grader_session() -> _Session:
    _SESSION.append(_Session(_read_job()))
    return _SESSION[0]


def pytest_unconfigure(config) -> None:
    """After a GPU kernel was left running, exit at once: the interpreter's own shutdown would wait for
    it (every test's outcome is already in the results file)."""
    if _SESSION and _SESSION[0].hung:
        for hook in BEFORE_EXIT:
            hook(1)
        os._exit(1)  # pytest's "some tests failed"


@pytest.fixture
def launch(_grader_session: _Session):
    """launch(sizes, inputs=None, seed=0) -> KernelRun: the student's kernel on this backend."""
    return _grader_session.launch


@pytest.fixture
def make_inputs(_grader_session: _Session):
    """make_inputs(sizes, seed=0) -> dict of the harness's inputs."""
    return lambda sizes, seed=0: _grader_session.harness.make_inputs(dict(sizes), np.random.default_rng(seed))


@pytest.fixture
def backend(_grader_session: _Session) -> str:
    return _grader_session.job["backend"]


# How much of a staff fault's traceback the results file keeps.
FAULT_CHARS = 8000


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Mark a test stopped by an exception of the staff's own (grader.run.tasks.HarnessFault): an
    AssertionError (numpy.testing's included) or pytest.fail() is a verdict on the student's kernel;
    anything else (a KeyError in the test, a fixture or the harness that raises) is the exercise's bug,
    since launch() reports every failure of the kernel as a value (`.error`), never as an exception."""
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if excinfo is None or report.outcome == "skipped":
        return
    if excinfo.errisinstance((AssertionError, pytest.fail.Exception)):
        return
    if _SESSION and _SESSION[0].broken:
        # The student's kernel broke the CUDA context; whatever the test raised after that (a CUDA
        # error from CuPy, most often) is the kernel's failure, not the exercise's.
        return
    import traceback

    report.staff_fault = "".join(traceback.format_exception(excinfo.type, excinfo.value, excinfo.tb))[-FAULT_CHARS:]


def outcome_record(report) -> dict[str, str] | None:
    """What a hidden test's report says, for the results file (test, outcome, the failure's first
    words, and `fault`: the traceback when the staff's own code raised), or None for a phase that is
    not its outcome (a passing setup, any teardown)."""
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return None
    message = ""
    if report.outcome != "passed":
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr)[-500:]
    record = {"test": report.nodeid.split("::")[-1], "outcome": report.outcome, "message": message[:500]}
    fault = getattr(report, "staff_fault", "")
    if fault and report.outcome != "passed":
        record["fault"] = fault
    return record


def pytest_runtest_logreport(report) -> None:
    """Stream each test's outcome to the results file, so a hang or crash loses only that test."""
    record = outcome_record(report)
    if record is not None:
        write_record(record)


def write_record(record: Mapping[str, Any], variable: str = JOB_VARIABLE) -> None:
    """Append one test's record to the results file of the job that $`variable` names (none: nothing)."""
    path = os.environ.get(variable)
    if not path:
        return
    results = json.loads(Path(path).read_text())["results"]
    with open(results, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")

