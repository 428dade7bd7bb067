"""Sandbox user ids: where the grader is root, each jailed process runs as a uid of its own.

A uid is leased by holding an exclusive lock on its file in a folder only root can enter, so that
two gradings at once (a batch's slots) never share one: a student cannot signal, trace or read the
files of another's process, RLIMIT_NPROC counts one sandbox's processes alone (the kernel does not
count processes for uid 0), and whatever a sandbox left running can be killed by its uid.
KERNEL_GRADER_SANDBOX_UIDS=FIRST:COUNT moves the range (the default is far above the ranges that
distributions, systemd and container user namespaces hand out).
"""
from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

RANGE_VARIABLE = "KERNEL_GRADER_SANDBOX_UIDS"
DEFAULT_FIRST, DEFAULT_COUNT = 2_000_000_000, 4096


class Lease:
    """One leased uid (its gid is the same number); release() gives it back."""

    def __init__(self, uid: int, fd: int):
        self.uid = self.gid = uid
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def uid_range() -> range:
    text = os.environ.get(RANGE_VARIABLE, "")
    try:
        first, count = (int(x) for x in text.split(":"))
        if first > 0 and count > 0:
            return range(first, first + count)
    except ValueError:
        pass
    return range(DEFAULT_FIRST, DEFAULT_FIRST + DEFAULT_COUNT)


def _lock_folder() -> Path | None:
    # One folder for the whole machine, never $TMPDIR: each grading of a batch has a TMPDIR of its own,
    # and two gradings looking in two folders could lease one uid.
    folder = Path("/tmp") / "kernel-grader-sandbox-uids"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    # Somebody else's folder (or one others may write) could hand two sandboxes the same uid.
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077:
        return None
    return folder


def lease() -> Lease | None:
    """A free sandbox uid, or None where the grader is not root (or none is free)."""
    if os.geteuid() != 0:
        return None
    folder = _lock_folder()
    if folder is None:
        return None
    span = uid_range()
    start = os.getpid() % len(span)  # spread concurrent gradings over the range, fewer collisions to skip
    for i in range(len(span)):
        uid = span[(start + i) % len(span)]
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return Lease(uid, fd)
    return None


def kill_all(uid: int) -> None:
    """SIGKILL every process of `uid`: `kill -9 -1` run as that uid kills every process it may signal."""
    import subprocess

    try:
        subprocess.run(["kill", "-9", "-1"], user=uid, group=uid, extra_groups=[], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10, close_fds=True)
    except (OSError, subprocess.SubprocessError):
        pass  # no kill command: nothing ran as this uid that the jail's own end did not take down
