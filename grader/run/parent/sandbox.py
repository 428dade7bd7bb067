"""Running student code in a child process with a wall-clock limit, resource limits and capped output.

Every stage that touches student code (compile, launches, profilers, sanitizers) goes through
run_child(). Whatever the child does (hang, crash, flood stdout, exhaust memory), the parent gets
a ChildRun value back within the time limit plus a small margin.

Every child carries a tag in its environment (TAG_VARIABLE: its grading's, or its batch's), which
whatever it starts inherits; kill_tagged() ends all of them when the grading or the batch is over
or interrupted, so that nothing a student's code started outlives its grading.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any, Sequence

from . import fork_server, reaper
from .rlimits import ResourceLimits, limit_setter
from .tags import TAG_VARIABLE, kill_tagged

KILL_GRACE_SECONDS = 2.0
DEFAULT_OUTPUT_CAP = 64 * 1024


@dataclass(frozen=True)
class ChildRun:
    """What a child process did: exit status, whether it timed out, and the head of its output."""

    returncode: int | None
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int

    @property
    def signal_name(self) -> str | None:
        """The signal that killed the child (e.g. "SIGSEGV"), if one did."""
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None

    def describe(self) -> str:
        """One line saying how the child ended, for messages."""
        if self.timed_out:
            return f"stopped after the {self.seconds:.0f} s time limit"
        if self.signal_name:
            return f"killed by {self.signal_name}"
        return f"exited with status {self.returncode}"


def run_child(argv: Sequence[str], *, timeout: float, limits: ResourceLimits | None = None,
              output_cap: int = DEFAULT_OUTPUT_CAP, env: dict[str, str] | None = None,
              cwd: str | None = None, stop: threading.Event | None = None) -> ChildRun:
    """Run argv with a wall-clock limit; keep at most output_cap bytes of each stream, count the rest.
    Setting `stop` kills it early (its result is no longer needed)."""
    return start_child(argv, limits=limits, output_cap=output_cap, env=env, cwd=cwd).finish(timeout, stop)


class Interrupted(KeyboardInterrupt):
    """Raised instead of starting a child once this process is stopping (stop_children)."""


_stopping = [False]  # a plain flag, not an Event: stop_children runs in a signal handler and takes no lock
_TAGS: set[str] = set()  # the tags of every child started here, so that stop_children finds them all


def stop_children() -> int:
    """This process was interrupted (Ctrl-C, a `kill`): from now on no child starts here, and every
    child started so far, with whatever it started (found by tag), is killed at once, rather than
    after the threads that wait on them have drained (up to a stage's time limit). Returns how many
    processes were killed. Safe in a signal handler: it takes no lock."""
    _stopping[0] = True
    return sum(kill_tagged(tag) for tag in tuple(_TAGS))


def start_child(argv: Sequence[str], *, limits: ResourceLimits | None = None, output_cap: int = DEFAULT_OUTPUT_CAP,
                env: dict[str, str] | None = None, cwd: str | None = None) -> "StartedChild":
    """Start argv now and set its time limit later (StartedChild.finish): a child can pay for its
    start-up (imports, a CUDA context) while the parent is still preparing its work."""
    if _stopping[0]:
        raise Interrupted("this process is stopping: no new child starts")
    tag = (env if env is not None else os.environ).get(TAG_VARIABLE)
    if tag:
        _TAGS.add(tag)
        reaper.watch(tag)  # should this process be killed outright, its children go too
    child = StartedChild(argv, limits or ResourceLimits(), output_cap, env, cwd)
    if _stopping[0]:  # stop_children ran while this one was starting: it must not outlive the others
        child.cancel()
        raise Interrupted("this process is stopping: no new child starts")
    return child


class StartedChild:
    """A running child whose wall-clock limit starts when the parent calls finish()."""

    def __init__(self, argv: Sequence[str], limits: ResourceLimits, output_cap: int, env: dict[str, str] | None,
                 cwd: str | None):
        self.proc = _forked(argv, limits, env, cwd) or subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=cwd, start_new_session=True,  # own process group: a timeout kills its children too
            preexec_fn=limit_setter(limits) if os.name == "posix" else None,
        )
        self.readers = [_CappedReader(self.proc.stdout, output_cap), _CappedReader(self.proc.stderr, output_cap)]

    def finish(self, timeout: float, stop: threading.Event | None = None) -> ChildRun:
        """Wait for the child at most `timeout` seconds from now (then kill it and its group). Setting
        `stop` ends the wait early the same way: its result is no longer needed."""
        start = time.perf_counter()
        timed_out = False
        deadline = time.monotonic() + timeout
        try:
            while stop is not None and not stop.is_set() and self.proc.poll() is None:
                if time.monotonic() >= deadline:
                    raise subprocess.TimeoutExpired(self.proc.args, timeout)
                stop.wait(0.05)
            if stop is not None and stop.is_set() and self.proc.poll() is None:
                _kill_group(self.proc)
            self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(self.proc)
        for reader in self.readers:
            reader.join(KILL_GRACE_SECONDS)
        out, err = self.readers
        return ChildRun(self.proc.returncode, timed_out, time.perf_counter() - start, out.text(), err.text(),
                        out.total, err.total)

    def cancel(self) -> None:
        """Not needed after all (the submission did not compile): kill it at once. It has run nothing
        of the student's, so there is nothing to let it finish, and nothing of its output to read: its
        exit is awaited in the background (reap). A GPU child's exit waits for the driver to tear its
        CUDA context down, and a grading that waited for that was as much later."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        reap(self.proc, self.readers)


def reap(proc: Any, readers: Sequence[Any] = ()) -> threading.Thread:
    """Wait for a killed child (and its output readers) in a daemon thread, so that its end, however
    slow, holds nobody up; the thread."""
    def wait() -> None:
        proc.wait()
        for reader in readers:
            reader.join(KILL_GRACE_SECONDS)

    thread = threading.Thread(target=wait, name=f"reap-{proc.pid}", daemon=True)
    thread.start()
    return thread


def _forked(argv: Sequence[str], limits: ResourceLimits, env: dict[str, str] | None, cwd: str | None):
    """The child forked by a warm fork server (grader.run.parent.fork_server) when the environment names one and
    argv is one of the grader's own Python children; None to start it the ordinary way (also when the
    server is gone: it only ever saves start-up time)."""
    address = (env if env is not None else os.environ).get(fork_server.VARIABLE)
    if not address or fork_server.forkable(argv) is None:
        return None
    try:
        return fork_server.spawn(address, argv, env=env if env is not None else os.environ, cwd=cwd, limits=limits)
    except OSError:
        return None


def python_argv(module: str, *args: str) -> list[str]:
    """argv that runs `python -m module args` with this interpreter, isolated from the caller's cwd."""
    return [sys.executable, "-m", module, *args]


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=KILL_GRACE_SECONDS)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


class _CappedReader:
    """Drains a pipe in a thread so the child never blocks on a full pipe; keeps only the head."""

    def __init__(self, stream: IO[bytes] | None, cap: int):
        self.cap, self.total, self.chunks = cap, 0, []
        self.thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self.thread.start()

    def _drain(self, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        kept = 0
        # read1: whatever has arrived, at once (read(n) would wait for n bytes or the end, so what a
        # live child printed, under 64 KiB, was never seen before it ended)
        read = getattr(stream, "read1", stream.read)
        for chunk in iter(lambda: read(65536), b""):
            self.total += len(chunk)
            if kept < self.cap:
                self.chunks.append(chunk[: self.cap - kept])
                kept += len(self.chunks[-1])
        stream.close()

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)

    def text(self) -> str:
        text = b"".join(self.chunks).decode("utf-8", errors="replace")
        if self.total > self.cap:
            text += f"\n[... {self.total - self.cap:,} more bytes of output not kept]"
        return text
