"""The parent's side of a Python submission's child: start it in the jail, call functions, get values.

The child (grader/pyexercise/child_worker.py, copied as pyworker.py) runs in a jail
(grader/run/jail): a folder of its own holding only the submission, the exercise's public modules,
the worker and its value codec; NumPy lent read-only; nothing of the exercise folder, its hidden
tests, the reference, the grader or other gradings. The kernel keeps it there (bubblewrap's
namespaces, else Landlock; a seccomp filter that refuses new processes, threads, sockets and
signals; a sandbox uid where the grader is root); `isolation` says which walls applied. The worker's
audit hook is a tripwire for clear messages, not a wall.

Always: the exercise's rlimits, capped output, a minimal environment, and every value decoded by
grader.pyexercise.values (JSON, never pickle). Nothing here compares or scores.
"""
from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import arguments, values as pyvalues
from ..run.jail import layers as jail_layers
from ..run.jail import confine
from ..run.jail.launch import Cell, Jailed
from ..run.jail.syscalls import SyscallPolicy
from ..run.parent.sandbox import _CappedReader
from ..spec import Limits
from ..run.parent.supervisor import child_limits

MAX_REPLY_BYTES = 16 * 1024**2
_HERE = Path(__file__).resolve().parent
NO_NAMESPACES_VARIABLE = jail_layers.NO_NAMESPACES_VARIABLE  # set (to anything) to grade as where namespaces are refused
# A function computes values: it starts no process or thread, opens no socket, signals nobody. Refusing
# threads also keeps a submission from writing into the grader's channel while the worker does.
PYTHON_SYSCALLS = SyscallPolicy(processes=False, threads=False, signals=False, unix_sockets=False)


@dataclass(frozen=True)
class CallOutcome:
    """What one call of a student function gave: the value and the arguments after it, or an error."""

    ok: bool
    value: Any = None
    args: tuple = ()
    error: str = ""
    line: int | None = None  # the submission's line where an exception was raised


@dataclass
class LoadOutcome:
    """Whether the submission loaded in the child, and which of the required functions it defines."""

    ok: bool
    defined: Mapping[str, bool] = field(default_factory=dict)
    error: str = ""
    line: int | None = None


def namespaces_available() -> bool:
    """Whether a child gets bubblewrap's namespaces here (else Landlock, or no kernel wall at all)."""
    return jail_layers.current().namespaces


