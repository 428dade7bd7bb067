"""Code that runs inside a child process, beside the student's code: the runner that executes tasks,
the launches and timings it makes, each launch's time budget, and the hidden tests' pytest plugin.

Nothing here is imported by the grading process to do its own work; the parent (grader.run.parent)
starts these as `python -m grader.run.child.runner` or `pytest -p grader.run.child.hidden_tests`.
"""
