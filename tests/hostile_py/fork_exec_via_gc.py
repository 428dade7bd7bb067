# With the audit hook on: finds _posixsubprocess.fork_exec and subprocess through gc and NumPy's own modules (no import, no audit event for fork_exec) and starts a marked sleeper.
import gc
import os
import sys

@SOLUTION@


def _module(name):
    for obj in gc.get_objects():
        if type(obj).__name__ == "module" and obj.__name__ == name:
            return obj
    raise LookupError(f"{name} is not loaded anywhere")


def _fork_exec(argv):
    fork_exec = _module("_posixsubprocess").fork_exec
    read, write = os.pipe()
    # Python 3.11's signature: args, executables, close_fds, fds_to_keep, cwd, env, p2cread, p2cwrite, c2pread,
    # c2pwrite, errread, errwrite, errpipe_read, errpipe_write, restore_signals, setsid, pgid, gid, groups, uid,
    # umask, preexec_fn, allow_vfork
    return fork_exec([a.encode() for a in argv], [argv[0].encode()], True, (write,), None,
                     [b"KG_MARKER=@MARKER@"], -1, -1, -1, -1, -1, -1, read, write, False, True, -1, None, None, None,
                     -1, None, True)


def transpose_tiled(A, T):
    pid = _fork_exec(["/bin/sh", "-c", "touch /tmp/kernel-grader-hostile-forked; sleep 60", "@MARKER@"])
    raise RuntimeError(f"started process {pid}")


def matmul_tiled(mem, T):
    # subprocess as NumPy loaded it (the worker took it off sys.modules, not out of NumPy's hands)
    sub = sys.modules["numpy.testing._private.extbuild"].subprocess
    sub.Popen(["/bin/sh", "-c", "touch /tmp/kernel-grader-hostile-forked; sleep 60", "@MARKER@"])
    raise RuntimeError("started a process")


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    # the very function object subprocess keeps (from _posixsubprocess import fork_exec as _fork_exec)
    fork_exec = _module("subprocess")._fork_exec
    read, write = os.pipe()
    fork_exec([b"/bin/sleep", b"60", b"@MARKER@"], [b"/bin/sleep"], True, (write,), None, None, -1, -1, -1, -1, -1,
              -1, read, write, False, True, -1, None, None, None, -1, None, False)
    return 1250000
