"""The child that runs a Python submission: it calls the student's functions and returns values.

Copied as pyworker.py, with values.py as pyvalues.py, into a fresh folder that holds nothing but the
submission and the exercise's public modules, and started there as `python -I -S -B pyworker.py`
(grader/pyexercise/sandbox.py, the parent's side) in the jail (grader/run/jail), under the
exercise's limits. It must not import the grader: the grader's own folder (and the exercise's) are
not where it runs. NumPy comes from the folder the setup names ("site"), where the jail lends it.

Protocol: one JSON object per line. The first line in is the setup ({"submission", "public",
"functions", "audit", "site"}); the first line out says what loaded. Then each line in is a call
({"id", "fn", "args"}) and each line out its outcome ({"id", "ok", "value", "args"} or {"id",
"ok": false, "error", "line"}). The protocol uses copies of fds 0 and 1 made before the student's
code loads; the student's own prints go to stderr, which the grader caps. Nothing here compares or
scores: the grader does, with what comes back.

An audit hook (installed before the student's code loads) refuses what a function computing values
never needs: starting processes, sockets, ctypes, and opening files outside this folder and the
Python installation. It is a tripwire that says why in words; the walls are the kernel's (the jail).
"""
from __future__ import annotations

import json
import os
import sys
import traceback

FORBIDDEN_MODULES = frozenset({
    "socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess", "multiprocessing", "_multiprocessing",
    "ctypes", "_ctypes", "cffi", "pty", "urllib.request", "http.client", "ftplib", "smtplib", "telnetlib",
    "asyncio", "concurrent.futures.process", "resource", "mmap", "fcntl", "importlib.metadata", "pip",
})
_BLOCKED_EVENTS = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "subprocess.Popen",
                   "socket.", "ctypes.", "os.kill", "os.killpg", "os.setuid", "pty.spawn", "sys.addaudithook", "signal.",
                   "os.chroot", "os.startfile", "shutil.rmtree", "os.link", "os.symlink")
_WRITE_EVENTS = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime")


class Refused(Exception):
    """What the audit hook raises: the submission tried something grading does not allow."""


def main() -> int:
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # the student's prints go to stderr, never into the protocol
    sys.stdout = os.fdopen(1, "w", buffering=1, errors="replace", closefd=False)
    setup = json.loads(proto_in.readline())
    sys.setrecursionlimit(3000)
    here = os.path.realpath(os.getcwd())
    site = setup.get("site") or here
    sys.path[:0] = [here, site]  # -I leaves the script's folder off the path; this folder is ours

    import numpy  # loaded (and its files read) before the hook narrows what may be opened
    import numpy.testing  # noqa: F401 - it imports subprocess and socket itself; their calls are still refused
    import pyvalues

    # Modules numpy happened to load stay loaded for numpy, but not for the student: importing them
    # again raises the import event the hook refuses.
    for name in list(sys.modules):
        if name in FORBIDDEN_MODULES or name.split(".")[0] in FORBIDDEN_MODULES:
            del sys.modules[name]

    def send(doc: dict) -> None:
        proto_out.write(json.dumps(doc, allow_nan=False).encode() + b"\n")
        proto_out.flush()

    # Readable besides this folder: the standard library and NumPy (lazy submodules), never the
    # whole sys.path, which may hold the grader's checkout (an editable install).
    readable = [here, site, os.path.dirname(os.path.realpath(os.__file__)), os.path.dirname(os.path.realpath(numpy.__file__))]
    if setup.get("audit", True):
        _install_hook(here, readable)

    public: dict = {}
    modules = {}
    for name in setup.get("public", ()):
        try:
            modules[name] = _load(name, f"{name}.py")
        except BaseException as exc:  # noqa: BLE001 - an exercise error, reported, not raised
            send({"loaded": False, "error": f"the exercise's public module {name} failed to load: {_why(exc)}"})
            return 0
        for value in vars(modules[name]).values():
            if isinstance(value, type) and value.__module__ == name:
                public[f"{name}.{value.__qualname__}"] = value
    try:
        student = _load("submission", setup["submission"])
    except BaseException as exc:  # noqa: BLE001 - SystemExit and the rest: the student's, reported
        send({"loaded": False, "error": _why(exc), "line": _student_line(exc, setup["submission"])})
        return 0
    defined = {fn: callable(getattr(student, fn, None)) for fn in setup.get("functions", ())}
    send({"loaded": True, "defined": defined})
    factories = {k: pyvalues.empty_instance(v) for k, v in public.items()}
    while True:
        line = proto_in.readline()
        if not line:
            return 0
        request = json.loads(line)
        try:
            args = pyvalues.decode(request["args"], factories)
            fn = getattr(student, request["fn"])
            value = fn(*args)
            reply = {"id": request["id"], "ok": True, "value": pyvalues.encode(value, public=public),
                     "args": pyvalues.encode(list(args), public=public)}
        except pyvalues.NotAValue as exc:
            reply = {"id": request["id"], "ok": False, "error": f"it returned something the grader cannot read: {exc}"}
        except BaseException as exc:  # noqa: BLE001 - sys.exit, MemoryError, RecursionError: the student's
            reply = {"id": request["id"], "ok": False, "error": _why(exc), "line": _student_line(exc, setup["submission"])}
        try:
            send(reply)
        except (TypeError, ValueError) as exc:
            send({"id": request["id"], "ok": False, "error": f"it returned something the grader cannot read: {exc}"})


def _load(name: str, filename: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(os.getcwd(), filename))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _why(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}); a function must return its result"
    if isinstance(exc, RecursionError):
        return "RecursionError: maximum recursion depth exceeded (a recursion without end?)"
    if isinstance(exc, SyntaxError):  # its own text names the worker's file; the grader names the line
        return f"{type(exc).__name__}: {exc.msg}"
    if isinstance(exc, MemoryError):
        return "MemoryError: it needed more memory than grading allows"
    if isinstance(exc, RuntimeError) and "new thread" in str(exc):
        return "RuntimeError: can't start new thread (a submission may not start threads or processes)"
    text = "".join(ch if ch.isprintable() else "?" for ch in str(exc))[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _student_line(exc: BaseException, filename: str) -> int | None:
    """The line of the submission where the exception was raised (its innermost frame there)."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.basename(frame.filename) == filename:
            line = frame.lineno
    if line is None and isinstance(exc, SyntaxError) and os.path.basename(exc.filename or "") == filename:
        line = exc.lineno
    return line


def _install_hook(here: str, readable: list[str]) -> None:
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
            if name in FORBIDDEN_MODULES or name.split(".")[0] in FORBIDDEN_MODULES:
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
        elif event.startswith(_WRITE_EVENTS):
            if args and not inside(args[0], [here]):
                raise Refused(f"{event} outside the grading folder is not allowed")
        elif event.startswith(_BLOCKED_EVENTS):
            raise Refused(f"{event} is not allowed in a submission")

    sys.addaudithook(hook)


if __name__ == "__main__":
    sys.exit(main())
