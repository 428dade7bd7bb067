"""Process tags: how the grader finds every process a grading or a batch started, to end them.

Every child carries a tag in its environment (TAG_VARIABLE: its grading's, or its batch's), which
whatever it starts inherits, in whatever session. kill_tagged() ends all processes that carry one.
The sandbox (its children), the reaper (when the grader is killed outright) and the batch (its slots
and gradings) all kill by tag; this module is below all three.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

TAG_VARIABLE = "KERNEL_GRADER_TAG"  # inherited by every process a child starts, so leftovers can be found


def kill_tagged(tag: str, *, prefix: bool = False, started_by: float | None = None) -> int:
    """SIGKILL every process of this user whose environment carries the tag (Linux /proc); how many.
    With started_by (seconds since boot, as /proc/uptime counts them), only processes started by
    then: a later run that reuses the tag (a batch on the same folder) is not touched."""
    needle = f"{TAG_VARIABLE}={tag}".encode()
    killed = 0
    proc = Path("/proc")
    if not proc.is_dir():
        return 0
    me = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
            if started_by is not None and _started(entry) > started_by:
                continue
        except (OSError, ValueError, IndexError):
            continue
        for item in environ.split(b"\0"):
            if item == needle or (prefix and item.startswith(needle)):
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed += 1
                except OSError:
                    pass
                break
    return killed


def uptime() -> float:
    """Seconds since boot (/proc/uptime): the clock of a process's start time."""
    return float(Path("/proc/uptime").read_text().split()[0])


def _started(entry: Path) -> float:
    """When the process of /proc/PID `entry` started, in seconds since boot (field 22 of its stat,
    counted after the command name, which may hold spaces and parentheses)."""
    fields = entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")

