"""grader.run.parent.fork_server and the emulator batch's warm slots: the same results JSON as fresh children,
the same isolation (time limit, exit status, output, rlimits), and a hang or a crash in the middle of
one slot's queue charged only to itself."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from grader.staff import batch
from grader.staff.batch import local
from grader.run.parent import fork_server
from grader.exercise import load
from grader.run.parent.fork_server import VARIABLE, ForkServer
from grader.run.parent.isolated import grade_in_child
from grader.run.parent.sandbox import ResourceLimits, python_argv, run_child, start_child

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercises" / "level2"
SOLUTION = ROOT / "reference" / "level2" / "solution.cu"
WRONG = ROOT / "reference" / "level2" / "wrong"
HOSTILE = ROOT / "tests" / "hostile"
SEED = 7

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork servers are used on Linux only")


def comparable(document: dict) -> dict:
    """A results document without what differs run to run: wall-clock times, the stage timeline, and
    whether the compile came from the cache."""
    doc = json.loads(json.dumps(document))
    doc.pop("execution_time", None)
    extra = doc.get("extra_data", {})
    for key in ("stages", "seconds", "batch"):
        extra.pop(key, None)
    for test in doc.get("tests", ()):
        test["output"] = re.sub(r" in \d+\.\d+ s( \(cached\))?;", " in (time);", test.get("output", ""))
    return doc


@pytest.fixture
def server():
    env = dict(os.environ, PYTHONHASHSEED="0")
    started = ForkServer(env)
    assert started.start(), "the fork server did not start"
    yield started
    started.close()


def forked_env(server: ForkServer) -> dict[str, str]:
    return {**os.environ, VARIABLE: server.address}


# --------------------------------------------------------------------------------------------- the server
def test_only_the_graders_own_python_children_are_forked():
    assert fork_server.forkable(python_argv("grader.run.child.runner", "job.json")) == "grader.run.child.runner"
    assert fork_server.forkable(python_argv("pytest", "-q")) == "pytest"
    assert fork_server.forkable(python_argv("grader.pyexercise.sandbox")) is None  # a student's Python module runs there
    assert fork_server.forkable(["ncu", "--csv", *python_argv("grader.run.child.runner", "job.json")]) is None
    assert fork_server.forkable(["/usr/bin/python3", "-m", "grader.run.child.runner"]) in (None, "grader.run.child.runner")


def test_a_forked_child_has_its_argv_cwd_environment_output_and_exit_status(server, tmp_path):
    env = {**forked_env(server), "KG_PROBE": "here"}
    code = "import os, sys; print(os.getcwd(), os.environ['KG_PROBE']); print('to stderr', file=sys.stderr); assert 0"
    # pytest is one of the forkable commands; its -c option is not Python, so run a tiny test file instead.
    test = tmp_path / "test_probe.py"
    test.write_text(f"def test_probe():\n    {code}\n")
    child = start_child(python_argv("pytest", "-q", "-s", "-p", "no:cacheprovider", str(test)), env=env, cwd=str(tmp_path))
    assert isinstance(child.proc, fork_server.ForkedProcess)  # forked, not a fresh interpreter
    run = child.finish(60)
    assert run.returncode == 1 and not run.timed_out  # pytest's status for a failed test
    assert f"{tmp_path} here" in run.stdout and "to stderr" in run.stdout + run.stderr
    # The variable that names the server reaches the grading only, not its children.
    test.write_text("import os\n\ndef test_probe():\n    assert 'KERNEL_GRADER_FORK_SERVER' not in os.environ\n")
    assert run_child(python_argv("pytest", "-q", "-p", "no:cacheprovider", str(test)), timeout=60, env=env,
                     cwd=str(tmp_path)).returncode == 0


def test_a_forked_child_that_hangs_is_killed_at_its_limit_and_one_killed_by_a_signal_says_so(server, tmp_path):
    # A runner started early waits for its job file; with none coming it hangs until its limit.
    argv = python_argv("grader.run.child.runner", str(tmp_path / "job.json"), "--prestart", "emu", "pool", str(EXERCISE), "600")
    start = time.monotonic()
    run = run_child(argv, timeout=2, env=forked_env(server), cwd=str(tmp_path))
    assert run.timed_out and time.monotonic() - start < 10
    child = start_child(argv, env=forked_env(server), cwd=str(tmp_path))
    assert isinstance(child.proc, fork_server.ForkedProcess)
    time.sleep(0.5)
    os.kill(child.proc.pid, signal.SIGSEGV)
    run = child.finish(30)
    assert run.signal_name == "SIGSEGV" and "SIGSEGV" in run.describe()


def test_a_forked_childs_crash_reads_as_a_fresh_one(server, tmp_path):
    argv = python_argv("grader.run.child.runner", str(tmp_path / "missing.json"))
    plain = run_child(argv, timeout=60, cwd=str(tmp_path))
    forked = run_child(argv, timeout=60, env=forked_env(server), cwd=str(tmp_path))
    assert forked.returncode == plain.returncode == 1
    assert forked.stderr.strip().splitlines()[-1] == plain.stderr.strip().splitlines()[-1]


def test_a_forked_child_gets_the_rlimits_asked_for(server, tmp_path):
    test = tmp_path / "test_limits.py"
    test.write_text("import resource\n\ndef test_limits():\n"
                    "    assert resource.getrlimit(resource.RLIMIT_CPU)[0] == 77\n"
                    "    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 99\n")
    child = start_child(python_argv("pytest", "-q", "-p", "no:cacheprovider", str(test)), env=forked_env(server),
                        cwd=str(tmp_path), limits=ResourceLimits(cpu_seconds=77, open_files=99))
    assert isinstance(child.proc, fork_server.ForkedProcess)
    run = child.finish(60)
    assert run.returncode == 0, run.stdout


def test_a_server_that_is_gone_leaves_children_to_start_the_ordinary_way(tmp_path):
    env = {**os.environ, VARIABLE: str(tmp_path / "no-such-socket")}
    child = start_child(python_argv("grader", "--help"), env=env, cwd=str(tmp_path))
    assert not isinstance(child.proc, fork_server.ForkedProcess)
    assert child.finish(60).returncode == 0


def test_a_server_killed_from_outside_is_seen_to_have_ended_once_its_death_lands(server):
    """The batch asks after a failed grading whether the slot's server died with its children; the
    SIGKILL lands a moment later than theirs, so the question waits for it a little."""
    import threading

    assert not server.ended() and not server.ended(grace=0.2)  # a live server: not ended, after the grace
    threading.Timer(0.3, lambda: os.kill(server._proc.pid, signal.SIGKILL)).start()
    assert not server.ended()
    assert server.ended(grace=10) and not server.running


# --------------------------------------------------------------------------------------------- same results
@pytest.mark.parametrize("name", ["solution.cu", "missing_second_barrier.cu", "does_not_compile.cu"])
def test_forked_grading_writes_the_results_of_a_fresh_one(server, tmp_path, name):
    exercise = load(EXERCISE)
    source = SOLUTION if name == "solution.cu" else WRONG / name
    fresh = grade_in_child(exercise, source, backend="emu", timeout=300, seed=SEED, scratch=tmp_path)
    forked = grade_in_child(exercise, source, backend="emu", timeout=300, seed=SEED, scratch=tmp_path,
                            env={VARIABLE: server.address})
    assert fresh.status == forked.status
    assert comparable(forked.document) == comparable(fresh.document)


def _batch(subs: Path, out: Path, *, warm: bool, workers: int, timeout: float | None = None) -> dict[str, dict]:
    batch.run_batch(EXERCISE, subs, out, batch.Options(backend="emu", workers=workers, seed=SEED, timeout=timeout,
                                                       fork_server=warm))
    return {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}


@pytest.mark.slow
def test_the_level2_corpus_gets_the_same_results_json_through_warm_slots(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for path in [SOLUTION, *sorted(WRONG.glob("*.cu"))]:
        (subs / path.name).write_bytes(path.read_bytes())
    cold = _batch(subs, tmp_path / "cold", warm=False, workers=2)
    warm = _batch(subs, tmp_path / "warm", warm=True, workers=2)
    assert sorted(cold) == sorted(warm) and len(cold) == len(list(subs.iterdir()))
    for student in cold:
        assert comparable(warm[student]) == comparable(cold[student]), student
        assert warm[student]["extra_data"]["batch"]["status"] == cold[student]["extra_data"]["batch"]["status"]


def test_a_hang_and_a_crash_mid_queue_cost_only_themselves(tmp_path):
    """One slot grades a, then b (never finishes in the limit), c (its runner dies: more memory than
    the emulator may use), d. b is a timeout, c gets the verdict it gets alone, a and d are graded in
    full, and nothing of the batch is left running."""
    from test_batch import batch_tag, stuck_source, tagged_processes

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a_solution.cu").write_bytes(SOLUTION.read_bytes())
    (subs / "b_hang.cu").write_text(stuck_source())
    (subs / "c_crash.cu").write_bytes((HOSTILE / "huge_local_array.cu").read_bytes())
    (subs / "d_solution.cu").write_bytes(SOLUTION.read_bytes())
    out = tmp_path / "out"
    docs = _batch(subs, out, warm=True, workers=1, timeout=6)
    status = {k: v["extra_data"]["batch"]["status"] for k, v in docs.items()}
    assert status == {"a_solution": "graded", "b_hang": "timeout", "c_crash": "graded", "d_solution": "graded"}
    assert docs["a_solution"]["score"] == docs["d_solution"]["score"] == 100
    assert not [t["name"] for t in docs["d_solution"]["tests"] if t["status"] != "passed"]
    alone = grade_in_child(load(EXERCISE), subs / "c_crash.cu", backend="emu", timeout=300, seed=SEED, scratch=tmp_path)
    assert comparable(docs["c_crash"]) == comparable(alone.document)  # as graded alone, in a fresh child
    assert "needs more memory than the emulator may use" in json.dumps(docs["c_crash"])
    assert tagged_processes(batch_tag(out)) == []


def test_a_slot_whose_server_cannot_start_grades_the_ordinary_way(tmp_path, monkeypatch):
    monkeypatch.setattr(ForkServer, "start", lambda self: False)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a.cu").write_bytes((WRONG / "does_not_compile.cu").read_bytes())
    docs = _batch(subs, tmp_path / "out", warm=True, workers=1)
    assert docs["a"]["extra_data"]["batch"]["status"] == "compile-error"


def test_compiles_are_forked_from_their_own_server_and_write_what_a_fresh_compile_child_writes(server, tmp_path):
    deadline = time.monotonic() + 30
    while not Path(server.address + fork_server.COMPILE_SUFFIX).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Path(server.address + fork_server.COMPILE_SUFFIX).exists(), "the compile server did not start"
    summaries = []
    for env in (dict(os.environ), forked_env(server)):
        work = tmp_path / "work"  # the same folder both times: its path is in the PTX's .file directive
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        sources = [{"label": label, "path": str(path), "name": path.name, "out": str(work / label)}
                   for label, path in (("submission", WRONG / "does_not_compile.cu"), ("reference", SOLUTION))]
        job = work / "compile.json"
        job.write_text(json.dumps({"sources": sources, "arch": "sm_90", "summary": str(work / "summary.json")}))
        child = start_child(python_argv("grader.compile", str(job)), env=env, cwd=str(work))
        assert isinstance(child.proc, fork_server.ForkedProcess) == (VARIABLE in env)
        assert child.finish(120).returncode == 0
        summary = json.loads((work / "summary.json").read_text())
        for entry in summary.values():
            entry.pop("seconds", None)
            for key in ("ptx", "cubin"):
                if key in entry:
                    entry[key] = Path(entry[key]).read_bytes()
        summaries.append(summary)
    assert summaries[0] == summaries[1] and summaries[0]["reference"]["ok"] and not summaries[0]["submission"]["ok"]


def test_a_server_killed_during_a_grading_costs_the_student_nothing(tmp_path, monkeypatch):
    """Something outside kills the slot's server while a grading runs: its children die with it, and
    the submission is graded again the ordinary way, to the results a fresh grading gives."""
    import threading

    from grader.run.parent.isolated import kill_tagged
    from test_batch import batch_tag

    real = local.grade_in_child
    killed = []

    def grade_and_kill_the_server(*args, env=None, **kwargs):
        if env and VARIABLE in env and not killed:
            tag = f"{batch_tag(tmp_path / 'out')}:fork-server-0"
            threading.Timer(0.4, lambda: killed.append(kill_tagged(tag))).start()
        return real(*args, env=env, **kwargs)

    monkeypatch.setattr(local, "grade_in_child", grade_and_kill_the_server)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a.cu").write_bytes(SOLUTION.read_bytes())
    docs = _batch(subs, tmp_path / "out", warm=True, workers=1)
    assert killed and killed[0] >= 1
    fresh = real(load(EXERCISE), subs / "a.cu", backend="emu", timeout=300, seed=SEED, scratch=tmp_path)
    assert comparable(docs["a"]) == comparable(fresh.document)


def test_a_gpu_hosts_server_preloads_cupy_without_initialising_cuda(tmp_path):
    """On a GPU host the server also imports CuPy (its children then need not), but never initialises
    CUDA, which does not survive a fork: a forked child starts with CuPy imported and no CUDA context,
    and the driver answers as uninitialised in it (a fresh child makes its own context at its first launch)."""
    pytest.importorskip("cupy")
    gpu_server = ForkServer(dict(os.environ, PYTHONHASHSEED="0"), gpu=True)
    assert gpu_server.start(), "the GPU host's fork server did not start"
    try:
        test = tmp_path / "test_probe.py"
        test.write_text(
            "import sys\n\n"
            "def test_probe():\n"
            "    assert 'cupy' in sys.modules  # preloaded by the server\n"
            "    from cupy.cuda import runtime\n"
            "    # No context was made before the fork: this process has no current device context.\n"
            "    import ctypes\n"
            "    try:\n"
            "        lib = ctypes.CDLL('libcuda.so.1')\n"
            "    except OSError:\n"
            "        return  # no driver on this machine: nothing could have been initialised\n"
            "    ctx = ctypes.c_void_p()\n"
            "    assert lib.cuCtxGetCurrent(ctypes.byref(ctx)) in (0, 3) and not ctx.value  # 3: not initialised\n")
        child = start_child(python_argv("pytest", "-q", "-p", "no:cacheprovider", str(test)),
                            env={**os.environ, VARIABLE: gpu_server.address}, cwd=str(tmp_path))
        assert isinstance(child.proc, fork_server.ForkedProcess)
        run = child.finish(60)
        assert run.returncode == 0, run.stdout + run.stderr
    finally:
        gpu_server.close()


def test_warm_slots_serve_the_gpu_backend_too():
    from grader.staff.batch.local import LocalExecutor

    assert LocalExecutor("gpu", [{"CUDA_VISIBLE_DEVICES": "0"}], warm=True).warm is sys.platform.startswith("linux")
    assert LocalExecutor("gpu", [{"CUDA_VISIBLE_DEVICES": "0"}], warm=False).warm is False
