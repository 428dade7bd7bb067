"""The parent's side of a Triton submission's child: the Python kind's jailed worker, lent torch and
Triton, running grader/triton/child.py under TRITON_INTERPRET=1.

The jail, the limits, the time shares, the channel and how a dead or hung child is reported are the
Python kind's (grader.pyexercise.sandbox.Worker); what differs is what the child is lent (torch and
Triton besides NumPy), its script, and the call: one case of tensors at a time (`run_case`).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..pyexercise import values as pyvalues
from ..pyexercise.sandbox import LoadOutcome, Worker
from ..run.jail.launch import Cell, Jailed
from ..run.jail.syscalls import SyscallPolicy
from ..run.parent.sandbox import _CappedReader
from ..run.parent.supervisor import child_limits

_HERE = Path(__file__).resolve().parent
_PYEXERCISE = _HERE.parent / "pyexercise"
# torch and Triton import these at start-up; each is lent read-only, by name, as NumPy is.
PACKAGES = ("numpy", "torch", "triton", "typing_extensions")
OPTIONAL_PACKAGES = ("torchgen", "sympy", "mpmath", "filelock", "fsspec", "jinja2", "markupsafe", "networkx")
# torch starts a thread of its own at import; nothing else a launcher needs may start processes or sockets.
TRITON_SYSCALLS = SyscallPolicy(processes=False, threads=True, signals=False, unix_sockets=False)
# On a GPU: the driver's threads and UNIX socket (docs/sandbox.md, "A GPU in the jail"), and Triton's
# compiler, which runs ptxas and the C compiler as processes (and waits on them).
TRITON_GPU_SYSCALLS = SyscallPolicy(processes=True, threads=True, signals=True, unix_sockets=True)
# The CUDA build of torch loads the CUDA libraries of the nvidia-* wheels (a namespace package) at
# import, and in some versions cuda-python's bindings: lent where installed.
GPU_PACKAGES = ("nvidia", "cuda")
# A GPU child's start-up before the first case: torch's CUDA import, the context, Triton's build of
# its launcher helpers and the grader's own probe kernel. Added to the run limit, never the student's.
GPU_STARTUP_S = 30.0
# torch reserves more address space than NumPy (its allocator, its libraries): the floor of the cap.
MIN_ADDRESS_SPACE = 16 * 1024**3


def available() -> str | None:
    """Why the Triton CPU path cannot run here (a package missing), or None."""
    missing = [p for p in ("torch", "triton") if importlib.util.find_spec(p) is None]
    if missing:
        return (f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed for the grader's Python "
                "(pip install 'kernel-grader[triton]'; docs/triton-exercises.md)")
    return None


def lent_packages() -> tuple[str, ...]:
    """The packages the child is lent: the required ones and those of the optional ones installed
    (the CUDA libraries' packages too: the CUDA build of torch loads them at import, GPU or not)."""
    return PACKAGES + tuple(p for p in OPTIONAL_PACKAGES + GPU_PACKAGES if importlib.util.find_spec(p) is not None)


@dataclass(frozen=True)
class CaseOutcome:
    """One case: every tensor's whole storage after each launch, the watch's record, or an error."""

    ok: bool
    buffers: Sequence[Mapping[str, Any]] = ()
    trace: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""
    line: int | None = None
    fault: bool = False  # the grader's own environment failed, not the submission


class TritonWorker(Worker):
    """One jailed child running one Triton submission under the interpreter; run_case() its launcher."""

    def __init__(self, source: str, *, launcher: str, limits, hide: Sequence[Path] = (), audit: bool = True,
                 gpu: int | None = None, library: str | None = None):
        """`gpu`: the index of the GPU to run on (Triton's compiler, CUDA tensors), or None for the
        CPU (Triton's interpreter, every load and store watched). `library`: the exercise's harness.py
        source, for its library() baseline: given only to a child that runs staff code (the reference)."""
        self.launcher = launcher
        self.library = library
        self.fault = ""
        self.gpu = gpu
        if gpu is not None:
            limits = dataclasses.replace(limits, run_seconds=limits.run_seconds + GPU_STARTUP_S)
        super().__init__(source, functions=(launcher,), public_files={}, limits=limits, hide=hide, audit=audit)

    def _start(self) -> LoadOutcome:
        seconds = max(1.0, self.deadline - time.monotonic())
        gpu = self.gpu is not None
        limits = child_limits(self.limits, seconds, backend="gpu" if gpu else "emu")
        if limits.address_space_bytes is not None:
            limits = type(limits)(**{**limits.__dict__, "address_space_bytes": max(limits.address_space_bytes, MIN_ADDRESS_SPACE)})
        cell = Cell(packages=lent_packages(), hidden=self.hide, syscalls=TRITON_GPU_SYSCALLS if gpu else TRITON_SYSCALLS,
                    limits=limits, gpu=self.gpu)
        self.jail = jail = Jailed(cell, self.layers)
        jail.write("submission.py", self.source)
        jail.write("tritonprobe.py", (_HERE / "probe.py").read_text(encoding="utf-8"))
        jail.write("tritonworker.py", (_HERE / "child.py").read_text(encoding="utf-8"))
        jail.write("tritonwatch.py", (_HERE / "watch.py").read_text(encoding="utf-8"))
        jail.write("pyvalues.py", (_PYEXERCISE / "values.py").read_text(encoding="utf-8"))
        jail.write("pytripwire.py", (_PYEXERCISE / "tripwire.py").read_text(encoding="utf-8"))
        if self.library is not None:
            jail.write("tritonlibrary.py", self.library)
        env = {"PATH": "/usr/bin:/bin", "HOME": jail.folder_inside, "TMPDIR": jail.folder_inside, "LANG": "C.UTF-8",
               "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "TRITON_INTERPRET": "1", "TRITON_CACHE_DIR": f"{jail.folder_inside}/.triton",
               # Triton's own backends, found in its folder rather than by entry point (Triton 3.9's fast path).
               "TRITON_BACKENDS_IN_TREE": "1",
               "TORCHINDUCTOR_CACHE_DIR": f"{jail.folder_inside}/.inductor"}
        if gpu:
            # The compiled path; the GPU's index as the driver numbers its device nodes. A cache of
            # the jail's own: a shared one would let one grading leave a kernel for the next.
            del env["TRITON_INTERPRET"]
            env.update({"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": str(self.gpu),
                        "CUDA_MODULE_LOADING": "LAZY"})
        self.proc = jail.popen([jail.python, "-I", "-S", "-B", "tritonworker.py"], env=env)
        self.stderr = _CappedReader(self.proc.stderr, self.limits.output_bytes)
        import queue
        import threading

        self.replies = queue.Queue()
        threading.Thread(target=self._read_replies, args=(self.proc.stdout, self.replies), daemon=True).start()
        self._send({"submission": "submission.py", "launcher": self.launcher, "audit": self.audit,
                    "site": jail.packages_inside, "gpu": gpu,
                    "library": "tritonlibrary.py" if self.library is not None else None})
        first = self._reply()
        if first is None:
            return LoadOutcome(False, error=f"the submission did not load: {self.dead}")
        if first.get("fault"):
            self.fault = str(first["fault"])[:500]
            return LoadOutcome(False, error=self.fault)
        if not first.get("loaded"):
            return LoadOutcome(False, error=str(first.get("error", "it did not load"))[:500], line=_int(first.get("line")))
        return LoadOutcome(True, {self.launcher: bool(first.get("defined", {}).get(self.launcher))})

    def _unready(self) -> str:
        """"" where the launcher can be called, else why not (it did not load, its child is dead, or it
        does not define the launcher)."""
        if not self.loaded.ok or self.dead:
            return self.dead or self.loaded.error
        if not self.loaded.defined.get(self.launcher):
            return f"the submission does not define {self.launcher}()"
        return ""

    def _ask(self, params: Sequence[Mapping[str, Any]], fields: Mapping[str, Any], timeout: float | None = None) -> dict | None:
        """One request (the case's params, inputs encoded, and `fields`) and its reply; None where the
        child sent none or answered out of turn (self.dead says why, self.timed_out whether in time)."""
        self._next += 1
        sent = [dict(p, value=pyvalues.encode(p["value"])) if p.get("role") == "in" else dict(p) for p in params]
        self._send({"id": self._next, "params": sent, **fields})
        reply = self._reply(timeout)
        if reply is not None and reply.get("id") != self._next:
            self._kill("its process answered out of turn (did the submission write to the grader's channel?)")
            return None
        return reply

    def run_case(self, params: Sequence[Mapping[str, Any]], *, guard: int, repeat: int, timeout: float | None = None) -> CaseOutcome:
        """Launch the student's launcher on one case's tensors (made in the child, guarded and poisoned)."""
        fn = self.launcher
        unready = self._unready()
        if unready:
            return CaseOutcome(False, error=unready)
        if fn in self.hung:
            return CaseOutcome(False, error=f"not run: an earlier launch of {fn}() did not finish in time")
        reply = self._ask(params, {"guard": guard, "repeat": repeat}, timeout)
        if reply is None:
            if self.timed_out:
                self.hung.add(fn)
            return CaseOutcome(False, error=self.dead)
        trace = reply.get("trace") if isinstance(reply.get("trace"), dict) else {}
        if not reply.get("ok"):
            outcome = CaseOutcome(False, trace=trace, error=str(reply.get("error", "it failed"))[:500], line=_int(reply.get("line")))
            if reply.get("fatal"):  # the CUDA context is broken: the next case needs a fresh child
                self._kill(f"its CUDA context failed ({outcome.error[:200]})")
            return outcome
        try:
            buffers = [{k: pyvalues.decode(v, {}) for k, v in snap.items()} for snap in reply.get("buffers", [])]
        except (pyvalues.NotAValue, ValueError, TypeError, AttributeError) as exc:
            return CaseOutcome(False, error=f"its process sent back something the grader cannot read: {exc}")
        return CaseOutcome(True, buffers=buffers, trace=trace)


    def time_call(self, params: Sequence[Mapping[str, Any]], *, fn: str = "launcher", repeats: int, warmup: int = 2,
                  sleep_cycles: int = 0, sample: Sequence[int] = (), check: bool = False) -> "TimingOutcome":
        """Time the launcher (or, `fn` "library", harness.py's library()) at one size on this child's GPU
        (child.py's _time): the timed milliseconds and, with `check`, what each checked call left in its outputs."""
        if self.gpu is None:
            return TimingOutcome(False, error="timing needs a GPU child")
        unready = self._unready()
        if unready:
            return TimingOutcome(False, error=unready)
        reply = self._ask(params, {"time": {"fn": fn, "repeats": repeats, "warmup": warmup, "sleep_cycles": sleep_cycles,
                                            "sample": list(sample), "check": check}})
        if reply is None:
            return TimingOutcome(False, error=self.dead)
        if not reply.get("ok"):
            return TimingOutcome(False, error=str(reply.get("error", "it failed"))[:500], line=_int(reply.get("line")))
        ms = reply.get("ms")
        if not isinstance(ms, list) or len(ms) != repeats or not all(
                isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t < 1e7 for t in ms):
            return TimingOutcome(False, error="its process sent back timings the grader cannot read")
        calls = []
        for call in reply.get("calls", []) if check else []:
            try:
                unwritten = {str(k): int(v) for k, v in call["unwritten"].items()}
                values = {str(k): pyvalues.decode(v, {}) for k, v in call["sample"].items()}
            except (pyvalues.NotAValue, ValueError, TypeError, AttributeError, KeyError) as exc:
                return TimingOutcome(False, error=f"its process sent back something the grader cannot read: {exc}")
            calls.append({"unwritten": unwritten, "sample": values})
        if check and len(calls) != repeats + 1:
            return TimingOutcome(False, error="its process did not report every timed call's answer")
        return TimingOutcome(True, ms=tuple(float(t) for t in ms), calls=tuple(calls))


@dataclass(frozen=True)
class TimingOutcome:
    """One timing: the timed calls' milliseconds and (checked) what call 0 and each timed call left in
    the outputs: {"unwritten": {name: count}, "sample": {name: values}}; or an error."""

    ok: bool
    ms: tuple[float, ...] = ()
    calls: tuple[Mapping[str, Any], ...] = ()
    error: str = ""
    line: int | None = None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


__all__ = ["TritonWorker", "CaseOutcome", "TimingOutcome", "available", "lent_packages", "Jailed"]
