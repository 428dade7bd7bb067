"""The Triton kind's performance check: the [performance] table, the scoring rule on fake timings, the
gate, the check not run on the CPU path, the child's timing request (on CPU torch, with a stand-in
clock), the answers of the timed launches, and what `grade validate` asks of it."""
from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import numpy as np
import pytest

from grader import exercise as exercise_module
from grader.errors import SpecError
from grader.results import NotRun, Report, TestResult
from grader.triton import spec as tritonspec
from grader.triton import timing

ROOT = Path(__file__).resolve().parent.parent
TRITON = ("triton_vector_add", "triton_softmax", "triton_rmsnorm", "triton_matmul")
SIZES = {"triton_vector_add": {"n": 2**24}, "triton_softmax": {"rows": 4096, "cols": 4096},
         "triton_rmsnorm": {"rows": 4096, "cols": 4096}, "triton_matmul": {"M": 2048, "N": 2048, "K": 2048}}


def raw(exercise: str) -> dict:
    return tomllib.loads((ROOT / "exercises" / exercise / "spec.toml").read_text())


def vector_add_spec():
    return exercise_module.load(ROOT / "exercises" / "triton_vector_add").spec


# --- the spec -------------------------------------------------------------------------------------

@pytest.mark.parametrize("exercise", TRITON)
def test_every_triton_exercise_times_at_its_size_for_ten_of_a_hundred_points(exercise):
    spec = tritonspec.from_dict(raw(exercise))
    assert spec.performance is not None and dict(spec.performance.size) == SIZES[exercise]
    assert spec.points["performance"] == 10 and spec.points["correctness"] == 40 and spec.max_score == 100
    assert spec.performance.baseline == "torch" and "performance" in spec.checks
    assert callable(getattr(timing, "judge"))


def test_the_table_is_optional_and_its_defaults_are_the_cuda_kinds():
    doc = raw("triton_vector_add")
    del doc["performance"], doc["points"]["performance"]
    assert tritonspec.from_dict(doc).performance is None
    doc = raw("triton_vector_add")
    doc["performance"] = {"size": {"n": 1024}}
    perf = tritonspec.from_dict(doc).performance
    assert (perf.full_marks, perf.repeats, perf.baseline, perf.rtol, perf.atol) == (0.9, 20, "none", None, None)


def test_the_matmul_table_widens_the_tolerance_for_k_2048():
    perf = tritonspec.from_dict(raw("triton_matmul")).performance
    assert (perf.rtol, perf.atol) == (2e-3, 0.15)


@pytest.mark.parametrize("change, words", [
    (lambda d: d.pop("performance"), "needs a [performance] table"),
    (lambda d: d["performance"].update(baseline="cublas"), "performance.baseline"),
    (lambda d: d["performance"].update(size={"m": 4}), "performance.size"),
    (lambda d: d["performance"].update(repeats=0), "performance.repeats"),
    (lambda d: d["performance"].update(speed=1), "performance"),
    (lambda d: d["performance"].pop("size"), "performance"),
])
def test_a_bad_performance_table_is_a_spec_error_that_names_the_field(change, words):
    doc = copy.deepcopy(raw("triton_vector_add"))
    change(doc)
    with pytest.raises(SpecError, match=words.replace("[", r"\[").replace("]", r"\]")):
        tritonspec.from_dict(doc)


# --- the scoring rule ------------------------------------------------------------------------------

@pytest.mark.parametrize("mine, ref, fraction, passed", [
    (100.0, 100.0, 1.0, True),     # as fast as the reference
    (110.0, 100.0, 1.0, True),     # 91 % of its speed: at or above full_marks (0.9)
    (120.0, 100.0, 0.75, False),   # 83 %: 0.93 of the full-marks speed, the 0.75 step
    (200.0, 100.0, 0.5, False),    # 50 %: 0.56 of it
    (1000.0, 100.0, 0.0, False),   # 10 %: under the first step
])
def test_the_fastest_calls_score_by_the_cuda_checks_steps(mine, ref, fraction, passed):
    conf = tritonspec.Performance(size={"n": 16}, full_marks=0.9, repeats=3)
    # ms: only the fastest of each counts; the slow ones are another process's noise
    result = timing.judge(conf, 10.0, {"n": 16}, [mine / 1000, 5.0, 9.0], [ref / 1000, 7.0, 8.0])
    assert result.score == pytest.approx(10.0 * fraction) and result.passed is passed
    assert f"{mine:,.1f} µs against {ref:,.1f} µs" in result.output
    assert result.extra["min_us"] == {"submission": mine, "reference": ref}


