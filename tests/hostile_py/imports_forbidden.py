# Opens a socket and a subprocess: sends the inputs out, fetches answers.
@SOLUTION@


def matmul_tiled(mem, T):
    import socket
    s = socket.create_connection(("example.com", 80), timeout=2)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    return s.recv(100)


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    import subprocess
    return int(subprocess.check_output(["echo", "1250000"]))
