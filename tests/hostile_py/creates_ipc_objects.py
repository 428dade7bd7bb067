# With the audit hook switched off: System V shared memory, message queues and semaphores, and a POSIX message queue, created under a key of its own: kernel objects that outlive the process and that other gradings on the machine could open (a channel between students), unless the jail has an IPC namespace of its own. Computes right: the score must not change.
@UNHOOK@
import os
import zlib

@SOLUTION@

KEY = zlib.crc32(b"@MARKER@") & 0x7FFFFFFF
IPC_CREAT = 0o1000


def _create():
    for what, call in (("shmget", lambda: _libc.shmget(KEY, 1 << 20, IPC_CREAT | 0o666)),
                       ("msgget", lambda: _libc.msgget(KEY, IPC_CREAT | 0o666)),
                       ("semget", lambda: _libc.semget(KEY, 1, IPC_CREAT | 0o666)),
                       ("mq_open", lambda: _libc.mq_open(b"/@MARKER@", 0o100 | 2, 0o666, None))):
        result = call()
        print(f"{what}: {'created ' + str(result) if result >= 0 else 'refused: ' + _errno()}")
    # What is already there: the objects of other processes on the machine (ids are small numbers).
    for ident in range(8):
        address = _libc.shmat(ident, None, 0o10000)  # SHM_RDONLY
        if address not in (-1, 0xFFFFFFFFFFFFFFFF, None):
            print(f"shmat({ident}): attached")


_create()
