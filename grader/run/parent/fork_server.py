"""A warm process that starts the grader's Python children by fork instead of a fresh interpreter.

Each child of an emulator grading (`python -m grader run`, its compile child, its emulator runner,
its hidden tests' pytest) is a fresh Python that imports NumPy, the grader, the emulator and pytest:
about 0.25 CPU-seconds each, four times per submission, on a machine that grades on two cores. A
fork server pays for those imports once: it imports them, then waits on a Unix socket; each request
("run `python -m MODULE ARGS` with this environment, in this folder, under these rlimits, with
these stdin/stdout/stderr") is answered by a fork whose child sets itself up as that command would
have been and runs the module as `__main__`.

Isolation is what it was: every child is a separate process in its own session, with the same
rlimits, the same time limit and capped output (the requesting side's grader.run.parent.sandbox drains the
pipes and kills the child's group at the deadline), and it starts from the server's state, which
only ever imported modules and never ran a grading: nothing of one submission can reach the next.
The server itself runs no student code and no grading; a grading that hangs or crashes is charged
to itself, and the batch kills and replaces the server it used (grader.staff.batch.local).

Server:  python -m grader.run.parent.fork_server SOCKET   (prints "ready" once listening; exits at EOF on stdin;
         compile children come from a second server on SOCKET.compile that loaded only NVRTC)
Client:  sandbox.start_child() forks through the server named by $KERNEL_GRADER_FORK_SERVER when
         the command is one of FORKABLE (spawn()); anything else, or a server that is gone, is an
         ordinary subprocess as before.

Over 400 lines as one module because its three parts (the client's spawn(), the owner's ForkServer,
the server's loop and its forked child) speak one private protocol over the socket (framed JSON and
passed file descriptors) that changes in all three at once.
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, Mapping, Sequence

from .rlimits import ResourceLimits, limit_setter

VARIABLE = "KERNEL_GRADER_FORK_SERVER"  # the socket of the server a child may fork through
# The commands a server may run: the grader's own children. Nothing else (a wrapper like ncu, a
# student's Python module) goes through it.
FORKABLE = ("grader", "grader.run.child.runner", "grader.compile", "pytest")
# Imported once by the server, so its children need not.
PRELOAD = ("numpy", "jsonschema", "grader.cli", "grader.api", "grader.run.child.runner", "grader.emu", "grader.backends.emu",
           "grader.run.child.hidden_tests", "grader.compile", "pytest", "_pytest.config", "_pytest.python", "_pytest.assertion.rewrite")
# On a GPU host also CuPy and the GPU backend: imported only, never initialised. CUDA does not survive
# a fork once a process has initialised it, so the server never touches a device (no context, no
# device query: CuPy creates its context lazily, in each forked child at its first launch).
GPU_PRELOAD = ("cupy", "grader.backends.gpu", "grader.run.child.timing", "grader.run.child.launch_budget")
GPU_FLAG = "--gpu"
_HEADER = struct.Struct("!I")
_STATUS = struct.Struct("!i")
READY = b"ready\n"
COMPILE_SUFFIX = ".compile"  # the socket of the compile children's own server, beside the main one
START_SECONDS = 60.0


# ---------------------------------------------------------------------------------------------
# Client side (the process that would otherwise have called subprocess.Popen)

def forkable(argv: Sequence[str]) -> str | None:
    """The module of `argv` when it is `python -m MODULE ...` with this interpreter and one of FORKABLE."""
    if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m" and argv[2] in FORKABLE:
        return argv[2]
    return None


class ForkedProcess:
    """A child forked by the server, seen like a subprocess.Popen: pid, stdout, stderr, wait(), poll().

    Its exit status comes back on a pipe the server writes when it reaps the child (it is the
    server's child, not ours). If the server dies first, the child is killed and counts as killed."""

    def __init__(self, argv: Sequence[str], pid: int, stdout: IO[bytes], stderr: IO[bytes], status_fd: int):
        self.args = list(argv)
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._status_fd = status_fd

    def poll(self) -> int | None:
        """The exit status if the child has ended, else None."""
        return self._collect(0.0)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child's end; subprocess.TimeoutExpired after `timeout` seconds, as Popen."""
        code = self._collect(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def _collect(self, timeout: float | None) -> int | None:
        if self.returncode is not None:
            return self.returncode
        ready, _, _ = select.select([self._status_fd], [], [], timeout)
        if not ready:
            return None
        data = b""
        while len(data) < _STATUS.size:
            chunk = os.read(self._status_fd, _STATUS.size - len(data))
            if not chunk:
                break
            data += chunk
        os.close(self._status_fd)
        if len(data) == _STATUS.size:
            self.returncode = _STATUS.unpack(data)[0]
        else:  # the server went away without reaping it: make sure it is gone too
            for kill in (os.killpg, os.kill):
                try:
                    kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
            self.returncode = -signal.SIGKILL
        return self.returncode

    def __del__(self) -> None:
        if self.returncode is None:
            try:
                os.close(self._status_fd)
            except OSError:
                pass


def spawn(address: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None, limits: ResourceLimits) -> ForkedProcess:
    """Have the server at `address` fork `argv` (see forkable()); OSError when it cannot (it is gone)."""
    module = forkable(argv)
    if module is None:
        raise OSError(f"not a command the fork server runs: {argv[:3]}")
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    status_r, status_w = os.pipe()
    devnull = os.open(os.devnull, os.O_RDONLY)
    sent = (devnull, out_w, err_w, status_w)
    try:
        request = {"op": "spawn", "module": module, "args": list(argv[3:]), "env": dict(env),
                   "cwd": os.path.abspath(cwd or os.curdir), "limits": asdict(limits)}
        try:
            if module != "grader.compile":
                raise OSError("not a compile")
            reply = _ask(address + COMPILE_SUFFIX, request, sent)
        except OSError:  # not a compile, or its server is not up (yet): the main one forks it
            reply = _ask(address, request, sent)
        pid = int(reply["pid"])
    except BaseException:
        for fd in (out_r, err_r, status_r):
            os.close(fd)
        raise
    finally:
        for fd in sent:
            os.close(fd)
    os.set_inheritable(status_r, False)
    return ForkedProcess(argv, pid, os.fdopen(out_r, "rb", buffering=0), os.fdopen(err_r, "rb", buffering=0), status_r)


def kill_children(address: str) -> int:
    """Ask the server (and its compile server) to SIGKILL every child (and its group) they have not
    yet reaped; how many. OSError when the main server does not answer."""
    try:
        killed = int(_ask(address + COMPILE_SUFFIX, {"op": "kill-all"}, ()).get("killed", 0))
    except OSError:
        killed = 0  # not started, or gone: the main server forks compiles then
    return killed + int(_ask(address, {"op": "kill-all"}, ()).get("killed", 0))


def _ask(address: str, request: Mapping[str, Any], fds: Sequence[int], timeout: float = 30.0) -> dict[str, Any]:
    payload = json.dumps(request).encode("utf-8", "surrogatepass")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(address)
        message = _HEADER.pack(len(payload)) + payload
        sent = socket.send_fds(conn, [message], list(fds)) if fds else conn.send(message)
        if sent < len(message):
            conn.sendall(message[sent:])
        reply = _read_message(conn)
    if "error" in reply:
        raise OSError(f"fork server: {reply['error']}")
    return reply


def _read_message(conn: socket.socket, first: bytes = b"") -> dict[str, Any]:
    data = first
    while len(data) < _HEADER.size:
        chunk = conn.recv(65536)
        if not chunk:
            raise OSError("fork server: connection closed")
        data += chunk
    size = _HEADER.unpack(data[:_HEADER.size])[0]
    while len(data) < _HEADER.size + size:
        chunk = conn.recv(65536)
        if not chunk:
            raise OSError("fork server: connection closed")
        data += chunk
    return json.loads(data[_HEADER.size:_HEADER.size + size].decode("utf-8", "surrogatepass"))


def _send_message(conn: socket.socket, message: Mapping[str, Any]) -> None:
    payload = json.dumps(message).encode()
    conn.sendall(_HEADER.pack(len(payload)) + payload)


# ---------------------------------------------------------------------------------------------
# The server as its owner sees it (grader.staff.batch.local.WarmSlot)

class ForkServer:
    """One running server: start() it, hand children its `address` (in $KERNEL_GRADER_FORK_SERVER),
    kill_children() between gradings, stop() it (or restart() after a grading that hung)."""

    def __init__(self, env: Mapping[str, str], folder: Path | None = None, *, gpu: bool = False) -> None:
        self._env = dict(env)
        self._gpu = gpu  # also preload CuPy (grader.run.parent.fork_server.GPU_PRELOAD)
        src_root = str(Path(__file__).resolve().parent.parent)  # it imports this same grader, whatever its cwd
        self._env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, self._env.get("PYTHONPATH", "")) if p)
        self._env.pop(VARIABLE, None)
        # A private folder (0700): no other user can connect to the socket.
        self._folder = Path(tempfile.mkdtemp(prefix="kg-fork-", dir=folder))
        self.address = str(self._folder / "socket")
        self._proc: subprocess.Popen | None = None

    def start(self) -> bool:
        """Start the server and wait until it listens; False (and nothing running) when it could not."""
        self.stop()
        Path(self.address).unlink(missing_ok=True)
        Path(self.address + COMPILE_SUFFIX).unlink(missing_ok=True)
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", "grader.run.parent.fork_server", self.address]
                                          + ([GPU_FLAG] if self._gpu else []),
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          env=self._env, cwd=str(self._folder), start_new_session=True)
        except OSError:
            self._proc = None
            return False
        ready, _, _ = select.select([self._proc.stdout], [], [], START_SECONDS)
        if not ready or self._proc.stdout.readline() != READY:
            self.stop()
            return False
        return True

    @property
    def running(self) -> bool:
        """Whether the server is up."""
        return self._proc is not None and self._proc.poll() is None

    def ended(self, grace: float = 0.0) -> bool:
        """Whether the server has exited, waiting up to `grace` seconds for one on its way out (a
        SIGKILL from outside lands a moment after the children it forked are seen to die)."""
        if self._proc is None:
            return True
        if grace > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=grace)
        return self._proc.poll() is not None

    def kill_children(self) -> None:
        """End whatever the last grading left running (normally nothing); a server that does not
        answer is restarted."""
        if not self.running:
            self.start()
            return
        try:
            kill_children(self.address)
        except OSError:
            self.restart()

    def restart(self) -> bool:
        """Kill the server and every child it forked, and start a fresh one."""
        self.stop()
        return self.start()

    def stop(self) -> None:
        """Kill the server and every child it still has."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            kill_children(self.address)
        except OSError:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    def close(self) -> None:
        """stop() and remove the socket's folder."""
        self.stop()
        Path(self.address).unlink(missing_ok=True)
        Path(self.address + COMPILE_SUFFIX).unlink(missing_ok=True)
        try:
            self._folder.rmdir()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Server side