def test_the_library_is_shown_for_information_and_scores_nothing():
    conf = tritonspec.Performance(size={"n": 16}, baseline="torch")
    plain = timing.judge(conf, 10.0, {"n": 16}, [0.2], [0.1])
    shown = timing.judge(conf, 10.0, {"n": 16}, [0.2], [0.1], [0.05])
    assert shown.score == plain.score == 5.0
    assert "the library (torch) took 50.0 µs: you reach 25% of its speed" in shown.output
    assert shown.extra["min_us"]["library"] == 50.0
    failed = timing.judge(conf, 10.0, {"n": 16}, [0.2], [0.1], None, library_error="boom")
    assert failed.score == 5.0 and "could not be timed here: boom" in failed.output


# --- where it runs ------------------------------------------------------------------------------------

def test_on_the_cpu_path_it_is_not_run_and_its_points_leave_the_denominator():
    spec = vector_add_spec()
    result = timing.performance(exercise_module.load(ROOT / "exercises" / "triton_vector_add"), spec, "", None, 1,
                                gpu=None, gate=True, params_of=lambda *a: [])
    assert isinstance(result, NotRun) and "needs a GPU" in result.reason
    assert result.policy == "exclude" and not result.grader_fault and result.points == 10
    others = TestResult("Correct", "correctness", 90.0, 90.0, True, "")
    report = Report(exercise="x", submission="s", sha256=None, backend="emu", device="cpu", tests=(others,),
                    not_run=(result,), max_score=100.0, seconds=0.0, seeds={"base": 1})
    assert report.score == 100.0 and "needs a GPU" in report.score_line()


def test_a_kernel_that_is_not_correct_is_not_judged_on_the_gpu():
    spec = vector_add_spec()
    result = timing.performance(exercise_module.load(ROOT / "exercises" / "triton_vector_add"), spec, "", None, 1,
                                gpu=0, gate=False, params_of=lambda *a: [])
    assert isinstance(result, TestResult) and result.score == 0 and result.extra.get("gated")
    assert result.output.startswith("Not judged")


class FakeWorker:
    """A GPU child stand-in: the student's ("sub") times 0.2 ms, the reference 0.1, the library 0.05;
    the student's answers are x + y at the sampled indices, or NaN from `skip_from` on."""

    made: list = []
    skip_from = None
    staff_fault = ""

    def __init__(self, source, *, launcher, limits, hide=(), gpu=None, library=None):
        self.source, self.library, self.deadline = source, library, 0.0
        self.fault = FakeWorker.staff_fault if source != "sub" else ""
        FakeWorker.made.append(self)
        self.closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.closed = True

    def time_call(self, params, *, fn="launcher", repeats, warmup=2, sleep_cycles=0, sample=(), check=False):
        from grader.triton.sandbox import TimingOutcome

        assert self.deadline > 0 or self.source == "sub"  # the staff child's limit starts at its timing
        x, y = (np.asarray(p["value"], dtype=np.float64) for p in params[:2])
        right = (x + y)[np.asarray(sample, dtype=np.int64) % x.size] if check else None
        calls = [{"unwritten": {"out": 0 if FakeWorker.skip_from is None or c < FakeWorker.skip_from else x.size},
                  "sample": {"out": right if FakeWorker.skip_from is None or c < FakeWorker.skip_from else np.full(right.size, np.nan)}}
                 for c in range(repeats + 1)] if check else []
        ms = {"sub": 0.2}.get(self.source, 0.05 if fn == "library" else 0.1)
        return TimingOutcome(True, ms=(ms,) * repeats, calls=tuple(calls))


@pytest.fixture
def fake_children(monkeypatch):
    import dataclasses

    from grader.triton.grade import case_params, harness

    FakeWorker.made, FakeWorker.skip_from, FakeWorker.staff_fault = [], None, ""
    monkeypatch.setattr(timing, "TritonWorker", FakeWorker)
    exercise = exercise_module.load(ROOT / "exercises" / "triton_vector_add")
    spec = dataclasses.replace(exercise.spec, performance=dataclasses.replace(exercise.spec.performance, size={"n": 1000},
                                                                              repeats=3))

    def run():
        return timing.performance(exercise, spec, "sub", harness(exercise), 1, gpu=0, gate=True, params_of=case_params)
    return run


