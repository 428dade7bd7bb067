# With the audit hook switched off: changes what it cannot write: chmod, chown, utime and user xattrs of the course's reference and hidden tests and of a device file it is lent (/dev/full: the host's own node); it answers wrong (and says what) if any of them changes.
@UNHOOK@
import os

@SOLUTION@

TARGETS = ["@ROOT@/reference/lesson_numpy/solution.py", "@ROOT@/exercises/lesson_numpy/tests",
           "@ROOT@/exercises/lesson_numpy/tests/test_sectors_touched.py", "/dev/full", "/kg-site/numpy/__init__.py"]
ACTIONS = [("chmod", lambda p: os.chmod(p, 0o777 if os.path.isdir(p) else 0o660 if p.startswith("/dev") else 0o666)),
           ("utime", lambda p: os.utime(p, (0, 0))),
           ("chown", lambda p: os.chown(p, -1, os.getgid())),
           ("setxattr", lambda p: os.setxattr(p, "user.kg-hostile", b"x"))]


def _attempts():
    worked = []
    for path in TARGETS:
        for what, action in ACTIONS:
            try:
                action(path)
            except OSError as exc:
                print(f"{what} {path}: refused: {exc.strerror}")
            else:
                print(f"{what} {path}: DONE")
                worked.append(f"{what} {path}")
    return worked


_right = {"crossover_n": crossover_n}


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    # Every target is outside its folder: a wrong answer says that one of them changed.
    return 0 if _attempts() else _right["crossover_n"](overhead, bandwidth, bytes_per_element)
