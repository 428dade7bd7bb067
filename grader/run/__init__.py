"""The run layer: student code always runs in a child process, never in the grading process.

grader.run.parent holds what runs in the grading process (it starts, limits and supervises the
children: grader.run.parent.supervisor, grader.run.parent.sandbox, ...); grader.run.child holds what
runs inside a child (grader.run.child.runner, started as `python -m grader.run.child.runner`). The
modules directly in this package are the protocol both sides share: the tasks that cross the
boundary (grader.run.tasks) and the lock on a GPU that parents and children both take
(grader.run.gpu_lock). See docs/architecture.md.
"""
