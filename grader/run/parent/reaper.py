"""The reaper: what kills a grader's children when the grader itself is killed outright.

A grading's children run in sessions of their own and keep their time limits in the grading
process; they carry its tag (tags.TAG_VARIABLE), and the grading kills whatever carries it when
it ends or is interrupted. A SIGKILL (the OOM killer, a harness's hard stop) leaves no time for
that. So the first tagged child a top-level grader starts also starts this process
(`python -m grader.run.parent.reaper`), in a session of its own, reading the grader's tags from a
pipe. The grader holds the only write end: when it exits, however it exits, the pipe closes, and
the reaper kills every process that carries one of the tags, then exits itself.

Grader side: watch(tag). Under a batch (a tag already in this process's environment) the batch's
own reaper covers every child, so none is started.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

from .tags import TAG_VARIABLE, kill_tagged, uptime

_lock = threading.Lock()
_pipe: list[IO[bytes] | None] = [None]  # the write end, in the grader
_watched: set[str] = set()


def watch(tag: str, *, prefix: bool = False) -> None:
    """Have the reaper kill `tag`'s processes (with prefix, every tag that starts with it: a batch's
    slots, workers and gradings) if this process dies before they do. A no-op for a tag already
    watched, and under a batch. A reaper that cannot be started costs only this cover."""
    line = ("P " if prefix else "T ") + tag
    if not tag or line in _watched or os.environ.get(TAG_VARIABLE):
        return
    with _lock:
        for _ in range(2):  # a reaper found dead is replaced once
            try:
                if _pipe[0] is None:
                    _pipe[0] = _start()
                _pipe[0].write(line.encode("utf-8", "surrogateescape") + b"\n")
                _pipe[0].flush()
                _watched.add(line)
                return
            except OSError:
                _pipe[0] = None


def _start() -> IO[bytes]:
    src_root = str(Path(__file__).resolve().parents[3])  # the reaper imports this same grader
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "grader.run.parent.reaper"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    assert proc.stdin is not None
    return proc.stdin


def main() -> None:
    """Collect tags until the grader's end of the pipe closes, then kill whatever carries them."""
    lines = set()
    for line in sys.stdin.buffer:
        lines.add(line.rstrip(b"\n").decode("utf-8", "surrogateescape"))
    try:
        # Only what was started before the grader ended: a new batch on the same folder reuses its tags.
        ended = uptime()
    except (OSError, ValueError, IndexError):
        ended = None
    for line in lines:
        kind, _, tag = line.partition(" ")
        if tag:
            kill_tagged(tag, prefix=kind == "P", started_by=ended)


if __name__ == "__main__":
    main()
