"""Students' pages written while the batch still grades.

Drawing a student's page (its plots above all) costs about a tenth of a CPU-second; after the last
grading of a class of 100 that was several seconds of the batch's time, on one core, while the
machine stood idle. A PageStream instead writes each student's page (class_page.write_student_page)
as their results file lands, in one process of its own: the batch's own process keeps only
threads that wait on children, and a page's plotting never holds its interpreter lock.

The stream is only a head start. write_reports, after the last grading, writes every page that is
missing or older than its results (a page the stream could not build, or had no time to), so a
failure here never loses a page, let alone a grade.

Where every core grades (the emulator's batch) pages drawn beside the gradings would only slow them,
so the batch hands its pages over at the end instead (`share`): the writer draws from the last
student back while write_reports draws from the first, each skipping the pages the other has
written, so the two cores that graded draw the pages too. The writer is started (`warm`) once a
grading slot falls idle, so that its imports are paid before the end.
"""
from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures import Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Sequence


class PageStream:
    """Writes students' pages in a background process, in the order their results land."""

    def __init__(self, out: Path, python: bool = False) -> None:
        self._out = Path(out)
        self._python = python
        self._futures: list[Future] = []
        self._pool: ProcessPoolExecutor | None = None
        self._broken = False

    @property
    def started(self) -> bool:
        """Whether the writer's process was started (by `warm` or a first page)."""
        return self._pool is not None

    def warm(self) -> None:
        """Start the writer now and let it import what a page needs, ahead of the pages."""
        self._call(prepare)

    def submit(self, entry: Any) -> None:
        """Queue the page of `entry` (a batch Entry whose results file has just been written)."""
        self._call(_write, self._out, entry, self._python)

    def share(self, entries: Sequence[Any]) -> None:
        """Queue the pages of `entries` from the last back to the first, for a write_reports that runs
        now and draws from the first: each skips the pages already written (at most the page where
        they meet is drawn twice, to the same bytes)."""
        for entry in reversed(entries):
            self.submit(entry)

    def close(self, timeout: float, *, queued: bool = True) -> None:
        """Wait up to `timeout` seconds for the pages being drawn (and, with `queued`, those still
        queued), then stop the writer; pages not drawn are left to write_reports."""
        if self._pool is None:
            return
        if not queued:
            for future in self._futures:
                future.cancel()  # only what has not started: a page half-written is finished
        wait(self._futures, timeout=timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None

    def _call(self, fn: Any, *args: Any) -> None:
        if self._broken:
            return
        try:
            if self._pool is None:  # started on demand: a batch with nothing to grade starts nothing
                # spawn: the batch's process has threads, which a forked copy must not inherit mid-lock.
                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=_start_writer)
            self._futures.append(self._pool.submit(fn, *args))
        # No process to be had (ImportError: a platform without working semaphores, as in some
        # containers), or it died: write_reports writes the rest.
        except (ImportError, OSError, RuntimeError, ValueError):
            self._broken = True


def _start_writer() -> None:
    # Ctrl-C reaches the whole process group: the batch stops its writer itself, without a traceback here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def prepare() -> None:
    """Import what every page needs: the report modules and the plotting library (when installed).
    The writer does it when warmed; the batch's own process, in a thread, for the class page."""
    from . import class_page, plots  # noqa: F401

    plots.preload()


def _write(out: Path, entry: Any, python: bool) -> None:
    # Imported here, in the writer: the batch's own process imports the report modules in a thread of its own.
    from .class_page import write_student_page

    write_student_page(out, entry, python)
