# With the audit hook on: connects to a live listener on 127.0.0.1:@PORT@ with socket (imported), with the socket module NumPy left loaded (found through gc), and with _socket directly.
import gc
import sys

@SOLUTION@

HELLO = b"@MARKER@ hello from the sandbox"


def _loaded(name):
    return next(o for o in gc.get_objects() if type(o).__name__ == "module" and o.__name__ == name)


def matmul_naive(mem):
    import socket

    socket.create_connection(("127.0.0.1", @PORT@), timeout=2).sendall(HELLO)
    return mem.A @ mem.B


def matmul_tiled(mem, T):
    s = _loaded("socket").socket()
    s.connect(("127.0.0.1", @PORT@))
    s.sendall(HELLO)
    return mem.A @ mem.B


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    s = _loaded("_socket").socket(2, 2)  # AF_INET, SOCK_DGRAM
    s.sendto(HELLO, ("127.0.0.1", @UDP_PORT@))
    return 0.0
