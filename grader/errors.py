"""The grader's own failures, and the exit codes they map to.

A student's mistake is never an exception here: compile errors, wrong answers, races and
timeouts are values in the results. These exceptions mean the *grader* or its *inputs*
(an exercise spec, a command line) are at fault, and the CLI turns them into exit codes.
"""
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes: 0 graded (whatever the score), 1 the grader failed, 2 usage or spec error."""

    GRADED = 0
    GRADER_FAILED = 1
    USAGE = 2


class GraderError(Exception):
    """The grader itself could not do its job (a bug, a missing tool it was told to use)."""

    exit_code = ExitCode.GRADER_FAILED


class UsageError(GraderError):
    """The command line or environment asks for something impossible (e.g. --backend gpu without a GPU)."""

    exit_code = ExitCode.USAGE


class SpecError(UsageError):
    """An exercise folder or its spec.toml is invalid; the message names the file and the field."""
