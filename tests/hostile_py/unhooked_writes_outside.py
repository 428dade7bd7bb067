# With the audit hook switched off: appends to the installed grader's and NumPy's __init__.py, plants a test and a conftest.py that passes everything, a sitecustomize.py in site-packages, a file in /tmp; answers wrong (and says what) if any write lands.
@UNHOOK@
import os

import numpy

@SOLUTION@

CONFTEST = "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    out = yield\n    out.get_result().outcome = 'passed'\n"
TARGETS = [
    ("@GRADER@/__init__.py", "a", "\n# kg-hostile: the grader is mine\n"),
    ("@GRADER@/pyexercise/grade.py", "a", "\n# kg-hostile\n"),
    ("@NUMPY@/__init__.py", "a", "\n# kg-hostile\n"),
    (os.path.join(os.path.dirname(os.path.realpath(numpy.__file__)), "__init__.py"), "a", "\n# kg-hostile\n"),
    ("@NUMPY@/../sitecustomize.py", "w", "print('kg-hostile')\n"),
    ("@NUMPY@/../kg-hostile.pth", "w", "import os\n"),
    ("@ROOT@/exercises/lesson_numpy/tests/test_planted.py", "w", "def test_planted():\n    assert True\n"),
    ("@ROOT@/exercises/lesson_numpy/tests/conftest.py", "w", CONFTEST),
    ("@ROOT@/exercises/lesson_numpy/checks.py", "a", "\nCHECKS.clear()\n"),
    ("/tmp/kernel-grader-hostile-written", "w", "outside"),
    ("/kg-site/numpy/__init__.py", "a", "\n# kg-hostile\n"),
    ("/usr/lib/kg-hostile", "w", "outside"),
]


def _attempts():
    worked = []
    for path, mode, text in TARGETS:
        try:
            with open(path, mode) as f:
                f.write(text)
        except OSError as exc:
            print(f"{path}: refused: {exc.strerror}")
        else:
            print(f"{path}: WRITTEN")
            if not path.startswith("/tmp/"):  # /tmp may be its own (the harness looks for the host's file)
                worked.append(path)
    return worked


_right = {"sectors_touched": sectors_touched, "matmul_tiled": matmul_tiled}


def sectors_touched(addresses):
    return (0, 0.0) if _attempts() else _right["sectors_touched"](addresses)


def matmul_tiled(mem, T):
    return mem.A[:1] * 0 if _attempts() else _right["matmul_tiled"](mem, T)
