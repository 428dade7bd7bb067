# At import: deletes the worker's own files (pyworker.py, pyvalues.py, checks.py, lesson.py, its own source), rewrites pyworker.py for the next start, and tries its folder's parent; then computes right: the score must not change.
import os

for _name in ("pyvalues.py", "checks.py", "lesson.py", "submission.py"):
    try:
        os.remove(_name)
    except Exception as exc:
        print("could not remove", _name, exc)
try:
    with open("pyworker.py", "w") as _f:  # the next child of this grading starts from here?
        _f.write("import sys\nprint('{\"loaded\": true, \"defined\": {}}')\nsys.exit(0)\n")
except OSError as exc:
    print("could not rewrite pyworker.py", exc)
for _path in ("..", "../site", "../.."):
    try:
        os.rmdir(_path)
    except Exception as exc:
        print("could not remove", _path, exc)

@SOLUTION@
