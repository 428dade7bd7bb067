"""The resource limits a child of the grader runs under (CPU time, address space, file size, open files).

Set in the child itself before it runs anything: by the sandbox's children between fork and exec,
by a fork server's children right after their fork, by the warm GPU workers. A module of its own so
that each of them can use it without importing the others.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class ResourceLimits:
    """Limits set in the child before it executes (where the platform allows)."""

    cpu_seconds: int | None = None
    address_space_bytes: int | None = None  # leave None for CUDA processes: they reserve huge ranges
    file_size_bytes: int | None = 512 * 1024**2
    open_files: int | None = 1024


def limit_setter(limits: ResourceLimits) -> Callable[[], None]:
    """The function that applies `limits` to the calling process: a child runs it between fork and
    exec (subprocess's preexec_fn), a fork server's child right after its fork. A limit the platform
    refuses is skipped."""
    def apply() -> None:  # runs in the child, before it runs anything of its own
        import resource

        def cap(kind: int, value: int | None) -> None:
            if value is None:
                return
            try:
                soft, hard = resource.getrlimit(kind)
                new_hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
                resource.setrlimit(kind, (min(value, new_hard), new_hard))
            except (ValueError, OSError):
                pass  # a limit the platform refuses is skipped, never fatal

        cap(resource.RLIMIT_CORE, 0)
        cap(resource.RLIMIT_CPU, limits.cpu_seconds)
        cap(resource.RLIMIT_AS, limits.address_space_bytes)
        cap(resource.RLIMIT_FSIZE, limits.file_size_bytes)
        cap(resource.RLIMIT_NOFILE, limits.open_files)

    return apply
