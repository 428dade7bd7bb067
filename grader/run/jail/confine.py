"""The launcher that confines a student's process, then becomes it (execve).

Run as `python -I -S -B confine.py CONFIG-JSON` by grader.run.jail.launch, never imported by a
student's process. It uses the standard library only (and ctypes for the kernel's calls), so it
needs nothing from the grader's package at run time. In order:

1. resource limits (CPU, address space, file size, open files, processes, no core dumps);
2. where the grader is root: the Landlock rules' folders are opened while still root, then the
   supplementary groups are cleared and the real, effective and saved ids become the sandbox's;
   where it stays root (the sandbox uid cannot read the interpreter), every capability is dropped
   from the bounding, permitted, effective and inheritable sets instead;
3. no_new_privs (nothing exec'd later gains privileges: no setuid binary, no file capabilities);
4. a Landlock domain (where the config has one): reading only the folders named, writing only the
   sandbox's own folder, no TCP, and (ABI 6) no signals and no abstract UNIX sockets outside it;
5. the seccomp filter (a BPF program the grader built with libseccomp, handed over as a file
   descriptor);
6. execve of the command with the environment given, and nothing else open but 0, 1 and 2.

Any step that fails stops here with exit status 96 and a line on stderr: the command never runs
less confined than asked.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys

FAILED = 96

# Landlock (include/uapi/linux/landlock.h); the syscall numbers are the same on every architecture.
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV  # the rights a file rule may hold

PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 24, 22, 2
CAPABILITY_VERSION_3 = 0x20080522


class Refused(Exception):
    """A confinement step the kernel refused."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(result: int, what: str) -> int:
    if result < 0:
        raise Refused(f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers; 0 where it has none (or refuses it)."""
    result = _libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(0, int(result))


def fs_rights(abi: int) -> int:
    """Every filesystem right the ABI knows, so that all of them are handled (denied unless granted)."""
    rights = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def read_rights(is_dir: bool) -> int:
    """What a read-only rule grants: run and read files, and list folders."""
    return FS_EXECUTE | FS_READ_FILE | (FS_READ_DIR if is_dir else 0)


class LandlockRules:
    """A Landlock ruleset being built: folders opened (O_PATH) before any privilege is dropped."""

    def __init__(self, abi: int, *, scope: bool = True):
        self.abi = abi
        self.handled = fs_rights(abi)
        net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
        scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 and scope else 0
        attr = _RulesetAttr(self.handled, net, scoped)
        size = 24 if abi >= 6 else 16 if abi >= 4 else 8  # the struct grew with the ABI
        self.fd = _check(_libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                                       ctypes.c_uint32(0)), "landlock_create_ruleset")

    def allow(self, path: str, rights: int) -> bool:
        """Grant `rights` beneath `path` (a file: only the rights a file can hold). False if the path is
        gone (nothing to grant)."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            is_dir = _is_dir(fd)
            granted = rights & self.handled & (rights if is_dir else FILE_RIGHTS)
            rule = _PathBeneath(granted, fd)
            _check(_libc.syscall(SYS_ADD_RULE, self.fd, RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)),
                   f"landlock_add_rule {path}")
        finally:
            os.close(fd)
        return True

    def restrict_self(self) -> None:
        _check(_libc.syscall(SYS_RESTRICT_SELF, self.fd, ctypes.c_uint32(0)), "landlock_restrict_self")
        os.close(self.fd)


def _is_dir(fd: int) -> bool:
    import stat

    return stat.S_ISDIR(os.fstat(fd).st_mode)


def set_limits(limits: dict) -> None:
    import resource

    for name, value in limits.items():
        kind = getattr(resource, f"RLIMIT_{name.upper()}")
        soft, hard = resource.getrlimit(kind)
        hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
        resource.setrlimit(kind, (min(value, hard), hard))


def drop_capabilities() -> None:
    """Empty the bounding set, then the permitted, effective and inheritable sets (a root that stays
    uid 0 keeps none of root's powers)."""
    try:
        last = int(open("/proc/sys/kernel/cap_last_cap").read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: no such cap
            raise Refused(f"PR_CAPBSET_DROP {cap}: {os.strerror(ctypes.get_errno())}")
    header = _CapHeader(CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def switch_user(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise Refused("the user and group ids did not change")


def load_seccomp(fd: int) -> None:
    program = os.read(fd, 1 << 20)
    os.close(fd)
    if not program or len(program) % 8:
        raise Refused("the seccomp program is empty or torn")
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


def confine(config: dict) -> None:
    """Apply every step the config asks for to this process (see the module's docstring)."""
    if config.get("limits"):
        set_limits(config["limits"])
    ruleset = None
    landlock = config.get("landlock")
    if landlock:
        ruleset = LandlockRules(int(landlock["abi"]), scope=bool(landlock.get("scope", True)))
        for path, rights in landlock["rules"]:
            ruleset.allow(path, int(rights))
    if config.get("uid") is not None:
        switch_user(int(config["uid"]), int(config["gid"]))
    elif config.get("drop_capabilities"):
        drop_capabilities()
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if ruleset is not None:
        ruleset.restrict_self()
    if config.get("cwd"):
        os.chdir(config["cwd"])
    if config.get("seccomp_fd") is not None:
        load_seccomp(int(config["seccomp_fd"]))


def main(argv: list[str]) -> int:
    try:
        config = json.loads(argv[1])
        confine(config)
        keep = sorted(int(fd) for fd in config.get("keep_fds", ()))
        low = 3
        for fd in keep:  # everything else closes, so nothing of the grader's reaches the command
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 1 << 16)
        os.execve(config["argv"][0], config["argv"], config["env"])
    except (Refused, OSError, ValueError, KeyError, IndexError) as exc:
        sys.stderr.write(f"kernel-grader sandbox: {exc}\n")
        sys.stderr.flush()
        return FAILED
    return FAILED  # not reached: execve does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv))
