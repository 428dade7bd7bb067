"""Handing a file from one process to another through the file system: the writer makes it appear
whole or not at all, the reader polls until it is there.

Below the supervisor and the GPU worker (both hand jobs and tickets to waiting children this way),
so that neither imports the other for it.
"""
from __future__ import annotations

import os
import time
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Write a file a waiting child polls for (wait_for_file): it appears whole or not at all."""
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    os.replace(part, path)


def wait_for_file(path: Path, seconds: float | None = None) -> bool:
    """In a child: block until the parent creates `path` (a job, or word that the GPU is free); whether
    it came within `seconds` (no bound: the parent's time limit ends the wait if it never comes)."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while not path.exists():
        if deadline is not None and time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True
