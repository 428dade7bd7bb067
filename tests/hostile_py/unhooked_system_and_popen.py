# With the audit hook switched off: os.system, os.popen, subprocess and libc's system() start a shell that leaves a sentinel file and a marked sleeper behind.
@UNHOOK@
import os
import subprocess

@SOLUTION@

SHELL = "touch /tmp/kernel-grader-hostile-shell; KG_MARKER=@MARKER@ sleep 60 &"
_right = {"sectors_touched": sectors_touched, "bank_conflict_degree": bank_conflict_degree,
          "matmul_naive": matmul_naive, "crossover_n": crossover_n, "chain_time": chain_time}


def sectors_touched(addresses):
    status = os.system(SHELL)
    if status != 0:
        raise RuntimeError(f"os.system returned {status}: no shell ran")
    return _right["sectors_touched"](addresses)


def bank_conflict_degree(tile_width, access):
    pipe = os.popen(SHELL + " echo popen")
    pipe.read()
    if pipe.close() is not None:
        raise RuntimeError("os.popen: no shell ran")
    return _right["bank_conflict_degree"](tile_width, access)


def matmul_naive(mem):
    subprocess.run(["sh", "-c", SHELL], check=True, timeout=5)
    return _right["matmul_naive"](mem)


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    # The answer from a process of its own (which could have fetched it from anywhere).
    return int(subprocess.check_output(["/bin/sh", "-c", "echo 1250000; " + SHELL, "@MARKER@"]))


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    status = _libc.system(SHELL.encode())
    if status != 0:
        raise RuntimeError(f"libc system() returned {status}: no shell ran")
    return _right["chain_time"](n, k, fused, bandwidth, overhead)
