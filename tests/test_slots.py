"""grader.staff.slots: at most --per-gpu gradings at work per GPU, and gradings that park for the profiler."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from grader.run.parent import profile_spool
from grader.run.parent.profile_spool import PARK_VARIABLE
from grader.staff.slots import SlotPool, spare_slots


def _taken_within(pool: SlotPool, seconds: float) -> list:
    """take() in a thread: [(slot, env)] once it returned, [] while it still waits after `seconds`."""
    got: list = []
    thread = threading.Thread(target=lambda: got.append(pool.take()), daemon=True)
    thread.start()
    thread.join(seconds)
    return got


def test_at_most_the_gpu_s_working_gradings_take_slots_and_a_free_slot_is_not_enough():
    pool = SlotPool(["0", "0", "0", "0"], {"0": 2})  # two slots at work, two spares
    first, second = pool.take()[0], pool.take()[0]
    assert {first, second} == {0, 1}  # the slots proper first, spares only when needed
    assert _taken_within(pool, 0.3) == []  # spare slots are free, but the GPU has its two at work
    pool.give_back(first)
    assert pool.take()[0] == first


def test_a_parked_grading_keeps_its_slot_and_frees_a_place_on_its_gpu(tmp_path):
    pool = SlotPool(["0", "0", "0", "0"], {"0": 2}, tmp_path / "parked")
    try:
        (a, env_a), (b, _) = pool.take(), pool.take()
        waiting: list = []
        thread = threading.Thread(target=lambda: waiting.append(pool.take()), daemon=True)
        thread.start()
        time.sleep(0.2)
        assert not waiting
        # The grading on slot a hands its request to the profiler (profile_spool.ask creates the file).
        path = env_a[PARK_VARIABLE]
        open(path, "w").close()
        thread.join(5)
        assert waiting and waiting[0][0] not in (a, b)  # a spare slot: slot a is still a's
        assert pool.working("0") == 2 and pool.parked == 1
        pool.give_back(a)  # the parked grading ends: no place on the GPU to give back, only its slot
        assert pool.working("0") == 2
        assert not (tmp_path / "parked" / path).exists()
    finally:
        pool.close()


def test_gradings_are_spread_over_gpus_and_each_gpu_counts_its_own():
    pool = SlotPool(["0", "1", "0", "1"], {"0": 1, "1": 1})
    taken = [pool.take()[0], pool.take()[0]]
    assert sorted(taken) == [0, 1]
    assert _taken_within(pool, 0.2) == []
    pool.give_back(1)  # GPU 1's grading ended: the next goes to GPU 1
    assert pool.take()[0] in (1, 3)


def test_a_stale_park_file_parks_nobody_else(tmp_path):
    """The watcher saw a grading's park file, the grading ended and another took the slot: that one
    is not parked by the old file."""
    pool = SlotPool(["0", "0"], {"0": 1}, tmp_path / "parked")
    try:
        index, env = pool.take()
        old = env[PARK_VARIABLE]
        pool.give_back(index)
        index2, env2 = pool.take()
        assert env2[PARK_VARIABLE] != old
        pool.park(index2, seen=Path(old))
        assert pool.working("0") == 1 and pool.parked == 0
    finally:
        pool.close()


def test_spare_slots_copy_each_gpu_s_environment():
    slots = [{"CUDA_VISIBLE_DEVICES": "0", "X": "a"}, {"CUDA_VISIBLE_DEVICES": "1", "X": "b"},
             {"CUDA_VISIBLE_DEVICES": "0", "X": "c"}]
    spares = spare_slots(slots)
    assert [s["CUDA_VISIBLE_DEVICES"] for s in spares] == ["0", "1", "0"]
    assert [s["X"] for s in spares] == ["a", "b", "a"]


@pytest.mark.parametrize("alive", [True, False])
def test_asking_the_profiler_parks_the_grading_once_its_request_is_handed_over(tmp_path, monkeypatch, alive):
    spool = tmp_path / "spool"
    spool.mkdir()
    if alive:
        (spool / profile_spool.HEARTBEAT).touch()
    park = tmp_path / "parked-file"
    monkeypatch.setenv(PARK_VARIABLE, str(park))
    answer = tmp_path / "answer.json"

    def broker():  # answers the first request it finds
        for _ in range(200):
            found = list(spool.glob("*" + profile_spool.REQUEST_SUFFIX))
            if found:
                answer.write_text('{"by_size": {}, "problem": null}')
                return
            time.sleep(0.01)

    thread = threading.Thread(target=broker, daemon=True)
    thread.start()
    reply = profile_spool.ask(spool, {"x": 1}, answer, wait=5)
    thread.join(5)
    # No live profiler: the grading profiles alone, so it is still at work, not parked.
    assert park.exists() is alive
    assert (reply is not None) is alive