def serve(address: str, gpu: bool = False) -> int:
    """Import PRELOAD (and GPU_PRELOAD with `gpu`), listen on `address`, fork a child per request;
    return when stdin closes.

    Compile children come from a second server of their own (on `address` + COMPILE_SUFFIX), forked
    before NumPy and the rest are imported: it loads only the compiler (NVRTC, about 0.16 CPU-seconds
    per fresh process), so a compile child's address space, which its memory cap bounds, holds what
    a fresh compile child's would."""
    import importlib

    if os.fork() == 0:
        code = 0
        try:
            try:
                importlib.import_module("grader.compile")
                from cupy_backends.cuda.libs import nvrtc

                nvrtc.getVersion()  # loads the library: the expensive part
            except Exception:  # noqa: BLE001 - no compiler here: its children fail as fresh ones would
                pass
            code = _loop(address + COMPILE_SUFFIX, ("grader.compile",), announce=False)
        finally:
            os._exit(code)
    for name in PRELOAD + (GPU_PRELOAD if gpu else ()):
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # an optional piece (pytest) missing: its children import (and fail) as before
    try:  # pytest's own plugins, which every run of it imports
        from _pytest.config import default_plugins

        for name in default_plugins:
            importlib.import_module(f"_pytest.{name}")
    except ImportError:
        pass
    return _loop(address, FORKABLE, announce=True)


