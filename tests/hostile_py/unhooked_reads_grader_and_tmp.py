# With the audit hook switched off: the installed grader package (@GRADER@), the virtual environment's site-packages found from NumPy's real path, and /tmp's other folders (kg-jail-*, kg-pygrade-*) where other gradings' submissions, jobs and results live.
@UNHOOK@
import glob
import os

import numpy

@SOLUTION@


def sectors_touched(addresses):
    return open("@GRADER@/pyexercise/grade.py").read(), 0.0


def bank_conflict_degree(tile_width, access):
    site = os.path.dirname(os.path.dirname(os.path.realpath(numpy.__file__)))
    names = os.listdir(site)
    print(names)
    finder = [n for n in names if n.startswith("__editable__") and n.endswith(".py")]
    return open(os.path.join(site, finder[0])).read() if finder else names


def matmul_tiled(mem, T):
    other = []
    for pattern in ("/tmp/kg-jail-*/box/*.py", "/tmp/kg-pygrade-*/*", "/tmp/kg-jail-*/*", "/tmp/*"):
        other += glob.glob(pattern)
    print(other)
    texts = [open(p).read() for p in other if os.path.isfile(p) and "submission" in p or p.endswith(".jsonl")]
    return texts or os.listdir("/tmp")


def transpose_tiled(A, T):
    # A sibling jail, reached from its own folder's parent.
    parent = os.path.dirname(os.getcwd())
    return os.listdir(os.path.dirname(parent)), os.listdir(parent), 0
