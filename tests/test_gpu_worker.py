"""grader.run.parent.gpu_worker: a batch slot's warm worker runs one grading's launch job after
another in one process, and a job that hangs is killed with it. The protocol does not depend on
the backend, so it is tested here on the emulator; tests/gpu/test_level2_gpu.py runs it on a GPU."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from grader import api
from grader.compile import compile_source
from grader.exercise import load
from grader.run.parent import gpu_worker
from grader.run.parent.gpu_worker import GpuWorker, run_job
from grader.run.parent.supervisor import TaskSupervisor, read_results
from grader.run.tasks import Task

ROOT = Path(__file__).resolve().parent.parent
LEVEL2 = ROOT / "exercises" / "level2"


def _ptx(tmp_path: Path, name: str, path: Path) -> str:
    compiled = compile_source(path.read_text(), path.name)
    assert compiled.ok, compiled.log
    out = tmp_path / f"{name}.ptx"
    out.write_text(compiled.ptx)
    return str(out)


def _job(folder: Path, stem: str, module: str, tasks: list[Task]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    job = folder / f"{stem}.json"
    job.write_text(json.dumps({"exercise": str(LEVEL2), "backend": "emu", "modules": {"submission": module},
                               "results": str(folder / f"{stem}.jsonl"), "tasks": [t.to_json() for t in tasks],
                               "step_limit": 200_000, "budget": False}))
    return job


@pytest.fixture
def worker(tmp_path):
    w = GpuWorker(tmp_path / "worker", api.child_env(tmp_path), backend="emu")
    assert w.ensure() is not None
    yield w
    w.stop()


def test_two_gradings_jobs_run_in_one_worker(tmp_path, worker):
    solution = _ptx(tmp_path, "solution", ROOT / "reference" / "level2" / "solution.cu")
    skeleton = _ptx(tmp_path, "skeleton", LEVEL2 / "skeleton.cu")
    pid = worker.proc.pid
    task = Task(id="correctness:0", kind="run", backend="emu", sizes={"N": 17}, seeds=(1,))
    first = run_job(worker.folder, _job(tmp_path / "a", "job0", solution, [task]), backend="emu", timeout=60, output_cap=4096)
    second = run_job(worker.folder, _job(tmp_path / "b", "job0", skeleton, [task]), backend="emu", timeout=60, output_cap=4096)
    assert first is not None and second is not None
    assert first.returncode == 0 and second.returncode == 0 and not first.timed_out
    assert read_results(tmp_path / "a" / "job0.jsonl")["correctness:0"].succeeded
    assert not read_results(tmp_path / "b" / "job0.jsonl")["correctness:0"].succeeded  # the skeleton computes nothing
    assert worker.running and worker.proc.pid == pid  # one process for both
    # A worker for another backend does not take the job.
    assert run_job(worker.folder, _job(tmp_path / "c", "job0", skeleton, [task]), backend="gpu", timeout=5, output_cap=4096) is None


def test_a_job_past_its_limit_is_killed_with_the_worker_and_the_next_grading_gets_a_fresh_one(tmp_path, worker):
    solution = _ptx(tmp_path, "solution", ROOT / "reference" / "level2" / "solution.cu")
    never = tmp_path / "never-created"
    stuck = Task(id="time:submission", kind="run", backend="emu", sizes={"N": 17}, seeds=(1,), after=str(never))
    started = time.monotonic()
    run = run_job(worker.folder, _job(tmp_path / "a", "job0", solution, [stuck]), backend="emu", timeout=1.0, output_cap=4096)
    assert run is not None and run.timed_out and time.monotonic() - started < 5
    time.sleep(0.2)
    assert not worker.running
    assert run_job(worker.folder, _job(tmp_path / "b", "job0", solution, [stuck]), backend="emu", timeout=1.0, output_cap=4096) is None
    old = worker.folder
    assert worker.ensure() is not None and worker.folder != old  # the slot's next grading


def test_the_supervisor_hands_the_first_try_to_the_worker(tmp_path, worker):
    solution = _ptx(tmp_path, "solution", ROOT / "reference" / "level2" / "solution.cu")
    exercise = load(LEVEL2)
    runner = TaskSupervisor(exercise_root=exercise.root, workdir=tmp_path, modules={"emu": {"submission": solution}},
                            limits=exercise.spec.limits, env={**api.child_env(tmp_path), gpu_worker.VARIABLE: str(worker.folder)})
    tasks = [Task(id=f"correctness:{n}", kind="run", backend="emu", sizes={"N": n}, seeds=(1,)) for n in (17, 33)]
    stage = runner.run(tasks, backend="emu")
    assert all(stage.results[t.id].succeeded for t in tasks)
    assert len(stage.children) == 1 and stage.children[0].returncode == 0
    # The job ran in the worker: its ticket was answered, and no child of this process ran it.
    assert (worker.folder / "0.done").exists() and worker.running
    assert os.getpid() != worker.proc.pid


def test_a_job_that_ends_the_worker_closes_it_before_answering(tmp_path, worker):
    """A job after which the worker cannot go on (a broken CUDA context; here a grader failure, a module
    file that is not there) is answered with its status, and the worker takes no further job: the
    slot's next grading must not hand its job to a process that is shutting down."""
    task = Task(id="correctness:0", kind="run", backend="emu", sizes={"N": 17}, seeds=(1,))
    run = run_job(worker.folder, _job(tmp_path / "a", "job0", str(tmp_path / "missing.ptx"), [task]), backend="emu",
                  timeout=30, output_cap=4096)
    assert run is not None and run.returncode == 1 and not run.timed_out
    assert "missing.ptx" in run.stderr  # the job's own stderr file, not the worker's log
    assert not (worker.folder / "ready").exists() and not worker.running
    assert run_job(worker.folder, _job(tmp_path / "b", "job0", str(tmp_path / "missing.ptx"), [task]), backend="emu",
                   timeout=5, output_cap=4096) is None


