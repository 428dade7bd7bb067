# With the audit hook switched off: raw system calls through ctypes (fork, vfork, clone, clone3, unshare, ptrace, kill, io_uring, bpf, socket, ...), then the 32-bit ABI (int 0x80) and x32 numbers the filter might not know.
@UNHOOK@
import os

@SOLUTION@

SLEEPER = [b"/bin/sleep", b"60"]
SIGCHLD, CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID = 17, 0x10000000, 0x00020000, 0x20000000
CALLS = [  # (what, number, arguments): each must fail
    ("fork", 57, ()), ("vfork", 58, ()), ("clone(SIGCHLD)", 56, (SIGCHLD, 0, 0, 0, 0)),
    ("clone(NEWUSER|NEWPID)", 56, (CLONE_NEWUSER | CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0)),
    ("unshare(NEWUSER|NEWNS)", 272, (CLONE_NEWUSER | CLONE_NEWNS,)), ("setns", 308, (0, 0)),
    ("kill(parent, 0)", 62, ("ppid", 0)), ("tkill(parent, 0)", 200, ("ppid", 0)), ("tgkill(parent, 0)", 234, ("ppid", "ppid", 0)),
    ("pidfd_open(parent)", 434, ("ppid", 0)), ("ptrace(SEIZE parent)", 101, (0x4206, "ppid", 0, 0)),
    ("process_vm_readv(parent)", 310, ("ppid", 0, 0, 0, 0, 0)), ("socket(AF_INET)", 41, (2, 1, 0)),
    ("socket(AF_UNIX)", 41, (1, 1, 0)), ("io_uring_setup", 425, (1, "params")), ("bpf", 321, (0, 0, 0)),
    ("userfaultfd", 323, (0,)), ("perf_event_open", 298, ("params", 0, -1, -1, 0)), ("keyctl", 250, (0, 0, 0, 0, 0)),
    ("mount tmpfs", 165, (b"none", b".", b"tmpfs", 0, 0)), ("chroot", 161, (b".",)), ("pivot_root", 155, (b".", b".")),
]


def _call(number, args):
    params = _ctypes.create_string_buffer(256)
    real = []
    for a in args:
        if a == "ppid":
            real.append(_ctypes.c_long(os.getppid()))
        elif a == "params":
            real.append(params)
        elif isinstance(a, bytes):
            real.append(_ctypes.c_char_p(a))
        else:
            real.append(_ctypes.c_long(a))
    result = _libc.syscall(_ctypes.c_long(number), *real)
    if result == 0 and number in (57, 58, 56, 435):
        os.execve(SLEEPER[0], [*SLEEPER, b"@MARKER@"], {"KG_MARKER": "@MARKER@"})  # the child
    return result


def _probe():
    worked = []
    for what, number, args in CALLS:
        result = _call(number, args)
        print(f"{what}: {'WORKED (' + str(result) + ')' if result >= 0 else 'refused: ' + _errno()}")
        if result >= 0:
            worked.append(what)
    # clone3 with a struct clone_args: the filter answers ENOSYS so that the C library falls back to clone
    args = (_ctypes.c_uint64 * 11)(0, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, 0)
    result = _libc.syscall(_ctypes.c_long(435), args, _ctypes.c_long(88))
    if result == 0:
        os.execve(SLEEPER[0], [*SLEEPER, b"@MARKER@"], {"KG_MARKER": "@MARKER@"})
    print(f"clone3: {'WORKED' if result >= 0 else 'refused: ' + _errno()}")
    if result >= 0:
        worked.append("clone3")
    return worked


_right = {"sectors_touched": sectors_touched, "bank_conflict_degree": bank_conflict_degree}


def sectors_touched(addresses):
    worked = _probe()
    return (0, 0.0) if worked else _right["sectors_touched"](addresses)   # a wrong answer is how it says it escaped


def _machine_code(code):
    size = 4096
    _libc.mmap.restype = _ctypes.c_void_p
    page = _libc.mmap(None, size, 7, 0x22, -1, 0)  # PROT_READ|WRITE|EXEC, MAP_PRIVATE|ANONYMOUS
    if page in (None, _ctypes.c_void_p(-1).value):
        raise OSError(f"mmap: {_errno()}")
    _ctypes.memmove(page, code, len(code))
    return _ctypes.CFUNCTYPE(_ctypes.c_long)(page)


def matmul_naive(mem):
    # fork through the i386 ABI: mov eax, 2; int 0x80; ret
    result = _machine_code(b"\xb8\x02\x00\x00\x00\xcd\x80\xc3")()
    if result == 0:
        os.execve(SLEEPER[0], [*SLEEPER, b"@MARKER@"], {"KG_MARKER": "@MARKER@"})
    raise RuntimeError(f"int 0x80 fork returned {result}")


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    # fork through an x32 number: mov eax, 0x40000039; syscall; ret
    result = _machine_code(b"\xb8\x39\x00\x00\x40\x0f\x05\xc3")()
    if result == 0:
        os.execve(SLEEPER[0], [*SLEEPER, b"@MARKER@"], {"KG_MARKER": "@MARKER@"})
    raise RuntimeError(f"x32 fork returned {result}")
