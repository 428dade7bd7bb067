"""grader.staff.batch.ray: a batch on a local Ray cluster started here (two logical GPUs on two CPUs), on the emulator.

Skipped when Ray is not installed (it is an optional extra: pip install 'kernel-grader[ray]').
"""
from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from grader.staff import batch  # noqa: E402
from grader.staff.batch.ray import RayExecutor, TaskInput  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercises" / "vector_add"
SOLUTION = ROOT / "reference" / "vector_add" / "solution.cu"

pytestmark = pytest.mark.slow

HANG = """__device__ volatile int spin = 1;
extern "C" __global__ void add(const float* x, const float* y, float* out, int n)
{
    while (spin) { }   // never ends
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"""
TRAP = """extern "C" __global__ void add(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) asm volatile("trap;");
    if (i < n) out[i] = x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def cluster():
    # Two logical GPUs on two CPUs: enough for Ray to give two tasks a GPU each at once.
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    # The stand-in tasks below are defined in this test module, which the workers cannot import.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


def rows(out: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO((out / batch.CSV_NAME).read_text())))


def results(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (out / batch.RESULTS).glob("*.json")}


def test_class_on_ray_with_a_hang_and_a_crash_then_resume(cluster, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.cu").write_text(SOLUTION.read_text())
    (subs / "bob.cu").write_text(SOLUTION.read_text() + "\n// bob\n")
    (subs / "hang.cu").write_text(HANG)
    (subs / "trap.cu").write_text(TRAP)
    (subs / "dan").mkdir()
    (subs / "dan" / "notes.txt").write_text("no kernel\n")
    out = tmp_path / "out"
    # One whole logical GPU per task: the two tasks running at once must see different devices.
    executor = RayExecutor.connect(None, backend="emu", gpus_per_task=1.0)
    assert executor.workers == 2
    options = batch.Options(backend="emu", timeout=10, seed=1)
    started = time.monotonic()
    done = []
    result = batch.run_batch(EXERCISE, subs, out, options, executor=executor, on_done=done.append)
    seconds = time.monotonic() - started
    assert result.graded_now == 5 and result.skipped == 0
    assert sorted(o.student for o in done) == ["alice", "bob", "dan", "hang", "trap"]
    docs = results(out)
    status = {s: d["extra_data"]["batch"]["status"] for s, d in docs.items()}
    assert status == {"alice": "graded", "bob": "graded", "dan": "compile-error", "hang": status["hang"], "trap": "graded"}
    assert docs["alice"]["score"] == docs["bob"]["score"] > 0
    # The hang: stopped, scored 0 on correctness whichever limit stopped it (the launch's or the grading's).
    assert status["hang"] in ("graded", "timeout")
    hang_correct = [t for t in docs["hang"]["tests"] if t["tags"][0] == "correctness"]
    assert hang_correct and all(t["score"] == 0 for t in hang_correct)
    assert "did not finish" in json.dumps(docs["hang"])
    # The crash: the trap is the kernel's own verdict, not a grader failure.
    trap_correct = [t for t in docs["trap"]["tests"] if t["tags"][0] == "correctness"]
    assert trap_correct[0]["score"] < trap_correct[0]["max_score"] and "trap" in trap_correct[0]["output"]
    # Each task ran on the GPU Ray gave it, and the grading child saw that as CUDA_VISIBLE_DEVICES.
    devices = {s: d["extra_data"]["batch"]["device"] for s, d in docs.items() if s != "dan"}
    assert set(devices.values()) == {"0", "1"}, devices
    assert all(d["extra_data"]["batch"]["node"] for s, d in docs.items() if s != "dan")
    table = rows(out)
    assert [r[0] for r in table[2:]] == ["alice", "bob", "dan", "hang", "trap"]
    assert seconds < 120

    # A driver killed half way: two results are missing. The same command grades only those, once each.
    (out / batch.RESULTS / "bob.json").unlink()
    (out / batch.RESULTS / "trap.json").unlink()
    (out / batch.CSV_NAME).unlink()
    again = batch.run_batch(EXERCISE, subs, out, options, executor=executor)
    assert (again.graded_now, again.skipped) == (3, 2)  # dan (no file) is always redone: it costs nothing
    table = rows(out)
    assert [r[0] for r in table[2:]] == ["alice", "bob", "dan", "hang", "trap"]
    assert results(out)["bob"]["score"] == docs["bob"]["score"]


def sleeps_forever(item: TaskInput) -> dict:
    time.sleep(3600)
    return {}


ATTEMPTS = ""  # set by the test before the task is shipped (it travels by value, with this global)


def dies(item: TaskInput) -> dict:
    marker = Path(ATTEMPTS) / item.name
    with open(marker, "a") as f:
        f.write("x")
    os._exit(1)  # the worker process dies, as on a lost node


def test_a_task_past_its_limit_is_cancelled_with_a_timeout_verdict(cluster, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "stuck.cu").write_text(SOLUTION.read_text())
    executor = RayExecutor.connect(None, backend="emu", grace=1.0, task=sleeps_forever)
    started = time.monotonic()
    result = batch.run_batch(EXERCISE, subs, tmp_path / "out", batch.Options(backend="emu", timeout=2), executor=executor)
    assert time.monotonic() - started < 30
    doc = results(tmp_path / "out")["stuck"]
    assert doc["extra_data"]["batch"]["status"] == "timeout" and doc["score"] == 0
    assert "did not finish within the 3 s limit" in doc["tests"][0]["output"]
    assert result.summary.by_status == {"timeout": 1}


def test_a_lost_worker_is_retried_once_then_reported(cluster, tmp_path):
    global ATTEMPTS
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "lost.cu").write_text(SOLUTION.read_text())
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    ATTEMPTS = str(attempts)
    executor = RayExecutor.connect(None, backend="emu", task=dies)
    batch.run_batch(EXERCISE, subs, tmp_path / "out", batch.Options(backend="emu", timeout=30), executor=executor)
    assert (attempts / "lost.cu").read_text() == "xx"  # the first try and one retry
    doc = results(tmp_path / "out")["lost"]
    assert doc["extra_data"]["batch"]["status"] == "grader-error"
    assert "lost 2 times" in doc["tests"][0]["output"] and "not a verdict on the submission" in doc["tests"][0]["output"]
