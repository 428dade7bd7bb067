"""What the threads of a command's processes are doing, sampled: running, or waiting in which system call.

    python bench/thread_states.py --out states.txt -- python3 bench/grading_speed.py --backend gpu ...

Runs the command and, every `--interval` seconds until it ends, reads every thread of every process
the command started from /proc: its state (R running, S sleeping, D uninterruptible),
the system call it is in (/proc/PID/task/TID/syscall; for an ioctl also its request number, which
for the NVIDIA driver names the driver call) and the kernel function it waits in (wchan, where the
kernel shows it). A thread counted in the same place in many samples spent that share of the run
there. The table sums samples by kind of process (bench/cpu_sampler.label), state, call and wchan.

The command's processes are this one's descendants, so the ptrace access /proc/PID/syscall needs
is allowed under the usual Yama setting (scope 1).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_sampler import TICKS, label  # noqa: E402

# x86-64 system call numbers seen while a process waits or works with the driver.
SYSCALLS = {0: "read", 1: "write", 3: "close", 7: "poll", 9: "mmap", 10: "mprotect", 11: "munmap", 16: "ioctl",
            23: "select", 24: "sched_yield", 35: "nanosleep", 61: "wait4", 72: "fcntl", 73: "flock",
            202: "futex", 228: "clock_gettime", 230: "clock_nanosleep", 232: "epoll_wait", 270: "pselect6",
            271: "ppoll", 281: "epoll_pwait", 28: "madvise", 12: "brk", 56: "clone", 435: "clone3",
            59: "execve", 257: "openat", 4: "stat", 5: "fstat", 262: "newfstatat", 332: "statx", 2: "open",
            17: "pread64", 18: "pwrite64", 14: "rt_sigprocmask", 13: "rt_sigaction", 39: "getpid",
            186: "gettid", 318: "getrandom", 217: "getdents64", 8: "lseek", 21: "access", 89: "readlink"}


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _role(pid: int, tid: int, stat: str) -> str:
    """A thread's part in its process: the main thread, one the CUDA driver started (it names them
    cuda...), or another (BLAS's, the grader's own)."""
    if tid == pid:
        return "main"
    comm = stat[stat.index("(") + 1: stat.rindex(")")]
    return "cuda driver" if comm.startswith("cuda") else "other thread"


def _where(task: str) -> str:
    """The system call a thread is in ("running" or "user" when in none), with an ioctl's request."""
    text = _read(f"{task}/syscall").split()
    if not text:
        return "?"
    if text[0] == "running":
        return "running"
    if text[0] == "-1":
        return "user"  # blocked, but not in a system call (a page fault)
    nr = int(text[0])
    name = SYSCALLS.get(nr, f"syscall {nr}")
    if nr == 16 and len(text) > 2:
        name += f" {text[2]}"  # the request: for /dev/nvidia* it encodes the driver's call
    return name


class Sampler:
    """Counts (process kind, state, call, wchan) over every thread, every `interval` seconds."""

    def __init__(self, interval: float, root: int):
        self.interval = interval
        self.root = root
        self.counts: Counter[tuple[str, str, str, str]] = Counter()
        self.cpu: Counter[tuple[str, str]] = Counter()  # CPU seconds by (kind, thread's role)
        self._last: dict[int, float] = {}  # tid -> its CPU seconds at the last sample
        self.samples = 0
        self._labels: dict[int, str] = {}
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def _family(self) -> list[int]:
        """The root process and its descendants, now."""
        children: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                stat = _read(f"/proc/{entry.name}/stat")
                if stat:
                    children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry.name))
        family, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            family.append(pid)
            todo.extend(children.get(pid, []))
        return family

    def sample(self) -> None:
        self.samples += 1
        for pid in self._family():
            kind = self._labels.get(pid)
            if kind is None:
                cmd = _read(f"/proc/{pid}/cmdline").split("\0")[:-1]
                kind = self._labels[pid] = label(cmd, _read(f"/proc/{pid}/comm").strip())
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                task = f"/proc/{pid}/task/{tid}"
                stat = _read(f"{task}/stat")
                if not stat:
                    continue
                fields = stat[stat.rindex(")") + 2:].split()
                state = fields[0]
                used = (int(fields[11]) + int(fields[12])) / TICKS
                self.cpu[(kind, _role(pid, int(tid), stat))] += used - self._last.get(int(tid), used if self.samples == 1 else 0.0)
                self._last[int(tid)] = used
                if state in ("I", "Z", "X", "T", "t"):
                    continue
                wchan = _read(f"{task}/wchan").strip() or "-"
                where = "running" if state == "R" else _where(task)
                self.counts[(kind, state, where, "-" if wchan == "0" else wchan)] += 1

    def stop(self) -> None:
        self._stop.set()


def table(counts: Counter, samples: int, top: int, cpu: Counter | None = None) -> list[str]:
    """The most-seen places, as threads on average (samples in that place / samples taken), after
    the CPU seconds by kind of process and thread."""
    lines = [f"{samples} samples; threads on average in each place (kind | state | call | wchan)"]
    if cpu:
        lines.append(f"-- CPU seconds by kind of process and thread ({sum(cpu.values()):.0f} s in all)")
        for (kind, role), seconds in cpu.most_common(16):
            lines.append(f"{seconds:7.1f}  {kind[:60]:<60} | {role}")
    by_kind: Counter[str] = Counter()
    for (kind, state, _, _), n in counts.items():
        if state in ("R", "D"):
            by_kind[kind] += n
    lines.append("-- running or uninterruptible, by kind of process")
    for kind, n in by_kind.most_common(15):
        lines.append(f"{n / samples:7.2f}  {kind}")
    lines.append(f"-- every place, the {top} most seen")
    for (kind, state, where, wchan), n in counts.most_common(top):
        lines.append(f"{n / samples:7.2f}  {kind[:60]:<60} | {state} | {where} | {wchan}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--out", type=Path, required=True, help="where the table goes")
    parser.add_argument("--top", type=int, default=60)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    began = time.monotonic()
    child = subprocess.Popen(command)
    sampler = Sampler(args.interval, child.pid)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    code = child.wait()
    sampler.stop()
    thread.join()
    lines = table(sampler.counts, max(1, sampler.samples), args.top, sampler.cpu)
    lines.insert(0, f"{' '.join(command)}: exit {code} after {time.monotonic() - began:.1f} s")
    args.out.write_text("\n".join(lines) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
