"""The jail: a student's host code (the Python and Triton kinds) runs walled in by the kernel.

`layers.current()` finds which walls this machine allows (bubblewrap's namespaces, else Landlock;
seccomp; a sandbox uid where the grader is root); `launch.Jailed` starts one process in them.
Nothing here trusts the interpreter: the audit hook of the Python kind's worker is a tripwire for
clear messages, not a wall.
"""
