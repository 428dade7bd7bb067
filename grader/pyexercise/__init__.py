"""The Python exercise kind (spec.toml with `kind = "python"`): the student writes functions, not a kernel.

The grading process (grader.pyexercise.grade) starts a walled-off child (grader.pyexercise.sandbox,
the parent's side) that runs grader/pyexercise/child_worker.py (the child's side, copied alone into an
empty folder and never importing the grader); values cross between them as JSON
(grader.pyexercise.values). The hidden tests run in a pytest child through the plugin
grader.pyexercise.hidden_tests.
"""
