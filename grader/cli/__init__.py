"""The command line: a thin click layer over grader.api (grader.cli.commands) and the course-staff
commands (grader.cli.staff). `grade` and `python -m grader` both call main.
"""
from .commands import main

__all__ = ["main"]
