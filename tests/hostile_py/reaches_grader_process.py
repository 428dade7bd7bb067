# With the audit hook switched off: reaches its parent (the grader, or the hidden tests' pytest, which hold the verdicts) through calls that name another process: prlimit64 (here only a harmless limit, one byte lower; a student would leave it no file size, no CPU second), setpriority, sched_setaffinity, sched_setscheduler, ioprio_set. It answers wrong (and says what) if one reaches a process outside its own PID namespace.
@UNHOOK@
import os
import resource

@SOLUTION@


def _attempts():
    worked = []
    parent = os.getppid()
    if parent == 1:  # its namespace's own init: inside the jail, nothing to gain
        return worked
    tries = []

    def lower_msgqueue():
        soft, hard = resource.prlimit(parent, resource.RLIMIT_MSGQUEUE)
        resource.prlimit(parent, resource.RLIMIT_MSGQUEUE, (soft - 1, hard))
        return resource.prlimit(parent, resource.RLIMIT_MSGQUEUE)

    tries.append(("prlimit64(parent, RLIMIT_MSGQUEUE)", lower_msgqueue))
    tries.append(("setpriority(parent, +1)",
                  lambda: os.setpriority(os.PRIO_PROCESS, parent, os.getpriority(os.PRIO_PROCESS, parent) + 1)))
    tries.append(("sched_setaffinity(parent)", lambda: os.sched_setaffinity(parent, os.sched_getaffinity(parent))))
    tries.append(("sched_setscheduler(parent, SCHED_OTHER)",
                  lambda: os.sched_setscheduler(parent, os.SCHED_OTHER, os.sched_param(0))))

    def ioprio():
        result = _libc.syscall(251, 1, parent, (2 << 13) | 4)  # ioprio_set(WHO_PROCESS, parent, best-effort 4)
        if result < 0:
            raise OSError(_ctypes.get_errno(), _errno())

    tries.append(("ioprio_set(parent)", ioprio))
    for what, action in tries:
        try:
            result = action()
        except OSError as exc:
            print(f"{what}: refused: {exc.strerror or exc}")
        else:
            print(f"{what}: WORKED {result if result is not None else ''}")
            worked.append(what)
    return worked


_right = {"chain_time": chain_time}


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    return -1.0 if _attempts() else _right["chain_time"](n, k, fused, bandwidth, overhead)
