"""One place that turns the grader's own failures into exit codes for every CLI command."""
from __future__ import annotations

import sys
from typing import Callable

import click

from ..errors import ExitCode, GraderError


def guard(work: Callable[[], None]) -> None:
    """Run a command body; map the grader's own errors to exit codes with a one-line reason."""
    try:
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
