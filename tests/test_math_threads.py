"""BLAS thread caps for a grading's children (grader.run.parent.math_threads)."""
from __future__ import annotations

import pytest

from grader import api
from grader.run.parent import math_threads


def _clear(monkeypatch):
    for name in math_threads.VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_a_grading_shares_the_cores_among_the_children_that_compute_references(tmp_path, monkeypatch):
    _clear(monkeypatch)
    monkeypatch.setattr(math_threads, "usable_cores", lambda: 16)
    env = api.child_env(tmp_path)
    assert {env[name] for name in math_threads.VARIABLES} == {str(16 // math_threads.SIDE_BY_SIDE)}


def test_never_fewer_than_one_thread_and_the_users_setting_stands(tmp_path, monkeypatch):
    _clear(monkeypatch)
    monkeypatch.setattr(math_threads, "usable_cores", lambda: 2)
    assert api.child_env(tmp_path)["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "7")  # set by the user, or by grade batch for its slot
    env = api.child_env(tmp_path)
    assert env["OPENBLAS_NUM_THREADS"] == "7" and env["OMP_NUM_THREADS"] == "1"


def test_idle_blas_threads_sleep_unless_the_user_says_otherwise(tmp_path, monkeypatch):
    """OpenBLAS's threads would spin for a tenth of a second after every call (a third of a batch's CPU)."""
    for name in math_threads.WAITS:
        monkeypatch.delenv(name, raising=False)
    env = api.child_env(tmp_path)
    assert env["OPENBLAS_THREAD_TIMEOUT"] == "4" and env["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "20")
    assert math_threads.limits(4)["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OPENBLAS_THREAD_TIMEOUT" not in math_threads.limits(4)
    assert api.child_env(tmp_path)["OPENBLAS_THREAD_TIMEOUT"] == "20"


def _blas_name() -> str:
    import numpy as np

    try:
        return str(np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]).lower()
    except Exception:  # noqa: BLE001 - an older NumPy: no structured config
        return ""


@pytest.mark.skipif("openblas" not in _blas_name(), reason="this NumPy's BLAS is not OpenBLAS")
def test_openblas_reads_the_timeout(tmp_path):
    """The variable is the one this NumPy's OpenBLAS reads: with it, a process that calls BLAS and then
    waits uses about one thread's CPU, not one per BLAS thread."""
    import subprocess
    import sys

    program = ("import numpy as np, resource, time\n"
               "m = np.ones((384, 384))\n"
               "for _ in range(10):\n"
               "    m @ m\n"
               "    time.sleep(0.03)\n"
               "r = resource.getrusage(resource.RUSAGE_SELF)\n"
               "print(r.ru_utime + r.ru_stime)\n")

    def cpu(timeout: str | None) -> float:
        env = {k: v for k, v in __import__("os").environ.items() if k not in math_threads.WAITS}
        env.update({"OPENBLAS_NUM_THREADS": "2", **({"OPENBLAS_THREAD_TIMEOUT": timeout} if timeout else {})})
        run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=60)
        return float(run.stdout.strip().splitlines()[-1])

    spinning, sleeping = cpu(None), cpu("4")
    # 10 waits of 30 ms: a spinning second thread adds about 0.3 CPU-s that a sleeping one does not.
    assert spinning - sleeping > 0.15, (spinning, sleeping)