def test_hidden_tests_run_by_pytest_inside_the_worker_for_one_grading_after_another(tmp_path):
    """The slot's second worker runs each grading's hidden tests in-process (pytest.main): the test
    modules are imported afresh each time, the results file is the grading's own, and a failing
    test does not end the worker."""
    from grader.checks.hidden import JOB_VARIABLE, test_files

    w = GpuWorker(tmp_path / "tests-worker", api.child_env(tmp_path), backend="emu")
    assert w.ensure() is not None
    try:
        pid = w.proc.pid
        outcomes = {}
        for label, source in (("solution", ROOT / "reference" / "level2" / "solution.cu"), ("skeleton", LEVEL2 / "skeleton.cu")):
            work = tmp_path / label
            work.mkdir()
            job = work / "hidden-job.json"
            job.write_text(json.dumps({"exercise": str(LEVEL2), "backend": "emu", "module": _ptx(work, label, source),
                                       "results": str(work / "hidden-results.jsonl"), "step_limit": 200_000, "reference": None}))
            args = ["-q", "-p", "grader.run.child.hidden_tests", "-p", "no:cacheprovider", "--rootdir", str(work),
                    *map(str, test_files(LEVEL2))]
            run = run_job(w.folder, job, backend="emu", timeout=120, output_cap=65536, pytest_args=args,
                          env={JOB_VARIABLE: str(job), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
            # pytest's own status, as its own child would have exited: 1 when a test failed
            assert run is not None and run.returncode == (0 if label == "solution" else 1) and not run.timed_out, run
            lines = (work / "hidden-results.jsonl").read_text().splitlines()
            outcomes[label] = {json.loads(line)["outcome"] for line in lines}
            assert "passed" in run.stdout or "failed" in run.stdout  # pytest's own summary, in this job's stdout
        assert outcomes["solution"] == {"passed"} and "failed" in outcomes["skeleton"]
        assert w.running and w.proc.pid == pid
    finally:
        w.stop()


def test_a_worker_that_dies_before_taking_a_job_leaves_it_to_an_ordinary_child(tmp_path, worker, monkeypatch):
    """Killed from outside between a grading's check and its ticket: the job never started, so
    nothing may be charged to the submission; run_job says no worker took it (None)."""
    solution = _ptx(tmp_path, "solution", ROOT / "reference" / "level2" / "solution.cu")
    task = Task(id="correctness:0", kind="run", backend="emu", sizes={"N": 17}, seeds=(1,))
    real_alive = gpu_worker._alive

    def alive_then_killed(folder):
        pid = real_alive(folder)
        worker.stop()  # gone right after the check
        return pid

    monkeypatch.setattr(gpu_worker, "_alive", alive_then_killed)
    assert run_job(worker.folder, _job(tmp_path / "a", "job0", solution, [task]), backend="emu", timeout=30,
                   output_cap=4096) is None


def test_a_worker_stopped_without_waiting_is_killed_and_reaped_in_the_background(worker):
    proc = worker.proc
    began = time.perf_counter()
    worker.stop(wait=False)
    assert worker.proc is None and not worker.running and time.perf_counter() - began < 1.0
    deadline = time.monotonic() + 10
    while proc.returncode is None and time.monotonic() < deadline:  # the reaper's wait() sets it
        time.sleep(0.02)
    assert proc.returncode is not None and proc.returncode < 0  # killed, and reaped: no zombie left


def test_a_harness_that_does_not_import_is_the_exercises_fault_and_the_worker_goes_on(tmp_path, worker):
    """harness.py raising at import: every task of the job is a grader fault with the exercise's line
    (not a crash of the worker, which takes the next grading)."""
    import shutil

    from grader.run.tasks import GRADER_FAULT

    broken = tmp_path / "exercises" / "level2"
    shutil.copytree(LEVEL2, broken)
    (broken / "harness.py").write_text("SETTINGS = {}\nBLOCK = SETTINGS['block']\n")
    module = _ptx(tmp_path, "solution", ROOT / "reference" / "level2" / "solution.cu")
    task = Task(id="correctness:0", kind="run", backend="emu", sizes={"N": 17}, seeds=(1,))
    job = _job(tmp_path / "a", "job0", module, [task])
    job.write_text(json.dumps({**json.loads(job.read_text()), "exercise": str(broken)}))
    pid = worker.proc.pid
    done = run_job(worker.folder, job, backend="emu", timeout=60, output_cap=4096)
    assert done is not None and done.returncode == 0
    result = read_results(tmp_path / "a" / "job0.jsonl")["correctness:0"]
    assert result.status == GRADER_FAULT and "harness.py" in result.message and "KeyError" not in result.message
    # the worker is still there for the next grading, which runs as usual
    again = run_job(worker.folder, _job(tmp_path / "b", "job0", module, [task]), backend="emu", timeout=60, output_cap=4096)
    assert again is not None and again.returncode == 0 and worker.proc.pid == pid
    assert read_results(tmp_path / "b" / "job0.jsonl")["correctness:0"].succeeded
