"""The grading child's side of a batch's profiler (grader.run.parent.profile_broker): ask for ncu counts through
a spool folder, wait for the answer, or give up and profile alone.

`grade batch` on a GPU sets KERNEL_GRADER_PROFILER for its grading children to the spool folder of
their GPU's broker. A child that needs ncu counts writes its request there (atomically, under a name
that sorts by time), and the broker writes the answer to the file the request names. A child that
gets no answer in time, or finds no live broker, withdraws its request and profiles itself as a lone
`grade` does: a broker that fails costs time, never a verdict.
"""
from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Mapping

from .supervisor import write_atomically

VARIABLE = "KERNEL_GRADER_PROFILER"
HEARTBEAT = "alive"          # the broker touches spool/alive every HEARTBEAT_S seconds while it runs
HEARTBEAT_S = 1.0
STALE_S = 15.0               # a heartbeat older than this: no broker is serving the spool
REQUEST_SUFFIX = ".request"
POLL_S = 0.02


def spool_folder(env: Mapping[str, str] | None = None) -> Path | None:
    """The spool folder of this grading's profiler, or None (a lone `grade`: profile in-process)."""
    value = (os.environ if env is None else env).get(VARIABLE, "")
    return Path(value) if value else None


def broker_alive(spool: Path, stale: float = STALE_S) -> bool:
    """Whether a broker has shown life in the spool lately."""
    try:
        return time.time() - (spool / HEARTBEAT).stat().st_mtime < stale
    except OSError:
        return False


def ask(spool: Path, request: Mapping[str, Any], answer: Path, wait: float) -> dict[str, Any] | None:
    """Hand `request` to the broker and wait at most `wait` seconds for its answer (a dict), or None:
    no live broker, no answer in time, or the broker said to profile alone. The request is withdrawn
    when the wait ends unanswered (a broker that claimed it already writes an answer nobody reads)."""
    if not broker_alive(spool):
        return None
    answer.unlink(missing_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}{REQUEST_SUFFIX}"
    path = spool / name
    try:
        write_atomically(path, json.dumps({**request, "answer": str(answer)}))
    except OSError:
        return None
    deadline = time.monotonic() + wait
    checked = time.monotonic()
    while not answer.exists():
        now = time.monotonic()
        if now > deadline:
            path.unlink(missing_ok=True)
            return None
        if now - checked > HEARTBEAT_S:
            checked = now
            if not broker_alive(spool):
                path.unlink(missing_ok=True)
                return None
        time.sleep(POLL_S)
    try:
        reply = json.loads(answer.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return None if not isinstance(reply, dict) or reply.get("alone") else reply
