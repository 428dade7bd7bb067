# With the audit hook switched off: unshare(CLONE_NEWUSER|CLONE_NEWNS) to become root of a namespace of its own, setns into PID 1's, chroot and pivot_root out: it answers wrong (and says what worked) if any of them works.
@UNHOOK@
import os

@SOLUTION@

CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x00020000, 0x20000000, 0x40000000


def _attempts():
    worked = []
    tries = [
        ("unshare(NEWUSER|NEWNS)", lambda: _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)),
        ("unshare(NEWUSER)", lambda: _libc.unshare(CLONE_NEWUSER)),
        ("unshare(NEWNS)", lambda: _libc.unshare(CLONE_NEWNS)),
        ("unshare(NEWNET|NEWPID)", lambda: _libc.unshare(CLONE_NEWNET | CLONE_NEWPID)),
        ("chroot(.)", lambda: _libc.chroot(b".")),
        ("pivot_root(., .)", lambda: _libc.syscall(155, b".", b".")),
    ]
    for ns in ("mnt", "user", "pid", "net"):
        def enter(ns=ns):
            fd = os.open(f"/proc/1/ns/{ns}", os.O_RDONLY)
            try:
                return _libc.setns(fd, 0)
            finally:
                os.close(fd)
        tries.append((f"setns(/proc/1/ns/{ns})", enter))
    try:
        os.chroot(".")
        worked.append("os.chroot")
    except OSError as exc:
        print("os.chroot: refused:", exc)
    for what, action in tries:
        try:
            result = action()
        except OSError as exc:
            print(f"{what}: refused: {exc}")
            continue
        print(f"{what}: {'WORKED' if result == 0 else 'refused: ' + _errno()}")
        if result == 0:
            worked.append(what)
    if worked:
        try:  # what a namespace of its own would have bought: the host's files
            print(open("/etc/passwd").read())
        except OSError as exc:
            print("and still no /etc/passwd:", exc)
    return worked


_right = {"matmul_naive": matmul_naive, "crossover_n": crossover_n}


def matmul_naive(mem):
    return mem.A[:1] * 0 if _attempts() else _right["matmul_naive"](mem)


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    return 0 if _attempts() else _right["crossover_n"](overhead, bandwidth, bytes_per_element)
