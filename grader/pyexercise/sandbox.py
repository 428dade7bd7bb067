"""The parent's side of a Python submission's child: start it walled off, call functions, get values.

The child (grader/pyexercise/child_worker.py) runs in a fresh temporary folder holding only the submission, the
exercise's public modules, the worker and its value codec: not the exercise folder, its hidden
tests, the reference solution or the grader. Where the machine allows it, it starts in new user,
network and mount namespaces (`unshare --user --map-root-user --net --mount`): no network at all,
and the exercise, reference and grader folders covered by empty read-only mounts, so even an
absolute path finds nothing. Where it does not (a container without user namespaces), the same
folders are out of its folder and the worker's audit hook refuses opening files outside it, but
nothing stops a determined escape through the interpreter; `isolation` says which applied.

Always: the exercise's rlimits (CPU, address space, file size, open files), its own process group
killed on a timeout, capped output, a minimal environment, and every value decoded by
grader.pyexercise.values (JSON, never pickle). Nothing here compares or scores.
"""
from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import values as pyvalues
from ..run.parent.sandbox import _CappedReader, _kill_group, _limit_setter
from ..spec import Limits
from ..run.parent.supervisor import child_limits

MAX_REPLY_BYTES = 16 * 1024**2
_HERE = Path(__file__).resolve().parent
# Inside the new namespaces the child's folder is bound here, and the child runs in it (mask_script).
INSIDE = "/mnt"
MOUNT_FAILED = 97


def interpreter_folders() -> list[Path]:
    """The folders the child's Python needs to start and import NumPy: never hidden, wherever they are
    (a virtual environment inside a checkout under /tmp, as a CI job may have)."""
    import numpy

    found = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent, Path(numpy.__file__).parent.parent]
    return list(dict.fromkeys(p.resolve() for p in found))


def mask_script(folder: Path, masks: Sequence[Path], keep: Sequence[Path]) -> str:
    """The shell script run inside the new namespaces before the child: bind `folder` at INSIDE, cover
    each of `masks` with an empty read-only tmpfs, and put back, inside a covered folder, each folder
    of `keep` it holds (the child's own Python: a CI job may keep its virtual environment under
    /tmp). The command to run follows as "$@". Exit 97: a mount failed."""
    q = shlex.quote
    keep = [k for k in dict.fromkeys(keep) if not any(o != k and o in k.parents for o in keep)]
    lines = [f"mount --bind {q(str(folder))} {INSIDE} || exit 97"]
    staged = {}
    for i, k in enumerate(keep):
        if any(m in k.parents for m in masks):  # seen through a bind made before its folder is covered
            staged[k] = f"{INSIDE}/.kg-keep-{i}"
            lines.append(f"mkdir {staged[k]} && mount --bind {q(str(k))} {staged[k]} || exit 97")
    for m in masks:
        if m in keep:
            continue  # the child's own Python: it cannot be hidden
        inner = [k for k in staged if m in k.parents]
        if not inner:
            lines.append(f"mount -t tmpfs -o ro,size=4k kg-hidden {q(str(m))} || exit 97")
            continue
        lines.append(f"mount -t tmpfs -o size=64k kg-hidden {q(str(m))} || exit 97")
        for k in inner:
            lines.append(f"mkdir -p {q(str(k))} && mount --bind {staged[k]} {q(str(k))} || exit 97")
        lines.append(f"mount -o remount,ro {q(str(m))} || exit 97")
    for path in staged.values():
        lines.append(f"umount {path} && rmdir {path} || exit 97")
    lines += [f"cd {INSIDE} || exit 97", 'exec "$@"']
    return "\n".join(lines)


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


NO_NAMESPACES_VARIABLE = "KERNEL_GRADER_NO_NAMESPACES"  # set (to anything) to grade as where unshare is refused


def namespaces_available() -> bool:
    """Whether `unshare` can give a child new user, network and mount namespaces here (probed once)."""
    return not os.environ.get(NO_NAMESPACES_VARIABLE) and _probe_namespaces()


