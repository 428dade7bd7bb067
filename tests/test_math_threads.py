"""BLAS thread caps for a grading's children (grader.run.parent.math_threads)."""
from __future__ import annotations

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