def _loop(address: str, modules: Sequence[str], *, announce: bool) -> int:
    """Listen on `address` and fork a child per request for one of `modules`, until stdin closes."""
    import gc

    gc.collect()
    gc.freeze()  # what the imports made stays put: children's collections neither scan nor copy it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    os.chmod(address, 0o600)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake select() through the wakeup fd
    children: dict[int, int] = {}  # pid -> the write end of its status pipe
    if announce:
        sys.stdout.buffer.write(READY)
        sys.stdout.flush()
    while True:
        try:
            readable, _, _ = select.select([listener, wake_r, 0], [], [])
        except InterruptedError:
            continue
        if wake_r in readable:
            os.read(wake_r, 4096)
        _reap(children)
        if 0 in readable and not os.read(0, 4096):  # the owner went away
            _kill_all(children)
            return 0
        if listener in readable:
            conn, _ = listener.accept()
            with conn:
                _answer(conn, listener, children, (wake_r, wake_w), modules)


def _answer(conn: socket.socket, listener: socket.socket, children: dict[int, int], own: tuple[int, int],
            modules: Sequence[str]) -> None:
    conn.settimeout(10.0)
    fds: list[int] = []
    try:
        first, fds, _, _ = socket.recv_fds(conn, 1 << 16, 8)
        request = _read_message(conn, first)
        if request.get("op") == "kill-all":
            _send_message(conn, {"killed": _kill_all(children)})
            return
        if request.get("op") != "spawn" or len(fds) != 4 or request.get("module") not in modules:
            _send_message(conn, {"error": "bad request"})
            return
        started_r, started_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(started_r)
            _become(request, fds, started_w, [listener.fileno(), conn.fileno(), *own, *children.values()])
        os.close(started_w)
        children[pid] = os.dup(fds[3])
        os.read(started_r, 1)  # it has its own session now: the requester may kill its group from here on
        os.close(started_r)
        _send_message(conn, {"pid": pid})
    except (OSError, ValueError) as exc:
        try:
            _send_message(conn, {"error": str(exc)[:200]})
        except OSError:
            pass
    finally:
        for fd in fds:
            os.close(fd)


