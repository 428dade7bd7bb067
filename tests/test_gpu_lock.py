"""The GPU readers-writer lock. flock locks belong to open files, so two GpuLock objects in one
process contend like two processes would."""
from __future__ import annotations

import threading
from pathlib import Path
import time

from grader.run.gpu_lock import GpuLock, for_gpu


def _in_thread(fn) -> threading.Event:
    done = threading.Event()
    threading.Thread(target=lambda: (fn(), done.set()), daemon=True).start()
    return done


def test_users_share_and_a_timing_waits_for_them(tmp_path):
    a, b, timing = GpuLock("0000:01:00.0", tmp_path), GpuLock("0000:01:00.0", tmp_path), GpuLock("0000:01:00.0", tmp_path)
    a.share()
    b.share()  # two users at once
    timed = _in_thread(timing.exclusive)
    assert not timed.wait(0.3)
    a.release()
    assert not timed.wait(0.2)
    b.release()
    assert timed.wait(2)


def test_a_waiting_timing_keeps_new_users_out(tmp_path):
    user, timing, late = GpuLock("g", tmp_path), GpuLock("g", tmp_path), GpuLock("g", tmp_path)
    user.share()
    timed = _in_thread(timing.exclusive)
    time.sleep(0.2)
    joined = _in_thread(late.share)
    assert not joined.wait(0.3)  # the timing is waiting: the late user queues behind it
    user.release()
    assert timed.wait(2) and not joined.wait(0.2)
    timing.release()
    assert joined.wait(2)


def test_two_timings_take_turns_without_deadlock(tmp_path):
    first, second = GpuLock("g", tmp_path), GpuLock("g", tmp_path)
    first.share()
    second.share()
    one = _in_thread(first.exclusive)
    two = _in_thread(second.exclusive)
    assert one.wait(2) or two.wait(2)
    (first if one.is_set() else second).release()
    assert one.wait(2) and two.wait(2)


def test_one_lock_per_gpu_per_process_and_no_folder_means_no_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_GRADER_LOCKS", str(tmp_path))
    assert for_gpu("x") is for_gpu("x")
    blocked = tmp_path / "file"
    blocked.write_text("")
    lock = GpuLock("g", blocked / "sub")
    lock.share()
    lock.exclusive()  # neither blocks nor raises
    assert lock.mode == "none"


def test_a_timing_gives_up_waiting_for_a_user_that_never_leaves(tmp_path):
    hung, timing, late = GpuLock("g", tmp_path), GpuLock("g", tmp_path), GpuLock("g", tmp_path)
    hung.share()
    start = time.monotonic()
    assert timing.exclusive(wait=0.3) is False  # bounded: it times beside the hung kernel instead
    assert 0.25 < time.monotonic() - start < 2
    joined = _in_thread(late.share)
    assert joined.wait(2)  # the gate is open again


def test_ncu_runs_of_every_grading_share_one_temp_folder(tmp_path, monkeypatch):
    """ncu finds other ncu runs through a lock in its temp folder; a grading's own TMPDIR would hide them."""
    from grader.tools import ncu_env

    monkeypatch.setenv("KERNEL_GRADER_LOCKS", str(tmp_path / "locks"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "one-grading"))
    first = ncu_env()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "another-grading"))
    assert ncu_env() == first and Path(first["TMPDIR"]).is_dir()
    assert Path(first["TMPDIR"]).parent == tmp_path / "locks"


def test_each_gpu_has_its_own_ncu_temp_folder(tmp_path, monkeypatch):
    """ncu runs on one GPU must see each other's lock; runs on two GPUs profile at the same time."""
    from grader.tools import ncu_env

    monkeypatch.setenv("KERNEL_GRADER_LOCKS", str(tmp_path / "locks"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert ncu_env() == ncu_env("0") != ncu_env("1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    assert ncu_env() == ncu_env("1")
    assert ncu_env("../../x")["TMPDIR"].startswith(str(tmp_path / "locks" / "ncu-tmp-"))


def test_a_user_stops_waiting_for_a_timing_that_never_ends(tmp_path):
    """A timing holds the GPU while the kernel it times runs; one that hangs must not hold every
    other grading's processes for their whole time limit."""
    timing = GpuLock("gpu0", tmp_path)
    assert timing.exclusive(wait=1)
    user = GpuLock("gpu0", tmp_path)
    start = time.monotonic()
    assert user.share(wait=0.3) is False
    assert 0.25 < time.monotonic() - start < 2 and user.mode == "none"
    start = time.monotonic()
    assert user.share(wait=5) is False  # shares are per task: it does not wait in vain a second time
    assert time.monotonic() - start < 0.2
    timing.release()
    assert user.share(wait=1) is True and user.mode == "shared"
    user.release()
    assert timing.exclusive(wait=1)
    start = time.monotonic()
    assert user.share(wait=0.3) is False and time.monotonic() - start > 0.25  # having had one, it waits again


def test_the_time_spent_waiting_is_summed_for_the_stage_clock(tmp_path):
    """grade batch's profile reports "waiting for the GPU" from this sum (shares are per launch, so a
    task may wait many times)."""
    timing, user = GpuLock("w", tmp_path), GpuLock("w", tmp_path)
    assert timing.exclusive()
    joined = _in_thread(user.share)
    time.sleep(0.3)
    timing.release()
    assert joined.wait(2)
    assert 0.25 < user.waited < 2.0
    user.release()
    user.share()
    user.release()
    assert user.waited < 2.0 and timing.waited < 0.25
