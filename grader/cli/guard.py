"""One place that turns the grader's own failures into exit codes for every CLI command."""
from __future__ import annotations

import signal
import sys
import threading
from typing import Callable

import click

from ..errors import ExitCode, GraderError


class sigterm_as_interrupt:
    """A `kill` (SIGTERM) or a closed terminal (SIGHUP) stops a command the way Ctrl-C does: as a
    KeyboardInterrupt, whose clean-up kills the grading's children. Their default would end this
    process at once and leave its children (each in a session of its own, out of reach of the
    terminal's signals) running on, holding the GPU."""

    SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)

    def __enter__(self) -> "sigterm_as_interrupt":
        self.previous: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, signal.default_int_handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


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
