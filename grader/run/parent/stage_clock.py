"""A timeline of one grading: which stage (compile, launches, a sanitizer, ncu, timing, hidden tests)
ran when and for how long. It goes into the results' extra_data so a slow grading explains itself."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator


@dataclass(frozen=True)
class StageTime:
    """One stage: its name, when it started (seconds after the grading began) and how long it took."""

    name: str
    start: float
    seconds: float


@dataclass
class StageClock:
    """Records stages from any thread; stages overlap when they ran side by side."""

    origin: float = field(default_factory=time.perf_counter)
    origin_epoch: float = field(default_factory=time.time)  # the same instant on the wall clock
    _stages: list[StageTime] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def measure(self, name: str) -> Iterator[None]:
        """Time the body of a with-block as the stage `name`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            stage = StageTime(name, round(start - self.origin, 3), round(time.perf_counter() - start, 3))
            with self._lock:
                self._stages.append(stage)

    def add_wall(self, name: str, start: float, end: float) -> None:
        """Record a stage measured elsewhere (a child process) in wall-clock epoch seconds."""
        stage = StageTime(name, round(start - self.origin_epoch, 3), round(max(end - start, 0.0), 3))
        with self._lock:
            self._stages.append(stage)

    def stages(self) -> tuple[StageTime, ...]:
        """Every stage recorded so far, in order of start."""
        with self._lock:
            return tuple(sorted(self._stages, key=lambda s: s.start))
