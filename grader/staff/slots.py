"""A local batch's slots: which one the next grading takes, and gradings that only wait for the profiler.

A slot is one grading's place on this machine: an environment (its GPU, its BLAS threads) and the
warm processes that go with it (grader.staff.batch.WarmSlot), used by one grading at a time. On a
GPU at most `working` gradings (--per-gpu) work on each GPU at once. A grading whose launches are
over and that only waits for the batch's profiler to answer (grader.run.parent.profile_spool) *parks*:
it creates the file $KERNEL_GRADER_PARKED names, and from then on no longer counts against its GPU, so
another grading can start there on a spare slot while it waits. It keeps its own slot, whose processes
are still its own, until it ends.

Why: a correct submission waits for its ncu counts about 6 s in a batch of 100 on one H200 (the
profiler's queue, then one ncu run for several gradings, bench/grading_speed.py), and 29 such
waits held 40% of the slots' time with nothing to do.
"""
from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Mapping, Sequence

from ..run.parent.profile_spool import PARK_VARIABLE

WATCH_S = 0.05  # how often the park files of the gradings in flight are looked for


class SlotPool:
    """Hands out slots (indices into the executor's list of environments) to gradings.

    `gpus[i]` is slot i's GPU ("" for none). At most `working[gpu]` gradings that have not parked use
    that GPU at once (None: as many as there are slots). With `park_folder`, each grading gets a park
    file of its own there (take's second value: the variable that names it), and a watcher thread
    parks a grading as soon as its file appears. Slots are taken lowest index first among the GPUs
    with the fewest gradings at work, so spare slots (listed last) are used only while others park."""

    def __init__(self, gpus: Sequence[str], working: Mapping[str, int] | None = None, park_folder: Path | None = None) -> None:
        self._gpus = list(gpus)
        self._limit = {gpu: (working or {}).get(gpu, len(self._gpus)) for gpu in self._gpus}
        self._free = set(range(len(self._gpus)))
        self._working = {gpu: 0 for gpu in self._gpus}
        self._inflight: dict[int, tuple[Path | None, bool]] = {}  # slot -> (its park file, parked?)
        self._cond = threading.Condition()
        self._folder = park_folder
        self._ids = itertools.count()
        self._closed = threading.Event()
        self.parked = 0  # gradings that parked, in all
        self._watcher: threading.Thread | None = None
        if park_folder is not None:
            park_folder.mkdir(parents=True, exist_ok=True)
            self._watcher = threading.Thread(target=self._watch, name="slot-parking", daemon=True)
            self._watcher.start()

    def take(self) -> tuple[int, Mapping[str, str]]:
        """Wait for a slot whose GPU has room; the slot, and what to add to the grading's environment."""
        with self._cond:
            while True:
                ready = [i for i in self._free if self._working[self._gpus[i]] < self._limit[self._gpus[i]]]
                if ready:
                    index = min(ready, key=lambda i: (self._working[self._gpus[i]], i))
                    break
                self._cond.wait()
            self._free.discard(index)
            self._working[self._gpus[index]] += 1
            path = self._folder / f"slot{index}-{next(self._ids)}" if self._folder is not None else None
            self._inflight[index] = (path, False)
        if path is None:
            return index, {}
        path.unlink(missing_ok=True)
        return index, {PARK_VARIABLE: str(path)}

    def park(self, index: int, seen: Path | None = None) -> None:
        """The grading on `index` waits only for the profiler now: its GPU has room for another.
        `seen`: the park file the watcher found (a grading that has ended and left the slot to another
        since it looked parks nobody)."""
        with self._cond:
            path, parked = self._inflight.get(index, (None, True))
            if parked or (seen is not None and seen != path):
                return
            self._inflight[index] = (path, True)
            self._working[self._gpus[index]] -= 1
            self.parked += 1
            self._cond.notify_all()

    def give_back(self, index: int) -> None:
        """The grading on `index` has ended: its slot is free again."""
        with self._cond:
            path, parked = self._inflight.pop(index, (None, True))
            if not parked:
                self._working[self._gpus[index]] -= 1
            self._free.add(index)
            self._cond.notify_all()
        if path is not None:
            path.unlink(missing_ok=True)

    def working(self, gpu: str) -> int:
        """Gradings at work (taken, not parked) on `gpu`."""
        with self._cond:
            return self._working.get(gpu, 0)

    def close(self) -> None:
        """Stop the watcher."""
        self._closed.set()
        if self._watcher is not None:
            self._watcher.join()

    def _watch(self) -> None:
        while not self._closed.wait(WATCH_S):
            with self._cond:
                waiting = [(i, path) for i, (path, parked) in self._inflight.items() if path is not None and not parked]
            for index, path in waiting:
                if path.exists():
                    self.park(index, path)


def gpu_of(slot: Mapping[str, str]) -> str:
    """The GPU a slot's gradings run on ("" for none)."""
    return slot.get("CUDA_VISIBLE_DEVICES", "")


def spare_slots(slots: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """As many more slots for each GPU as `slots` has for it, each a copy of that GPU's first slot's
    environment: where gradings run that started while others park."""
    first: dict[str, Mapping[str, str]] = {}
    for slot in slots:
        first.setdefault(gpu_of(slot), slot)
    return [dict(first[gpu_of(slot)]) for slot in slots]