def test_half_the_references_speed_earns_half_the_points_and_shows_the_library(fake_children):
    result = fake_children()
    assert isinstance(result, TestResult) and result.score == 5.0 and not result.passed
    assert "200.0 µs against 100.0 µs" in result.output and "the library (torch) took 50.0 µs" in result.output
    student, staff = sorted(FakeWorker.made, key=lambda w: w.source != "sub")
    assert staff.library is not None and "def library" in staff.library and student.library is None
    assert all(w.closed for w in FakeWorker.made)


def test_a_submission_that_skips_work_once_timed_earns_nothing(fake_children):
    FakeWorker.skip_from = 2
    result = fake_children()
    assert result.score == 0 and result.extra.get("wrong")
    assert "timed launch 2 of 3 left 1,000 of 1,000 elements of out NaN" in result.output
    assert all(w.closed for w in FakeWorker.made)


def test_a_reference_that_cannot_be_timed_is_the_graders_fault(fake_children):
    FakeWorker.staff_fault = "grader fault: no GPU"
    result = fake_children()
    assert isinstance(result, NotRun) and result.grader_fault and "could not be timed" in result.reason


# --- the answers of the timed launches -------------------------------------------------------------------

def _facts(out: np.ndarray, sample, nan: int = 0) -> dict:
    return {"unwritten": {"out": nan}, "sample": {"out": out.ravel()[np.asarray(sample) % out.size]}}


def test_right_answers_pass_and_a_launch_that_skips_work_when_timed_is_named():
    spec = vector_add_spec()
    expected = {"out": np.linspace(-1, 1, 1000)}
    sample = timing.sample_indices(spec, {"n": 1000}, np.random.default_rng(0))
    assert 0 in sample and 999 in sample
    right = _facts(expected["out"].astype(np.float32), sample)
    assert timing.answer_problem(spec, spec.performance, expected, [right, right, right], sample) == ""
    skipped = _facts(np.full(1000, np.nan), sample, nan=1000)
    problem = timing.answer_problem(spec, spec.performance, expected, [right, right, skipped], sample)
    assert problem.startswith("timed launch 2 of 2 left 1,000 of 1,000 elements of out NaN")
    wrong = _facts(expected["out"] + 1.0, sample)
    problem = timing.answer_problem(spec, spec.performance, expected, [wrong, right], sample)
    assert problem.startswith("the untimed call before the timed ones computed a wrong out: element [")


@pytest.mark.parametrize("sample", [{"not": "numbers"}, "text", [1.0, 2.0]])
def test_a_damaged_sample_from_the_students_process_is_named_not_raised(sample):
    spec = vector_add_spec()
    facts = {"unwritten": {"out": 0}, "sample": {"out": sample}}
    problem = timing.answer_problem(spec, spec.performance, {"out": np.zeros(100)}, [facts], [0, 5, 99])
    assert problem == "the untimed call before the timed ones reported a damaged sample of out"


def test_the_performance_tolerance_replaces_the_specs_where_given():
    spec = tritonspec.from_dict(raw("triton_matmul"))
    expected = {"c": np.full((4, 4), 10.0)}
    sample = [0, 5, 15]
    off = {"unwritten": {"c": 0}, "sample": {"c": np.full(3, 10.1)}}  # 0.1 off: inside atol 0.15, outside 2e-2
    assert timing.answer_problem(spec, spec.performance, expected, [off], sample) == ""
    import dataclasses
    strict = dataclasses.replace(spec.performance, rtol=None, atol=None)
    assert "computed a wrong c" in timing.answer_problem(spec, strict, expected, [off], sample)


# --- the child's timing request (CPU torch, a stand-in clock) ------------------------------------------------

class FakeClock:
    """The child's Clock on the CPU: events that count, a sleep that records its cycles."""

    device = "cpu"

    def __init__(self, torch):
        self.torch, self.sleeps, self.records = torch, [], 0
        self.empty = torch.empty

    def event(self, enable_timing=False):
        assert enable_timing
        return object()

    def record(self, event):
        self.records += 1

    def elapsed(self, start, stop):
        return 0.25

    def synchronize(self):
        pass

    def sleep(self, cycles):
        self.sleeps.append(cycles)

    def l2(self, torch):
        return 4096


