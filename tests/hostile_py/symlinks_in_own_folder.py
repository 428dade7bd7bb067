# With the audit hook switched off: symlinks in its own folder to /, the reference, the hidden tests, NumPy and /proc/1/root, read and written through; a FIFO and a symlink loop where the grader might look; answers wrong (and says what) if any of it reaches outside.
@UNHOOK@
import os

@SOLUTION@

LINKS = {"root": "/", "reference": "@ROOT@/reference/lesson_numpy", "tests": "@ROOT@/exercises/lesson_numpy/tests",
         "numpy": "@NUMPY@", "pid1": "/proc/1/root", "parent": "..", "grader": "@GRADER@"}
READS = ["root/etc/passwd", "reference/solution.py", "tests/test_chain_time.py", "pid1/etc/passwd",
         "parent/parent/etc/passwd", "grader/__init__.py"]
WRITES = ["numpy/__init__.py", "tests/test_planted.py", "root/tmp/kernel-grader-hostile-written", "grader/__init__.py"]


def _attempts():
    worked = []
    for name, target in LINKS.items():
        if not os.path.lexists(name):
            os.symlink(target, name)
    for path in READS:
        try:
            print(path, "READ:", open(path).read()[:0] + "(its text)")
            worked.append(path)
        except OSError as exc:
            print(path, "refused:", exc.strerror)
    for path in WRITES:
        try:
            with open(path, "a") as f:
                f.write("\n# kg-hostile\n")
            if "/tmp/" not in path:  # /tmp may be its own (the harness looks for the host's file)
                worked.append(path)
            print(path, "WRITTEN")
        except OSError as exc:
            print(path, "refused:", exc.strerror)
    # What the grader's clean-up might follow or block on: a FIFO, a loop, a link named like its own files.
    for name, make in (("fifo", lambda: os.mkfifo("fifo")), ("loop", lambda: os.symlink("loop", "loop")),
                       ("pyworker.py.bak", lambda: os.symlink("/", "pyworker.py.bak"))):
        if not os.path.lexists(name):
            make()
    return worked


_right = {"chain_time": chain_time, "bank_conflict_degree": bank_conflict_degree}


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    return -1.0 if _attempts() else _right["chain_time"](n, k, fused, bandwidth, overhead)


def bank_conflict_degree(tile_width, access):
    return 0 if _attempts() else _right["bank_conflict_degree"](tile_width, access)