def _reap(children: dict[int, int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = children.pop(pid, None)
        if fd is None:
            continue
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        try:
            os.write(fd, _STATUS.pack(code))
        except OSError:
            pass
        os.close(fd)


def _kill_all(children: Mapping[int, int]) -> int:
    for pid in children:
        for kill in (os.killpg, os.kill):  # its group (it called setsid first thing), else itself
            try:
                kill(pid, signal.SIGKILL)
                break
            except OSError:
                continue
    return len(children)


def _become(request: Mapping[str, Any], fds: Sequence[int], started: int, close: Sequence[int]) -> None:
    """In the forked child: become `python -m MODULE ARGS` as the requester set it up, run it, exit."""
    code = 1
    try:
        os.setsid()  # its own session and group, as start_child's start_new_session: a kill takes its children too
        os.close(started)  # tells the server so
        _name_process(request["module"])
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in close:
            try:
                os.close(fd)
            except OSError:
                pass
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            os.close(fd)
        limit_setter(ResourceLimits(**request["limits"]))()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update({k: v for k, v in request["env"].items() if k != VARIABLE or request["module"] == "grader"})
        tempfile.tempdir = None  # read $TMPDIR again: each grading has its own
        sys.path[0] = os.getcwd()  # as `python -m` would have it
        sys.argv = [request["module"], *request["args"]]
        code = _run_module(request["module"])
    except BaseException:  # noqa: BLE001 - whatever happens, the child must not return into the server's loop
        try:
            import traceback

            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                pass
        os._exit(code)


def _name_process(name: str) -> None:
    """Set the process's short name (/proc/PID/comm, 15 bytes), which profilers and `ps -o comm` show:
    a forked child's command line is still the server's."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def _run_module(module: str) -> int:
    """Run `module` as `python -m` would, then shut down as the interpreter would (threads, atexit)."""
    import atexit
    import runpy
    import threading

    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # noqa: BLE001 - as an uncaught exception in `python -m`: traceback, status 1
        import traceback

        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # wait for non-daemon threads, as at exit
    atexit._run_exitfuncs()
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    os.environ.pop(VARIABLE, None)
    sys.exit(serve(sys.argv[1], gpu=GPU_FLAG in sys.argv[2:]))
