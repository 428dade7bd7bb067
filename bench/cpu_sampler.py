"""Where a machine's CPU seconds go while something runs: samples /proc and sums CPU time by kind of process.

    with CpuSampler() as sampler:
        ...                       # run the batch
    print("\n".join(sampler.table()))

Every `interval` seconds it reads utime + stime of every process and keeps the last value seen for
each pid, so a process that lives shorter than the interval is missed and one that exits counts
up to its last sample. Good enough to say which kind of child a grading's CPU goes to (Linux only).
"""
from __future__ import annotations

import os
import threading
from collections import defaultdict
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def label(cmdline: list[str], comm: str) -> str:
    """A short name for a kind of process: `python -m X` by its module (and backend, for the runner)."""
    if not cmdline:
        return comm
    base = Path(cmdline[0]).name
    if base.startswith("python") and "-m" in cmdline:
        at = cmdline.index("-m")
        module = cmdline[at + 1] if at + 1 < len(cmdline) else "?"
        rest = cmdline[at + 2:]
        if module == "grader.run.child.runner" and "--prestart" in rest:
            at = rest.index("--prestart")
            return f"python -m grader.run.child.runner --prestart {rest[at + 1] if at + 1 < len(rest) else '?'}"
        if module == "grader" and rest:
            return f"python -m grader {rest[0] if rest[0] in ('run', 'batch') else ''}".strip()
        if module == "grader.run.parent.fork_server" and comm and not comm.startswith("python"):
            return f"python -m {comm} (forked)"  # a child it forked names itself (grader.run.parent.fork_server)
        return f"python -m {module}"
    if base.startswith("python"):
        return f"python {Path(cmdline[1]).name if len(cmdline) > 1 else ''}".strip()
    return base or comm


class CpuSampler:
    """Samples every process's CPU time in a background thread between __enter__ and __exit__."""

    def __init__(self, interval: float = 0.2):
        self.interval = interval
        self._seen: dict[int, tuple[str, float]] = {}  # pid -> (label, CPU seconds at the last sample)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._own = os.getpid()

    def __enter__(self) -> "CpuSampler":
        self._sample()
        self._baseline = dict(self._seen)  # what existing processes had already used
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == self._own:
                continue
            pid = int(entry.name)
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                # comm may hold spaces or parentheses: the fields after it follow the last ')'.
                comm = stat[stat.index("(") + 1: stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2:].split()
                seconds = (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
                name = self._seen[pid][0] if pid in self._seen else label(
                    Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1], comm)
            except (OSError, ValueError, IndexError):
                continue  # gone between listing and reading
            self._seen[pid] = (name, seconds)

    def totals(self) -> dict[str, tuple[float, int]]:
        """CPU seconds and process count by label, less what processes had used before the start."""
        out: dict[str, list] = defaultdict(lambda: [0.0, 0])
        for pid, (name, seconds) in self._seen.items():
            before = self._baseline.get(pid, (name, 0.0))[1]
            if seconds - before > 0:
                out[name][0] += seconds - before
                out[name][1] += 1
        return {k: (v[0], v[1]) for k, v in out.items()}

    def table(self, per: int = 1, top: int = 15) -> list[str]:
        """The busiest kinds of process, with CPU seconds in all and per `per` (e.g. per grading)."""
        totals = self.totals()
        rows = sorted(totals.items(), key=lambda kv: -kv[1][0])
        total = sum(s for s, _ in totals.values())
        lines = [f"CPU seconds by kind of process (sampled every {self.interval} s): {total:.0f} s in all, "
                 f"{total / max(per, 1):.1f} s per grading"]
        lines += [f"    {name[:56]:<56} {seconds:8.1f} s  {seconds / max(per, 1):6.2f} per grading  ({n} processes)"
                  for name, (seconds, n) in rows[:top]]
        return lines