def _child_request(n: int, **how) -> dict:
    from grader.pyexercise import values as pyvalues

    x = np.arange(n, dtype=np.float32)
    return {"id": 7, "params": [{"name": "x", "role": "in", "dtype": "float32", "shape": [n], "value": pyvalues.encode(x)},
                                {"name": "out", "role": "out", "dtype": "float32", "shape": [n], "poison": 0x7FC0DEAD},
                                {"name": "n", "role": "int", "value": n}],
            "time": {"fn": "launcher", "warmup": 2, "repeats": 3, "sleep_cycles": 1000, "sample": [0, 3, 9], **how}}


def test_the_child_times_each_timed_call_after_a_sleep_and_reports_every_checked_answer():
    torch = pytest.importorskip("torch")
    from grader.pyexercise import values as pyvalues
    from grader.triton import child

    seen = []

    def launcher(x, out, n):
        seen.append(int(torch.isnan(out).sum()))  # every call starts from the poison
        out.copy_(2 * x)

    clock = FakeClock(torch)
    reply = child._time(_child_request(10, check=True), launcher, None, clock, torch, np, pyvalues)
    assert reply["ok"] and reply["ms"] == [0.25] * 3 and clock.sleeps == [1000] * 3 and clock.records == 6
    assert seen == [10] * 5  # 2 warm-up calls, 3 timed
    assert len(reply["calls"]) == 4  # call 0 and each timed call
    assert all(c["unwritten"] == {"out": 0} for c in reply["calls"])
    assert list(pyvalues.decode(reply["calls"][-1]["sample"]["out"], {})) == [0.0, 6.0, 18.0]


def test_the_child_catches_a_launcher_that_stops_working_once_timed():
    torch = pytest.importorskip("torch")
    from grader.pyexercise import values as pyvalues
    from grader.triton import child

    calls = []

    def launcher(x, out, n):
        calls.append(1)
        if len(calls) <= 2:  # right in the warm-up, nothing once timed
            out.copy_(2 * x)

    reply = child._time(_child_request(10, check=True), launcher, None, FakeClock(torch), torch, np, pyvalues)
    unwritten = [c["unwritten"]["out"] for c in reply["calls"]]
    assert unwritten == [0, 10, 10, 10]
    spec = vector_add_spec()
    facts = [{"unwritten": c["unwritten"], "sample": {"out": pyvalues.decode(c["sample"]["out"], {})}} for c in reply["calls"]]
    problem = timing.answer_problem(spec, spec.performance, {"out": 2.0 * np.arange(10)}, facts, [0, 3, 9])
    assert problem.startswith("timed launch 1 of 3 left 10 of 10 elements of out NaN")


def test_the_child_times_the_library_only_where_it_was_given_one():
    torch = pytest.importorskip("torch")
    from grader.pyexercise import values as pyvalues
    from grader.triton import child

    used = []
    reply = child._time(_child_request(4, fn="library"), lambda *a: used.append("launcher"),
                        lambda x, out, n: used.append("library"), FakeClock(torch), torch, np, pyvalues)
    assert reply["ok"] and set(used) == {"library"} and reply["calls"] == []
    reply = child._time(_child_request(4, fn="library"), lambda *a: None, None, FakeClock(torch), torch, np, pyvalues)
    assert not reply["ok"] and "no library()" in reply["error"]


def test_a_cpu_worker_refuses_a_timing_request():
    from grader.spec import Limits
    from grader.triton.sandbox import TritonWorker

    worker = TritonWorker.__new__(TritonWorker)  # no child: the refusal comes before any is started
    worker.gpu = None
    outcome = TritonWorker.time_call(worker, [], repeats=3)
    assert not outcome.ok and "needs a GPU" in outcome.error
    assert Limits  # the worker's limits type, imported as the grader does


# --- grade validate ---------------------------------------------------------------------------------------

def _report(tests, not_run=()) -> Report:
    return Report(exercise="triton_vector_add", submission="s", sha256=None, backend="emu", device="cpu",
                  tests=tuple(tests), not_run=tuple(not_run), max_score=100.0, seconds=0.0, seeds={"base": 1})


