"""One place that turns the grader's own failures into exit codes for every CLI command."""
from __future__ import annotations

import signal
import sys
import threading
from typing import Callable

import click

from ..errors import ExitCode, GraderError
from ..run.parent.sandbox import stop_children


class sigterm_as_interrupt:
    """Ctrl-C (SIGINT), a `kill` (SIGTERM) and a closed terminal (SIGHUP) all stop a command the same
    way: every child it started is killed at once (sandbox.stop_children: they run in sessions of
    their own, out of the terminal's reach, and would otherwise run on, holding the GPU, or be waited
    for), and a KeyboardInterrupt unwinds the command. SIGTERM's and SIGHUP's defaults would end this
    process at once and leave the children running."""

    SIGNALS = tuple(s for s in (getattr(signal, name, None) for name in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None)

    def __enter__(self) -> "sigterm_as_interrupt":
        self.previous: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, _stop)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def _stop(signum: int, frame: object) -> None:
    stop_children()
    raise KeyboardInterrupt


def guard(work: Callable[[], None]) -> None:
    """Run a command body; map the grader's own errors to exit codes with a one-line reason."""
    try:
        with sigterm_as_interrupt():
            work()
    except GraderError as exc:
        click.echo(f"grade: error: {exc}", err=True)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        click.echo("grade: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug in the grader: say so plainly, never a silent wrong grade
        click.echo(f"grade: internal error (please report it): {type(exc).__name__}: {exc}", err=True)
        sys.exit(int(ExitCode.GRADER_FAILED))
