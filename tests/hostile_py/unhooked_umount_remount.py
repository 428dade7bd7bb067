# With the audit hook switched off: umount2 of /usr, /box, /proc, /kg-site, /tmp and /, a tmpfs mounted over its folder, bind and read-write remounts: it answers wrong (and says what worked) if any of them works.
@UNHOOK@
import os

@SOLUTION@

MNT_DETACH, MS_BIND, MS_REMOUNT, MS_RDONLY = 2, 4096, 32, 1


def _attempts():
    worked = []
    here = os.getcwd().encode()
    tries = [(f"umount2 {p}", lambda p=p: _libc.umount2(p.encode(), MNT_DETACH))
             for p in ("/usr", "/box", "/proc", "/kg-site", "/tmp", "/", here.decode())]
    tries += [
        ("mount tmpfs on its folder", lambda: _libc.mount(b"none", here, b"tmpfs", 0, None)),
        ("bind / onto its folder", lambda: _libc.mount(b"/", here, None, MS_BIND, None)),
        ("remount /usr read-write", lambda: _libc.mount(None, b"/usr", None, MS_REMOUNT | MS_BIND, None)),
        ("remount / read-write", lambda: _libc.mount(None, b"/", None, MS_REMOUNT, None)),
        ("mount proc", lambda: _libc.mount(b"proc", here, b"proc", 0, None)),
    ]
    for what, action in tries:
        result = action()
        print(f"{what}: {'WORKED' if result == 0 else 'refused: ' + _errno()}")
        if result == 0:
            worked.append(what)
    return worked


_right = {"matmul_tiled": matmul_tiled, "chain_time": chain_time}


def matmul_tiled(mem, T):
    return mem.A[:1] * 0 if _attempts() else _right["matmul_tiled"](mem, T)


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    return -1.0 if _attempts() else _right["chain_time"](n, k, fused, bandwidth, overhead)