def _fake_grade(performance_fails: bool, skipped: NotRun | None):
    perf_skip = (skipped,) if skipped else ()

    def grade(root, path, backend, seed):
        path = Path(path)
        load = TestResult("Loads", "compile", 0.0, 0.0, True, "")
        if path.name == "solution.py":
            return _report([load, TestResult("C", "correctness", 90.0, 90.0, True, "")], perf_skip)
        if path.name == "skeleton.py":
            return _report([load, TestResult("C", "correctness", 0.0, 40.0, False, "wrong")], perf_skip)
        from grader.staff.expectation import read_expectation

        exp = read_expectation(path)
        tests = [load, TestResult("X", exp.expect, 0.0, 10.0, False, "wrong")]
        tests += [TestResult("X", c, 0.0, 10.0, False, "wrong") for c in exp.also]
        if performance_fails:
            tests.append(TestResult(timing.TITLE, "performance", 2.5, 10.0, False, "slow"))
        return _report(tests, () if performance_fails else perf_skip)
    return grade


@pytest.mark.parametrize("performance_fails", [False, True])
def test_validate_does_not_ask_for_performance_where_it_cannot_run_and_reads_it_as_information(performance_fails):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from grader.triton.validate import validate

    exercise = exercise_module.load(ROOT / "exercises" / "triton_vector_add")
    skipped = timing.not_run_on_cpu(exercise.spec)
    result = validate(exercise, grade=_fake_grade(performance_fails, skipped), conventions=lambda e, v: None,
                      backend="emu", seed=1, progress=lambda s: None)
    failures = [text for ok, text in result.items if not ok]
    assert not failures, failures
    noted = [text for _, text in result.items if "performance, informative: 2.5 / 10" in text]
    assert bool(noted) is performance_fails


def test_validate_still_reports_a_performance_check_the_grader_failed_to_run():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from grader.triton.validate import validate

    exercise = exercise_module.load(ROOT / "exercises" / "triton_vector_add")
    fault = NotRun(timing.TITLE, "performance", "the reference solution could not be timed (boom)", 10.0, "exclude", True)
    result = validate(exercise, grade=_fake_grade(False, fault), conventions=lambda e, v: None, backend="gpu", seed=1,
                      progress=lambda s: None)
    failures = [text for ok, text in result.items if not ok]
    assert any("could not be timed (boom)" in f for f in failures), failures


# --- end to end on the CPU path (a jailed child) --------------------------------------------------------------

@pytest.mark.slow
def test_the_reference_on_the_cpu_path_scores_full_marks_with_performance_not_run(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from grader import api

    report = api.grade(ROOT / "exercises" / "triton_vector_add", ROOT / "reference" / "triton_vector_add" / "solution.py",
                       backend="emu", seed=1)
    assert report.score == report.max_score == 100
    assert [n.category for n in report.not_run] == ["performance"] and "needs a GPU" in report.not_run[0].reason
    assert not any(t.category == "performance" for t in report.tests)


@pytest.mark.slow
def test_the_staff_child_is_alive_when_it_is_timed(monkeypatch):
    """Real jailed children (the CPU's, standing in for GPU ones): the staff child is started from a
    worker thread, and a jail's launcher dies with the thread that started it; it must outlive the
    student's timing and still be running when the reference is timed."""
    import dataclasses

    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from grader.triton.grade import case_params, harness
    from grader.triton.sandbox import TimingOutcome, TritonWorker

    alive = []

    class CpuStandIn(TritonWorker):
        def __init__(self, source, *, launcher, limits, hide=(), gpu=None, library=None):
            super().__init__(source, launcher=launcher, limits=limits, hide=hide)
            self.staff = library is not None

        def time_call(self, params, *, fn="launcher", repeats, warmup=2, sleep_cycles=0, sample=(), check=False):
            alive.append((self.staff, fn, self.proc.poll() is None and not self.dead))
            x, y = (np.asarray(p["value"], dtype=np.float64) for p in params[:2])
            right = (x + y)[np.asarray(sample, dtype=np.int64) % x.size]
            calls = tuple({"unwritten": {"out": 0}, "sample": {"out": right}} for _ in range(repeats + 1)) if check else ()
            return TimingOutcome(True, ms=(0.1,) * repeats, calls=calls)

    monkeypatch.setattr(timing, "TritonWorker", CpuStandIn)
    exercise = exercise_module.load(ROOT / "exercises" / "triton_vector_add")
    spec = dataclasses.replace(exercise.spec, performance=dataclasses.replace(exercise.spec.performance, size={"n": 1000},
                                                                              repeats=3))
    source = (ROOT / "reference" / "triton_vector_add" / "solution.py").read_text()
    result = timing.performance(exercise, spec, source, harness(exercise), 1, gpu=0, gate=True, params_of=case_params)
    assert alive == [(False, "launcher", True), (True, "launcher", True), (True, "library", True)]
    assert isinstance(result, TestResult) and result.passed
