"""`grade batch` itself: read the submissions, skip those already graded, hand the rest to an
executor, then write the gradebook, the summary and the pages.

The steps live in the modules beside this one (grader.staff.batch: intake, plan, executor, local,
ray, record); this one puts them in order, holds the output folder's lock, and makes sure that
nothing the batch started outlives it.
"""
from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ... import exercise as exercise_module
from ...errors import UsageError
from ...exercise import Exercise
from ...kinds.registry import kind_of
from ...report.page_stream import PageStream, prepare as prepare_pages
from ...run.parent import math_threads, reaper
from ...run.parent.tags import kill_tagged
from .executor import BatchContext, Executor, Outcome
from .intake import Entry, collect
from .local import local_executor
from .plan import Options, default_timeout
from .record import CSV_NAME, RESULTS, Summary, exercise_key, lock_folder, up_to_date, write_diagnostic, write_gradebook

PAGE_STREAM_WAIT = 60.0  # seconds the gradebook waits for pages still being drawn; write_reports draws the rest
TIMELINE_VARIABLE = "KERNEL_GRADER_BATCH_TIMELINE"  # a file for the batch's own timeline, as JSON (a diagnostic)


@dataclass(frozen=True)
class BatchResult:
    """A finished batch: where things are and what they say."""

    out: Path
    csv_path: Path
    summary: Summary
    graded_now: int
    skipped: int
    workers: int
    seconds: float
    slots: tuple[str, ...] = field(default=())


def run_batch(exercise_dir: Path, submissions: Path, out: Path, options: Options = Options(), *,
              on_start: Callable[[int, int], None] | None = None,
              on_done: Callable[[Outcome], None] | None = None, executor: Executor | None = None) -> BatchResult:
    """Grade every submission not already graded; rebuild grades.csv and the summary.

    The gradings run on `executor` (default: from options, local_executor or, with options.ray, ray_executor).

    on_start(to_grade, skipped) is called once before grading; on_done(outcome) as each one ends.
    A KeyboardInterrupt stops the children in flight (their students are graded on the next run).
    """
    started = time.perf_counter()
    # Absolute from here on: the children and the warm servers that fork them run in folders of their
    # own, where a path relative to the caller's folder (`--out grades/level2`) names nothing.
    exercise = exercise_module.load(Path(exercise_dir).absolute())
    out = Path(out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULTS).mkdir(exist_ok=True)
    lock = lock_folder(out)
    tag_root = "batch-" + hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]
    kill_tagged(tag_root + ":", prefix=True)  # leftovers of a killed earlier run on this folder (we hold its lock)
    reaper.watch(tag_root + ":", prefix=True)  # and if this run is killed outright, nothing of it is left
    for stale in out.glob(".scratch-*"):
        shutil.rmtree(stale, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=".scratch-", dir=out))
    try:
        entries = collect(Path(submissions).absolute(), scratch)
        if executor is None:
            executor = ray_executor(options) if options.ray is not None else local_executor(options)
        backend = executor.backend
        timeout = float(options.timeout) if options.timeout else default_timeout(exercise, backend)
        if timeout <= 0:
            raise UsageError("--timeout must be positive")
        key = exercise_key(exercise, backend)
        todo, done_before = [], 0
        for entry in entries:
            if not options.regrade and up_to_date(out, entry, key, timeout):
                done_before += 1
            else:
                todo.append(entry)
        if todo:
            (out / CSV_NAME).unlink(missing_ok=True)  # derived; an unfinished batch must not look finished
        if on_start:
            on_start(len(todo), done_before)
        context = BatchContext(exercise, out, backend, timeout, options.seed, key, scratch, tag_root)
        # The class page is drawn after the last grading; its plotting library (about 0.6 CPU-seconds
        # to import) is imported meanwhile, while this process only waits on its children.
        threading.Thread(target=_import_report_modules, name="import-reports", daemon=True).start()
        pages = PageStream(out, python=kind_of(exercise).traits.python_source)  # each student's page as their result lands
        # ... where a core is left for drawing them: on a GPU the gradings mostly wait for the GPU;
        # on the emulator every core grades, and pages drawn beside the gradings would only slow them:
        # there the writer starts once a slot falls idle, and shares the pages with this process at the end.
        streaming = backend == "gpu" or math_threads.usable_cores() > executor.workers
        by_student = {entry.student: entry for entry in todo} if streaming else {}
        left = [len(todo)]

        def done(outcome: Outcome) -> None:
            if on_done:
                on_done(outcome)
            if not outcome.skipped and outcome.student in by_student:
                pages.submit(by_student[outcome.student])
            left[0] -= 1
            # A slot has fallen idle: the writer's imports take its core now (a class of a few
            # submissions has no tail worth a process of its own).
            if not streaming and left[0] < executor.workers <= len(todo) // 2 and not pages.started:
                pages.warm()

        try:
            executor.grade_all(context, todo, done)
        except BaseException:
            pages.close(timeout=0)
            raise
        context.mark("executor")
        csv_path, summary = write_gradebook(out, entries, exercise)
        context.mark("gradebook")
        if streaming:
            pages.close(timeout=PAGE_STREAM_WAIT)
        elif pages.started:
            pages.share(todo)
        context.mark("pages")
        _write_html_reports(out, exercise, entries, summary)
        pages.close(timeout=PAGE_STREAM_WAIT, queued=False)  # the page it may be drawing; the rest are written
        context.mark("reports")
        write_timeline(context, started)
        return BatchResult(out, csv_path, summary, len(todo), done_before, executor.workers, time.perf_counter() - started,
                           executor.slots)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        lock.close()


def ray_executor(options: Options) -> Executor:
    """A Ray cluster (grader.staff.batch.ray); a clear usage error when Ray is not installed."""
    try:
        from .ray import RayExecutor
    except ImportError as exc:
        raise UsageError("--ray needs Ray, an optional extra: pip install 'kernel-grader[ray]' "
                         f"(on the driver and on every node of the cluster) ({exc})") from None
    return RayExecutor.connect(options.ray or None, backend=options.backend, per_gpu=options.per_gpu, workers=options.workers)


def write_timeline(ctx: BatchContext, started: float) -> None:
    """The batch's timeline, as JSON, to $KERNEL_GRADER_BATCH_TIMELINE if set (a diagnostic:
    bench/grading_speed.py prints it): [what ended, seconds since the batch started] in order, from
    the last grading's end to the pages. A file that cannot be written costs only the record."""
    write_diagnostic(TIMELINE_VARIABLE, [[what, round(at - started, 3)] for what, at in ctx.marks])


def _import_report_modules() -> None:
    """Import what _write_html_reports will need (an optional plotting library that is missing is
    simply not imported)."""
    try:
        prepare_pages()
    except Exception:  # noqa: BLE001 - only a head start: the pages import (and report) it themselves
        pass


def _write_html_reports(out: Path, exercise: Exercise, entries: Sequence[Entry], summary: Summary) -> None:
    """reports/<student>.html and report.html (grader.report), after the gradebook: written last, so
    a failure there never costs a grade; the submissions are still on disk (a zip's extraction too)."""
    from ...report.class_page import write_reports

    write_reports(out, exercise, entries, summary, python=kind_of(exercise).traits.python_source)
