"""Students' pages written while the batch still grades.

Drawing a student's page (its plots above all) costs about a tenth of a CPU-second; after the last
grading of a class of 100 that was several seconds of the batch's time, on one core, while the
machine stood idle. A PageStream instead writes each student's page (class_page.write_student_page)
as their results file lands, in one process of its own: the batch's own process keeps only
threads that wait on children, and a page's plotting never holds its interpreter lock.

The stream is only a head start. write_reports, after the last grading, writes every page that is
missing or older than its results (a page the stream could not build, or had no time to), so a
failure here never loses a page, let alone a grade.
"""
from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures import Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any


class PageStream:
    """Writes students' pages in a background process, in the order their results land."""

    def __init__(self, out: Path, python: bool = False) -> None:
        self._out = Path(out)
        self._python = python
        self._futures: list[Future] = []
        self._pool: ProcessPoolExecutor | None = None
        self._broken = False

    def submit(self, entry: Any) -> None:
        """Queue the page of `entry` (a batch Entry whose results file has just been written)."""
        if self._broken:
            return
        try:
            if self._pool is None:  # started by the first result: a batch with nothing to grade starts nothing
                # spawn: the batch's process has threads, which a forked copy must not inherit mid-lock.
                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=_start_writer)
            self._futures.append(self._pool.submit(_write, self._out, entry, self._python))
        # No process to be had (ImportError: a platform without working semaphores, as in some
        # containers), or it died: write_reports writes the rest.
        except (ImportError, OSError, RuntimeError, ValueError):
            self._broken = True

    def close(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the queued pages, then stop the writer; pages still queued
        are dropped (write_reports writes them)."""
        if self._pool is None:
            return
        wait(self._futures, timeout=timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None


def _start_writer() -> None:
    # Ctrl-C reaches the whole process group: the batch stops its writer itself, without a traceback here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _write(out: Path, entry: Any, python: bool) -> None:
    # Imported here, in the writer: the batch's own process imports the report modules in a thread of its own.
    from .class_page import write_student_page

    write_student_page(out, entry, python)