class Worker:
    """One child running one submission; call() its functions until close() (or a context manager).

    A call that raises is an outcome, not an exception; a child that dies or hangs is killed and
    the calls after it are answered with why, unless restart() brings up a fresh one.
    """

    def __init__(self, source: str, *, functions: Sequence[str], public_files: Mapping[str, str], limits: Limits,
                 hide: Sequence[Path] = (), public_classes: Mapping[str, type] | None = None, audit: bool = True,
                 changes: Mapping[str, Sequence[str]] | None = None):
        self.source = source
        self.functions = tuple(functions)
        self.public_files = dict(public_files)
        self.limits = limits
        self.hide = tuple(Path(p).resolve() for p in hide if Path(p).exists())
        self.factories = {k: pyvalues.empty_instance(v) for k, v in (public_classes or {}).items()}
        self.public_classes = dict(public_classes or {})
        self.audit = audit  # False only to test the kernel's walls alone
        self.changes = dict(changes or {})
        self.deadline = time.monotonic() + limits.run_seconds
        self.layers = jail_layers.current()
        self.isolation = self.layers.describe()
        self.proc = None
        self.jail: Jailed | None = None
        self.dead = ""
        self.stderr: _CappedReader | None = None
        self.printed: list[str] = []
        self._next = 0
        self.hung: set[str] = set()  # functions a call of which ran out of time: not called again
        # Each function's share of run_seconds for all its calls, so one slow or endless function
        # cannot use up the time the others need (the whole child still stops at run_seconds).
        self.share = limits.run_seconds / max(1, len(self.functions))
        self.spent = {fn: 0.0 for fn in self.functions}
        self.loaded = self._start()

    # -- lifecycle ------------------------------------------------------------------------------

    def _start(self) -> LoadOutcome:
        seconds = max(1.0, self.deadline - time.monotonic())
        cell = Cell(packages=("numpy",), hidden=self.hide, syscalls=PYTHON_SYSCALLS,
                    limits=child_limits(self.limits, seconds))
        self.jail = jail = Jailed(cell, self.layers)
        jail.write("submission.py", self.source)
        for name, text in self.public_files.items():
            jail.write(name, text)
        # Under the names the worker knows them by (it imports pyvalues): top-level modules in that folder.
        jail.write("pyworker.py", (_HERE / "child_worker.py").read_text(encoding="utf-8"))
        jail.write("pyvalues.py", (_HERE / "values.py").read_text(encoding="utf-8"))
        jail.write("pytripwire.py", (_HERE / "tripwire.py").read_text(encoding="utf-8"))
        env = {"PATH": "/usr/bin:/bin", "HOME": jail.folder_inside, "TMPDIR": jail.folder_inside, "LANG": "C.UTF-8",
               "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self.proc = jail.popen([jail.python, "-I", "-S", "-B", "pyworker.py"], env=env)
        self.stderr = _CappedReader(self.proc.stderr, self.limits.output_bytes)
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read_replies, args=(self.proc.stdout, self.replies), daemon=True).start()
        self._send({"submission": "submission.py", "public": [Path(n).stem for n in self.public_files if n.endswith(".py")],
                    "functions": list(self.functions), "audit": self.audit, "site": jail.packages_inside})
        first = self._reply()
        if first is None:
            return LoadOutcome(False, error=f"the submission did not load: {self.dead}")
        if not first.get("loaded"):
            return LoadOutcome(False, error=str(first.get("error", "it did not load"))[:500], line=_int(first.get("line")))
        defined = first.get("defined", {})
        return LoadOutcome(True, {fn: bool(defined.get(fn)) for fn in self.functions})

    def restart(self) -> LoadOutcome:
        """A fresh child after one died in a call (the time limit still counts from the first). A
        submission that did not load is not started again: it would fail the same way, once per test."""
        if not self.loaded.ok:
            return self.loaded
        self._stop()
        self.dead = ""
        self.loaded = self._start()
        return self.loaded

    def close(self) -> None:
        self._stop()

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _stop(self) -> None:
        if self.jail is not None:
            self.jail.close()  # every process of the jail is gone before any verdict is written
            self.jail = None
        if self.proc is not None:
            if self.stderr is not None:
                self.stderr.join(2.0)
                text = self.stderr.text().strip()
                if text:
                    self.printed.append(text)
            self.proc = None

    @property
    def output(self) -> str:
        """What the student's code printed (capped), across every child this worker started."""
        current = self.stderr.text().strip() if self.proc is not None and self.stderr is not None else ""
        return "\n".join(t for t in (*self.printed, current) if t)

    # -- calls ----------------------------------------------------------------------------------

    def call(self, fn: str, args: Sequence[Any], timeout: float | None = None) -> CallOutcome:
        """Call the student's `fn` with args (values the codec allows) and wait for what it gives.

        The child works on copies of args. What the exercise lets a call change (`changes`) is
        brought back into args; any other change fails the call (grader.pyexercise.arguments)."""
        if fn not in self.functions:
            raise KeyError(fn)
        if not self.loaded.ok or self.dead:
            return CallOutcome(False, error=self.dead or self.loaded.error)
        if not self.loaded.defined.get(fn):
            return CallOutcome(False, error=f"the submission does not define {fn}()")
        if fn in self.hung:  # one endless call is enough: the others keep their share of the time
            return CallOutcome(False, error=f"not run: an earlier call of {fn}() did not finish in time")
        left = self.share - self.spent[fn]
        if left <= 0:
            self.hung.add(fn)
            return CallOutcome(False, error=f"not run: the calls of {fn}() used up its {self.share:.0f} s share of the time limit")
        timeout = left if timeout is None else min(timeout, left)
        self._next += 1
        try:
            payload = pyvalues.encode(list(args), public=self.public_classes)
        except pyvalues.NotAValue as exc:  # the exercise's own test passed something the codec refuses
            raise TypeError(f"cannot send {fn}'s arguments to the child: {exc}") from None
        self._send({"id": self._next, "fn": fn, "args": payload})
        started = time.monotonic()
        reply = self._reply(timeout)
        self.spent[fn] += time.monotonic() - started
        if reply is None:
            if self.timed_out:
                self.hung.add(fn)
            return CallOutcome(False, error=self.dead)
        if reply.get("id") != self._next:
            self._kill(f"its process answered out of turn (did the submission write to the grader's channel?)")
            return CallOutcome(False, error=self.dead)
        if not reply.get("ok"):
            return CallOutcome(False, error=str(reply.get("error", "it failed"))[:500], line=_int(reply.get("line")))
        try:
            value = pyvalues.decode(reply.get("value"), self.factories)
            after = pyvalues.decode(reply.get("args"), self.factories)
        except (pyvalues.NotAValue, ValueError, TypeError) as exc:
            return CallOutcome(False, error=f"it returned something the grader cannot read: {exc}")
        changed = arguments.take_back(args, after if isinstance(after, list) else [], self.changes)
        if changed:
            return CallOutcome(False, error=f"{changed}; a function must leave its inputs as it got them "
                                            "(the grader checks its result against its own copies)")
        return CallOutcome(True, value=value, args=tuple(args))

    def _send(self, doc: Mapping[str, Any]) -> None:
        try:
            self.proc.stdin.write(json.dumps(doc, allow_nan=False).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # it is gone; _reply says how

    def _read_replies(self, stream, out: queue.Queue) -> None:
        while True:
            line = stream.readline(MAX_REPLY_BYTES + 1)
            if not line:
                out.put(None)
                return
            if len(line) > MAX_REPLY_BYTES:
                out.put({"_too_big": True})
                return
            try:
                reply = json.loads(line)
            except (ValueError, RecursionError):  # not JSON, or JSON nested past the parser's depth
                reply = None
            out.put(reply if isinstance(reply, dict) else {"_garbled": True})

    def _reply(self, timeout: float | None = None) -> dict | None:
        self.timed_out = False
        left = self.deadline - time.monotonic()
        wait = left if timeout is None else min(left, timeout)
        try:
            reply = self.replies.get(timeout=max(0.0, wait))
        except queue.Empty:
            self.timed_out = True
            self._kill(f"it did not finish within the time limit ({self.limits.run_seconds:g} s for all calls"
                       + (f", {timeout:.3g} s for this one" if timeout is not None and timeout < left else "")
                       + "): an endless loop?")
            return None
        if reply is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # it closed the channel (an exec) and went on running
                self._kill("its process closed the grader's channel and went on running (did the submission "
                           "replace itself with another program?)")
                return None
            if self.proc.returncode == confine.FAILED and self._next == 0:
                self.stderr.join(2.0)
                raise OSError(f"the grader could not start the sandbox: {self.stderr.text().strip()[-300:]}")
            self._kill(_ended(self.proc.returncode, self.layers.namespaces))
            return None
        if reply.get("_too_big"):
            self._kill(f"its reply was larger than {MAX_REPLY_BYTES // 1024**2} MiB")
            return None
        if reply.get("_garbled"):
            self._kill("its process wrote something that is not a reply into the grader's channel")
            return None
        return reply

    def _kill(self, why: str) -> None:
        self.dead = why
        if self.jail is not None:
            self.jail.kill()


def _ended(code: int | None, namespaces: bool = False) -> str:
    import signal

    if namespaces and code is not None and 128 < code <= 128 + 64:
        code = 128 - code  # bubblewrap exits 128 + N for a command killed by signal N
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = {"SIGXCPU": " (its CPU time limit)", "SIGSEGV": " (a crash: a recursion without end?)",
                "SIGKILL": " (out of memory, or killed)", "SIGXFSZ": " (it wrote a file past the size limit)"}.get(name, "")
        return f"its process was killed by {name}{hint}"
    return f"its process exited (status {code}) instead of returning: a function must return its result"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
