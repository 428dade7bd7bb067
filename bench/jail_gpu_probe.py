"""Which jail settings let a jailed process initialise CUDA on this machine (run on a GPU machine).

    python3 bench/jail_gpu_probe.py

For each wall the machine allows: cuInit's status in a jailed Python given GPU 0, under the seccomp
policies that differ by one permission, and (Landlock) with one more folder granted at a time.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.run.jail import confine  # noqa: E402
from grader.run.jail import layers as jail_layers  # noqa: E402
from grader.run.jail import launch  # noqa: E402
from grader.run.jail.syscalls import SyscallPolicy  # noqa: E402

CODE = "import ctypes; print(ctypes.CDLL('libcuda.so.1').cuInit(0))"
READ = confine.FS_READ_FILE | confine.FS_READ_DIR | confine.FS_EXECUTE
ALL = confine.fs_rights(7)
POLICIES = {
    "threads": SyscallPolicy(threads=True),
    "threads+processes": SyscallPolicy(threads=True, processes=True),
    "threads+signals": SyscallPolicy(threads=True, signals=True),
    "threads+unix": SyscallPolicy(threads=True, unix_sockets=True),
}
EXTRA = {"none": [], "/proc all": [("/proc", ALL)], "/sys all": [("/sys", ALL)], "/run all": [("/run", ALL)], "/dev listed": [("/dev", confine.FS_READ_DIR)], "/dev/shm rw": [("/dev/shm", ALL)],
         "/ read": [("/", READ)], "/ read, /tmp rw": [("/", READ), ("/tmp", ALL)], "/ rw": [("/", ALL)],
         "/dev rw+ioctl": [("/dev", ALL)], "/etc read": [("/etc", READ)], "/var rw": [("/var", ALL)]}


def attempt(walls, policy, extra=()) -> str:
    original = launch.Jailed._landlock

    def landlock(self):
        doc = original(self)
        doc["rules"] = doc["rules"] + list(extra)
        return doc

    launch.Jailed._landlock = landlock
    try:
        with launch.Jailed(launch.Cell(packages=(), gpu=0, syscalls=policy), walls) as jail:
            proc = jail.popen([jail.python, "-I", "-S", "-B", "-c", CODE], env={"PATH": "/usr/bin:/bin"})
            out, err = proc.communicate(timeout=60)
    finally:
        launch.Jailed._landlock = original
    return (out.decode().strip() + " " + err.decode()[-160:].strip()).strip()


def main() -> None:
    for no_ns in (False, True):
        walls = jail_layers._probe(no_ns)
        if walls.namespaces == no_ns:
            continue
        for name, policy in POLICIES.items():
            print(f"{walls.describe():50} seccomp {name:18}: cuInit -> {attempt(walls, policy)}")
        if not walls.namespaces:
            bare = replace(walls, seccomp=False)
            for name, extra in EXTRA.items():
                print(f"{bare.describe():50} + {name:18}: cuInit -> {attempt(bare, POLICIES['threads+unix'], extra)}")


if __name__ == "__main__":
    main()
