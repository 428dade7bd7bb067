"""Sharing one GPU between gradings without spoiling a timing: a readers-writer lock across processes.

Every process that uses a GPU (launches, ncu, a sanitizer, the hidden tests) holds it shared
while it has work on it (GpuDevice.using, around one launch: its uploads, kernels and read-back);
a timing holds it exclusively around its timed launches, so nothing of another grading runs on
that GPU while a kernel is timed, and a timing waits only for the launches in flight, not for
a grading's work on the CPU (its float64 reference, its comparison) nor for processes that are
starting, waiting or exiting. Writers go first: a timing that waits
stops new users from starting (a turnstile), so a busy batch cannot starve it. Built on flock(2):
a killed process releases its locks with it.

    gate  taken exclusively, briefly, by a user on its way in; held by a timing throughout
    use   shared by users, exclusive for a timing
"""
from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

VARIABLE = "KERNEL_GRADER_LOCKS"  # the folder for lock files (not TMPDIR: each grading has its own)


SHARE_WAIT = 10.0  # seconds a user waits for a timing before going on without the lock
_HELD: dict[str, "GpuLock"] = {}


def for_gpu(gpu_id: str) -> "GpuLock":
    """This process's one lock for a GPU: a second device object in the same process (the hidden
    tests open their own) must not hold a second share, or this process's timing would wait on itself."""
    if gpu_id not in _HELD:
        _HELD[gpu_id] = GpuLock(gpu_id)
    return _HELD[gpu_id]


class GpuLock:
    """This process's hold on one GPU's lock (identified by e.g. its PCI bus id)."""

    def __init__(self, gpu_id: str, folder: Path | None = None):
        folder = folder or lock_folder()
        safe = "".join(ch if ch.isalnum() else "_" for ch in gpu_id) or "gpu"
        self._gate = self._use = -1
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._gate = os.open(folder / f"{safe}.gate", os.O_RDWR | os.O_CREAT, 0o600)
            self._use = os.open(folder / f"{safe}.use", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            self._gate = self._use = -1  # no lock folder: grade unlocked rather than not at all
        self.mode = "none"
        self._gave_up = False  # the last share() waited in vain for a timing
        self.waited = 0.0  # seconds this process has spent waiting for the lock, in all

    def share(self, wait: float = SHARE_WAIT) -> bool:
        """Become a user for one task: wait while a timing holds or waits for the GPU. Whether the
        share was had: after `wait` seconds this process goes on unlocked, because a timing holds
        the GPU as long as the kernel it times runs, and a student's kernel that hangs there must not
        use up every other grading's time limit (on an H200 it stalled four gradings for a minute).
        Once it has waited in vain, the process does not wait again until a share is had: shares are
        per launch, and ten seconds per launch would add up to the whole time limit."""
        if self._use < 0 or self.mode != "none":
            return True
        began = time.monotonic()
        deadline = began + (0.0 if self._gave_up else wait)
        passed = _flock_until(self._gate, fcntl.LOCK_EX, deadline)
        try:
            shared = _flock_until(self._use, fcntl.LOCK_SH, deadline)
        finally:
            if passed:
                fcntl.flock(self._gate, fcntl.LOCK_UN)
            self.waited += time.monotonic() - began
        self.mode = "shared" if shared else "none"
        self._gave_up = not shared
        return shared

    def exclusive(self, wait: float = 30.0) -> bool:
        """Take the GPU alone for a timing: no new user starts, current users finish first. Gives up
        after `wait` seconds (another grading's kernel may hang until its own time limit), letting
        users in again; False then, and the timing runs beside them."""
        if self._use < 0 or self.mode == "exclusive":
            return True  # no lock folder (grade unlocked), or already alone
        fcntl.flock(self._use, fcntl.LOCK_UN)  # give up our own share first, or two timings deadlock
        self.mode = "none"
        began = time.monotonic()
        try:
            deadline = began + wait
            if not _flock_until(self._gate, fcntl.LOCK_EX, deadline):
                return False
            if not _flock_until(self._use, fcntl.LOCK_EX, deadline):
                fcntl.flock(self._gate, fcntl.LOCK_UN)
                return False
            self.mode = "exclusive"
            return True
        finally:
            self.waited += time.monotonic() - began

    def release(self) -> None:
        """Let go of the GPU entirely (the process ending does the same)."""
        if self._use < 0:
            return
        fcntl.flock(self._use, fcntl.LOCK_UN)
        fcntl.flock(self._gate, fcntl.LOCK_UN)
        self.mode = "none"


def lock_folder() -> Path:
    """$KERNEL_GRADER_LOCKS, else a per-user folder in /tmp (shared by every grading of this user)."""
    return Path(os.environ.get(VARIABLE) or f"/tmp/kernel-grader-locks-{os.getuid()}")


def _flock_until(fd: int, op: int, deadline: float) -> bool:
    """flock(fd, op) retried without blocking until `deadline`; whether it was taken."""
    while True:
        try:
            fcntl.flock(fd, op | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
