"""grader.run.child.cases: inputs and references made ahead, exactly as a launch would make them."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from grader.exercise import Harness, load
from grader.run.child.cases import CaseSource, planned_cases
from grader.run.tasks import Task

ROOT = Path(__file__).resolve().parents[1]


class _CountingHarness(Harness):
    """level2's harness, counting its calls and the threads they ran on."""

    def __init__(self, exercise, slow: float = 0.0):
        super().__init__(exercise)
        self.made: list[tuple[int, int]] = []
        self.references = 0
        self.threads: set[str] = set()
        self.slow = slow

    def make_inputs(self, sizes, rng):
        self.threads.add(threading.current_thread().name)
        inputs = super().make_inputs(sizes, rng)
        self.made.append((sizes["N"], int(inputs["A"].view(np.uint32)[0, 0])))
        time.sleep(self.slow)
        return inputs

    def reference(self, inputs, sizes):
        self.references += 1
        return super().reference(inputs, sizes)


@pytest.fixture
def exercise():
    return load(ROOT / "exercises" / "level2")


def _tasks():
    return [Task(id="correctness:0", kind="run", backend="gpu", sizes={"N": 17}, seeds=(11, 12)),
            Task(id="correctness:1", kind="run", backend="gpu", sizes={"N": 33}, seeds=(13, 14)),
            Task(id="race:repeat", kind="run", backend="gpu", sizes={"N": 40}, seeds=(15,) * 10),
            Task(id="time", kind="time", backend="gpu", sizes={"N": 64}, seeds=(16,), compare=False)]


def test_each_case_is_what_its_seed_gives_and_repeats_share_one(exercise):
    harness = _CountingHarness(exercise)
    cases = CaseSource(harness, planned_cases(_tasks()))
    try:
        for task in _tasks()[:3]:
            for seed in task.seeds:
                case = cases.case(seed, task.sizes, reference=True)
                fresh = Harness(exercise).make_inputs(task.sizes, np.random.default_rng(seed))
                for name, array in fresh.items():
                    assert np.array_equal(case.inputs[name], array)
                want = Harness(exercise).reference(fresh, task.sizes)
                assert np.array_equal(case.expected["C"], want["C"])
    finally:
        cases.close()
    # 6 distinct seeds (the race check's 10 launches are one case); the timing's inputs are made ahead,
    # its reference is not (grader.run.child.timing computes it on the GPU where it can)
    assert sorted(n for n, _ in harness.made) == [17, 17, 33, 33, 40, 64]
    assert harness.references == 5
    assert "cases" in harness.threads


def test_cases_are_made_ahead_but_not_too_far(exercise):
    harness = _CountingHarness(exercise, slow=0.05)
    cases = CaseSource(harness, planned_cases(_tasks()), ahead=1)
    try:
        cases.case(11, {"N": 17}, reference=True)
        time.sleep(0.5)  # time enough to make every case, were it not bounded
        assert len(harness.made) == 2, harness.made  # the one asked for, and one ahead
    finally:
        cases.close()


def test_a_case_asked_out_of_order_or_unplanned_is_made_on_the_spot(exercise):
    harness = _CountingHarness(exercise)
    cases = CaseSource(harness, planned_cases(_tasks()))
    try:
        cases.case(15, {"N": 40}, reference=True)  # the launches skip ahead (earlier tasks skipped)
        again = cases.case(11, {"N": 17}, reference=True)  # then one of the skipped cases after all
        fresh = Harness(exercise).make_inputs({"N": 17}, np.random.default_rng(11))
        assert np.array_equal(again.inputs["A"], fresh["A"])
        other = cases.case(99, {"N": 5}, reference=False)
        assert other.expected is None and other.inputs["A"].shape == (5, 5)
    finally:
        cases.close()


def test_shared_inputs_cannot_be_changed(exercise):
    cases = CaseSource(Harness(exercise), [])
    case = cases.case(1, {"N": 8}, reference=False)
    with pytest.raises(ValueError):
        case.inputs["A"][0, 0] = 1.0


def test_a_harness_error_reaches_the_launch_that_needs_the_case(exercise):
    class Broken(Harness):
        def make_inputs(self, sizes, rng):
            raise RuntimeError("the harness is broken")

    cases = CaseSource(Broken(exercise), planned_cases(_tasks()))
    try:
        with pytest.raises(RuntimeError, match="broken"):
            cases.case(11, {"N": 17}, reference=True)
    finally:
        cases.close()
