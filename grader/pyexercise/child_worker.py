"""The child that runs a Python submission: it calls the student's functions and returns values.

Copied as pyworker.py, with values.py as pyvalues.py and tripwire.py as pytripwire.py, into a fresh folder that holds nothing but the
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
Python installation (tripwire.py). It is a tripwire that says why in words; the walls are the kernel's (the jail).
"""
from __future__ import annotations

import json
import os
import sys


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
    import pytripwire
    import pyvalues

    # Modules numpy happened to load stay loaded for numpy, but not for the student.
    pytripwire.forget_forbidden(pytripwire.FORBIDDEN_MODULES)

    def send(doc: dict) -> None:
        proto_out.write(json.dumps(doc, allow_nan=False).encode() + b"\n")
        proto_out.flush()

    # Readable besides this folder: the standard library and NumPy (lazy submodules), never the
    # whole sys.path, which may hold the grader's checkout (an editable install).
    readable = [here, site, os.path.dirname(os.path.realpath(os.__file__)), os.path.dirname(os.path.realpath(numpy.__file__))]
    if setup.get("audit", True):
        pytripwire.install(here, readable)

    public: dict = {}
    modules = {}
    for name in setup.get("public", ()):
        try:
            modules[name] = pytripwire.load(name, f"{name}.py")
        except BaseException as exc:  # noqa: BLE001 - an exercise error, reported, not raised
            send({"loaded": False, "error": f"the exercise's public module {name} failed to load: {_why(exc)}"})
            return 0
        for value in vars(modules[name]).values():
            if isinstance(value, type) and value.__module__ == name:
                public[f"{name}.{value.__qualname__}"] = value
    try:
        student = pytripwire.load("submission", setup["submission"])
    except BaseException as exc:  # noqa: BLE001 - SystemExit and the rest: the student's, reported
        send({"loaded": False, "error": _why(exc), "line": pytripwire.student_line(exc, setup["submission"])})
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
            reply = {"id": request["id"], "ok": False, "error": _why(exc), "line": pytripwire.student_line(exc, setup["submission"])}
        try:
            send(reply)
        except (TypeError, ValueError) as exc:
            send({"id": request["id"], "ok": False, "error": f"it returned something the grader cannot read: {exc}"})


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


if __name__ == "__main__":
    sys.exit(main())
