"""The tripwire both jailed Python workers (the Python kind's pyworker.py, the Triton kind's
tritonworker.py) install before a submission loads, and how they load it.

Copied into the jail folder as pytripwire.py beside the worker, which imports it: the workers must
not import the grader. An audit hook refuses, with a message that says why, what a submission never
needs: starting processes, sockets, signals, and opening, listing or changing files outside the
grading folder and the folders the worker names readable. It is a tripwire for clear messages; the
walls are the kernel's (grader/run/jail: namespaces or Landlock, seccomp, a uid of its own).
"""
from __future__ import annotations

import os
import sys
import traceback

FORBIDDEN_MODULES = frozenset({
    "socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess", "multiprocessing", "_multiprocessing",
    "ctypes", "_ctypes", "cffi", "pty", "urllib.request", "http.client", "ftplib", "smtplib", "telnetlib",
    "asyncio", "concurrent.futures.process", "resource", "mmap", "fcntl", "importlib.metadata", "pip",
})
BLOCKED_EVENTS = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "subprocess.Popen",
                  "socket.", "ctypes.", "os.kill", "os.killpg", "os.setuid", "pty.spawn", "sys.addaudithook", "signal.",
                  "os.chroot", "os.startfile", "shutil.rmtree", "os.link", "os.symlink")
WRITE_EVENTS = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime")


class Refused(Exception):
    """What the audit hook raises: the submission tried something grading does not allow."""


def forget_forbidden(forbidden: frozenset[str]) -> None:
    """Drop forbidden modules a library loaded for itself: they stay loaded for it, but the student's
    import of them raises the import event the hook refuses."""
    for name in list(sys.modules):
        if name in forbidden or name.split(".")[0] in forbidden:
            del sys.modules[name]


def load(name: str, filename: str):
    """Import `filename` (in the grading folder) as module `name`."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(os.getcwd(), filename))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def student_line(exc: BaseException, filename: str, *, causes: bool = False) -> int | None:
    """The submission's innermost line in the exception's traceback (with `causes`, its cause's too,
    where a library wraps the student's exception), or a syntax error's line."""
    line = None
    for e in (exc, exc.__cause__) if causes else (exc,):
        if e is None:
            continue
        for frame in traceback.extract_tb(e.__traceback__):
            if os.path.basename(frame.filename) == filename:
                line = frame.lineno
    if line is None and isinstance(exc, SyntaxError) and os.path.basename(exc.filename or "") == filename:
        line = exc.lineno
    return line


def install(here: str, readable: list[str], *, forbidden: frozenset[str] = FORBIDDEN_MODULES,
            blocked: tuple[str, ...] = BLOCKED_EVENTS) -> None:
    """Install the audit hook: writes only in `here`, reads only below `readable`, no `forbidden`
    import and no `blocked` event."""
    def inside(path, roots) -> bool:
        try:
            real = os.path.realpath(os.fsdecode(path)) if not isinstance(path, int) else None
        except (TypeError, ValueError):
            return False
        if real is None:
            return True  # an fd already open
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)

    def hook(event: str, args: tuple) -> None:
        if event == "import":
            name = args[0] or ""
            if name in forbidden or name.split(".")[0] in forbidden:
                raise Refused(f"importing {name} is not allowed in a submission")
        elif event == "open":
            path, mode = args[0], args[1] if len(args) > 1 else "r"
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            if path is None or isinstance(path, int):
                return
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(
                flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC))
            if writing and not inside(path, [here]):
                raise Refused("writing files outside the grading folder is not allowed")
            if not writing and not inside(path, readable):
                raise Refused("reading files outside the grading folder is not allowed")
        elif event in ("os.listdir", "os.scandir"):
            if args and args[0] is not None and not isinstance(args[0], int) and not inside(args[0], readable):
                raise Refused("listing folders outside the grading folder is not allowed")
        elif event.startswith(WRITE_EVENTS):
            if args and not inside(args[0], [here]):
                raise Refused(f"{event} outside the grading folder is not allowed")
        elif event.startswith(blocked):
            raise Refused(f"{event} is not allowed in a submission")

    sys.addaudithook(hook)