@lru_cache(maxsize=1)
def _probe_namespaces() -> bool:
    unshare = shutil.which("unshare")
    if not unshare or sys.platform != "linux":
        return False
    folder = tempfile.mkdtemp(prefix="kg-probe-")
    try:  # exactly what a child's start does: bind a folder at INSIDE, hide /proc and the temp folder
        script = mask_script(Path(folder), [Path("/proc"), Path(tempfile.gettempdir()).resolve()], interpreter_folders())
        probe = subprocess.run([unshare, "--user", "--map-root-user", "--net", "--mount", "sh", "-c", script, "sh",
                                "sh", "-c", "test ! -e /proc/self && echo ok"],
                               capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return probe.returncode == 0 and probe.stdout.strip() == "ok"


class Worker:
    """One child running one submission; call() its functions until close() (or a context manager).

    A call that raises is an outcome, not an exception; a child that dies or hangs is killed and
    the calls after it are answered with why, unless restart() brings up a fresh one.
    """

    def __init__(self, source: str, *, functions: Sequence[str], public_files: Mapping[str, str], limits: Limits,
                 hide: Sequence[Path] = (), public_classes: Mapping[str, type] | None = None, audit: bool = True):
        self.source = source
        self.functions = tuple(functions)
        self.public_files = dict(public_files)
        self.limits = limits
        self.hide = [Path(p).resolve() for p in hide if Path(p).exists()]
        self.factories = {k: pyvalues.empty_instance(v) for k, v in (public_classes or {}).items()}
        self.public_classes = dict(public_classes or {})
        self.audit = audit  # False only to test the namespaces as the sole wall
        self.deadline = time.monotonic() + limits.run_seconds
        self.isolation = "namespaces" if namespaces_available() else "folder and audit hook"
        self.proc: subprocess.Popen | None = None
        self.folder: Path | None = None
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
        self.folder = Path(tempfile.mkdtemp(prefix="kg-py-"))
        (self.folder / "submission.py").write_text(self.source, encoding="utf-8")
        for name, text in self.public_files.items():
            (self.folder / name).write_text(text, encoding="utf-8")
        # Under the names the worker knows them by (it imports pyvalues): top-level modules in that folder.
        shutil.copy(_HERE / "child_worker.py", self.folder / "pyworker.py")
        shutil.copy(_HERE / "values.py", self.folder / "pyvalues.py")
        argv = [sys.executable, "-I", "-B", "pyworker.py"]
        home = str(self.folder)
        if self.isolation == "namespaces":
            # Besides what the caller hides: every process's /proc entry (the grader's own command
            # lines, environments and memory), and the temp folders where other gradings keep their
            # files (other students' submissions in a batch, the hidden tests' results).
            masks = ["/proc", tempfile.gettempdir(), str(self.folder.parent), *map(str, self.hide)]
            masks = [Path(m).resolve() for m in masks if Path(m).is_dir()]
            # A folder inside another one hidden is hidden with it (and could not be mounted on).
            masks = [m for m in dict.fromkeys(masks) if m != Path("/") and not any(o != m and o in m.parents for o in masks)]
            script = mask_script(self.folder, masks, interpreter_folders())
            argv = ["unshare", "--user", "--map-root-user", "--net", "--mount", "sh", "-c", script, "sh", *argv]
            home = INSIDE
        env = {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
               "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        seconds = max(1.0, self.deadline - time.monotonic())
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=str(self.folder), env=env, start_new_session=True,
                                     preexec_fn=_limit_setter(child_limits(self.limits, seconds)))
        self.stderr = _CappedReader(self.proc.stderr, self.limits.output_bytes)
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read_replies, args=(self.proc.stdout, self.replies), daemon=True).start()
        self._send({"submission": "submission.py", "public": [Path(n).stem for n in self.public_files if n.endswith(".py")],
                    "functions": list(self.functions), "audit": self.audit})
        first = self._reply()
        if first is None:
            return LoadOutcome(False, error=f"the submission did not load: {self.dead}")
        if not first.get("loaded"):
            return LoadOutcome(False, error=str(first.get("error", "it did not load"))[:500], line=_int(first.get("line")))
        defined = first.get("defined", {})
        return LoadOutcome(True, {fn: bool(defined.get(fn)) for fn in self.functions})

    def restart(self) -> LoadOutcome:
        """A fresh child after one died (the time limit still counts from the first)."""
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
        if self.proc is not None:
            if self.proc.poll() is None:
                _kill_group(self.proc)
            else:  # it ended; anything it started in its group goes too
                try:
                    os.killpg(self.proc.pid, 9)
                except (ProcessLookupError, PermissionError):
                    pass
            if self.stderr is not None:
                self.stderr.join(2.0)
                text = self.stderr.text().strip()
                if text:
                    self.printed.append(text)
            self.proc = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    @property
    def output(self) -> str:
        """What the student's code printed (capped), across every child this worker started."""
        current = self.stderr.text().strip() if self.proc is not None and self.stderr is not None else ""
        return "\n".join(t for t in (*self.printed, current) if t)

    # -- calls ----------------------------------------------------------------------------------

    def call(self, fn: str, args: Sequence[Any], timeout: float | None = None) -> CallOutcome:
        """Call the student's `fn` with args (values the codec allows) and wait for what it gives."""
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
        return CallOutcome(True, value=value, args=tuple(after) if isinstance(after, list) else ())

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
            self.proc.wait(timeout=5)
            if self.proc.returncode == MOUNT_FAILED and self.isolation == "namespaces" and self._next == 0:
                raise OSError("the grader could not set up the child's namespaces (a mount failed)")
            self._kill(_ended(self.proc.returncode))
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
        if self.proc is not None and self.proc.poll() is None:
            _kill_group(self.proc)


def _ended(code: int | None) -> str:
    import signal

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
