# With the audit hook switched off: TCP to the live listener 127.0.0.1:@PORT@, UDP sendto, AF_UNIX to a listening socket by path and by abstract name and to /run's system sockets, AF_NETLINK, AF_PACKET, socketpair, and socket(2) through ctypes.
@UNHOOK@
import socket

@SOLUTION@

HELLO = b"@MARKER@ hello from the sandbox"


def sectors_touched(addresses):
    socket.create_connection(("127.0.0.1", @PORT@), timeout=2).sendall(HELLO)
    return 4, 1.0


def bank_conflict_degree(tile_width, access):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(HELLO, ("127.0.0.1", @UDP_PORT@))
    return 1


def matmul_naive(mem):
    for address in ("@UNIX_SOCKET@", "\0@ABSTRACT_SOCKET@", "/run/dbus/system_bus_socket",
                    "/run/systemd/private", "/var/run/docker.sock"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect(address)
            s.sendall(HELLO)
        except FileNotFoundError:
            continue
    return mem.A @ mem.B


def matmul_tiled(mem, T):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE: the host's interfaces
    s.bind((0, 0))
    return mem.A @ mem.B


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300)
    return 0.0


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    a, b = socket.socketpair()
    a.sendall(b"1250000")
    return int(b.recv(16))


def transpose_tiled(A, T):
    fd = _libc.socket(2, 1, 0)
    if fd < 0:
        raise PermissionError(f"socket(2): {_errno()}")
    return A.T, 0, 0
