"""The seccomp filter of a student's process: which system calls it may not make.

Built with libseccomp (through pyseccomp, its ctypes binding) and exported as the BPF program that
bubblewrap's `--seccomp FD` or the launcher (grader/run/jail/confine.py) loads. The filter allows
by default and refuses, with an error the process can see, what grading never needs and what would
open a way out or to other processes:

- other processes: ptrace, process_vm_readv/writev, pidfd_getfd, kcmp;
- the file-system view and the kernel: mount and the new mount API, umount2, pivot_root, chroot,
  unshare, setns, namespace flags on clone, keyrings, bpf, perf_event_open, userfaultfd, io_uring,
  modules, kexec, reboot, swap, accounting, clocks, open_by_handle_at;
- files' modes, owners, times and extended attributes (chmod, chown, utime, setxattr and kin);
- System V and POSIX IPC objects (they outlive the process where there is no IPC namespace);
- another process's limits, priority, CPUs or memory (prlimit64 and kin with a pid other than 0);
- the network: socket() of every family (the UNIX family too, unless `unix_sockets`);
- the terminal: ioctl TIOCSTI and TIOCLINUX (typing into a terminal);
- signals to other processes: kill, tkill, tgkill, rt_(tg)sigqueueinfo, pidfd_send_signal
  (unless `signals`: a process that may start others may signal them);
- new processes (fork, vfork, clone without CLONE_THREAD) unless `processes`, and new threads
  unless `threads`. clone3 answers ENOSYS, so that the C library falls back to clone, whose flags
  the filter can read.

Calls of another architecture's ABI (int 0x80 on x86_64) kill the process (libseccomp's default).
"""
from __future__ import annotations

import errno
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache

CLONE_THREAD = 0x00010000
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
AF_UNIX = 1

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "syslog", "iopl", "ioperm", "open_by_handle_at",
    "name_to_handle_at", "lookup_dcookie", "vhangup", "uselib",
)
SIGNALS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal", "pidfd_open")
# Changing a file's mode, owner, times or extended attributes: neither namespaces nor Landlock cover
# them, and a jail that is uid 0 outside (no sandbox uid) owns every root-owned file it can name (a
# device node bound into its /dev, the course's files under Landlock).
ATTRIBUTES = ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime", "utimes",
              "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
              "fremovexattr", "setxattrat", "removexattrat")
# Kernel objects that outlive the process where there is no IPC namespace (Landlock): a channel between
# gradings, and litter on the machine.
IPC = ("shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl",
       "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr")
# Calls that act on another process when given its pid (0 is the caller): limits, priorities, CPUs.
OTHER_PROCESS = (("prlimit64", 0), ("setpriority", 1), ("ioprio_set", 1), ("sched_setaffinity", 0),
                 ("sched_setparam", 0), ("sched_setscheduler", 0), ("sched_setattr", 0), ("migrate_pages", 0),
                 ("move_pages", 0), ("process_madvise", 0), ("process_mrelease", 0))


@dataclass(frozen=True)
class SyscallPolicy:
    """What a student's process may do beyond computing: start processes or threads, signal, sockets."""

    processes: bool = False
    threads: bool = False
    signals: bool = False
    unix_sockets: bool = False


class Unavailable(Exception):
    """libseccomp (or its binding) is not on this machine: no filter can be built."""


def available() -> str:
    """"" where a filter can be built here, else why not."""
    try:
        _seccomp()
    except Unavailable as exc:
        return str(exc)
    return ""


def _seccomp():
    try:
        import pyseccomp
    except (ImportError, OSError, AttributeError, TypeError) as exc:  # the binding loads libseccomp at import
        raise Unavailable(f"no seccomp: libseccomp or its binding pyseccomp is missing ({type(exc).__name__}: {exc})") from None
    return pyseccomp


@lru_cache(maxsize=8)
def program(policy: SyscallPolicy) -> bytes:
    """The filter's BPF program (raw struct sock_filter records), built once per policy."""
    sc = _seccomp()
    refuse = sc.ERRNO(errno.EPERM)
    f = sc.SyscallFilter(sc.ALLOW)

    def rule(action: int, name: str, *args) -> None:
        try:
            f.add_rule(action, name, *args)
        except (OSError, ValueError, RuntimeError):
            pass  # a call this architecture does not have (fork on aarch64): nothing to refuse

    for name in (*DENIED, *ATTRIBUTES, *IPC):
        rule(refuse, name)
    for name, arg in OTHER_PROCESS:
        if name == "prlimit64" or not policy.threads:  # threads (a GPU driver's) may tune each other by tid
            rule(refuse, name, sc.Arg(arg, sc.NE, 0))
    rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in NAMESPACE_FLAGS:
        rule(refuse, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    if not policy.processes:
        for name in ("fork", "vfork"):
            rule(refuse, name)
        rule(refuse, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    if not policy.threads:
        rule(refuse, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, CLONE_THREAD))
    if not policy.signals:
        for name in SIGNALS:
            rule(refuse, name)
    if policy.unix_sockets:
        rule(sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.NE, AF_UNIX))
    else:
        rule(sc.ERRNO(errno.EACCES), "socket")
    for request in (TIOCSTI, TIOCLINUX):
        rule(refuse, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def program_fd(policy: SyscallPolicy) -> int:
    """A file descriptor (a memfd, read from its start) holding the policy's program; the caller
    passes it to the child and closes it."""
    data = program(policy)
    fd = os.memfd_create("kernel-grader-seccomp", os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
