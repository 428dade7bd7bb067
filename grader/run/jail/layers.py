"""Which walls this machine lets a jail have, found by trying them (once per process tree).

In order of preference, each tried for real (a jailed Python started that must read a lent package):

1. namespaces: bubblewrap (`bwrap`) gives the process a root of its own, new PID, network, IPC and
   UTS namespaces, no capabilities, no_new_privs, and dies with its parent;
2. Landlock, where namespaces are refused (Docker's default seccomp profile refuses them, and a
   Gradescope image may run under it): the kernel lets the process read only the folders named,
   write only its own, open no TCP connection and (ABI 6) signal nobody outside;

and with either: the seccomp filter (grader/run/jail/syscalls.py), and, where the grader is root, a
sandbox uid of its own (grader/run/jail/uids.py) where that uid can run the interpreter (else it
stays uid 0 with every capability dropped). Where neither wall can be had (not Linux, an old
kernel), `Layers.kernel_wall` is False and the description says so plainly: the child then has a
sandbox uid (where root) and the seccomp filter (where libseccomp is) at most, and otherwise only
its folder, the audit hook and its rlimits.

KERNEL_GRADER_NO_NAMESPACES=1 skips bubblewrap, to grade as a container that refuses namespaces would.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass
from functools import lru_cache

NO_NAMESPACES_VARIABLE = "KERNEL_GRADER_NO_NAMESPACES"
CACHE_VARIABLE = "KERNEL_GRADER_JAIL_LAYERS"  # the probe's answer, inherited by the grader's own children
PROBE_SECONDS = 20


@dataclass(frozen=True)
class Layers:
    """The walls a jailed process gets here."""

    namespaces: bool = False
    landlock_abi: int = 0  # used where there are no namespaces
    seccomp: bool = False
    sandbox_uid: bool = False
    root: bool = False
    missing: tuple[str, ...] = ()  # why a layer could not be had, in words

    @property
    def kernel_wall(self) -> bool:
        """Whether the kernel keeps the process to its view of the files (namespaces or Landlock)."""
        return self.namespaces or self.landlock_abi > 0

    def describe(self) -> str:
        """One line: the layers, e.g. "namespaces (bubblewrap), seccomp, a sandbox uid"."""
        if not self.kernel_wall:
            kept = ["a sandbox uid"] if self.sandbox_uid else []
            kept += ["seccomp"] if self.seccomp else []
            if kept:
                return (f"{' and '.join(kept)} only: no namespaces or Landlock, so it can read what every user of "
                        "this machine may read")
            return "no kernel sandbox: only its folder, an audit hook and rlimits"
        parts = ["namespaces (bubblewrap)" if self.namespaces else f"Landlock (ABI {self.landlock_abi})"]
        if self.seccomp:
            parts.append("seccomp")
        if self.sandbox_uid:
            parts.append("a sandbox uid")
        elif self.root and self.namespaces:
            parts.append("no capabilities (uid 0 outside its namespace)")
        elif self.root:
            parts.append("uid 0 without capabilities")
        return ", ".join(parts)


def current() -> Layers:
    """The layers a jail gets here: found once, then read from the environment by the grader's children."""
    wanted_no_ns = bool(os.environ.get(NO_NAMESPACES_VARIABLE))
    cached = os.environ.get(CACHE_VARIABLE)
    if cached:
        try:
            doc = json.loads(cached)
            if doc.pop("no_namespaces") == wanted_no_ns:
                doc["missing"] = tuple(doc.get("missing", ()))
                return Layers(**doc)
        except (ValueError, KeyError, TypeError):
            pass
    layers = _probe(wanted_no_ns)
    os.environ[CACHE_VARIABLE] = json.dumps({**asdict(layers), "no_namespaces": wanted_no_ns})
    return layers


@lru_cache(maxsize=2)
def _probe(no_namespaces: bool) -> Layers:
    from . import confine, syscalls

    if not sys.platform.startswith("linux"):
        return Layers(missing=(f"{sys.platform} has no namespaces, Landlock or seccomp",))
    missing: list[str] = []
    root = os.geteuid() == 0
    seccomp_problem = syscalls.available()
    if seccomp_problem:
        missing.append(seccomp_problem)
    abi = confine.landlock_abi()
    if not abi:
        missing.append("no Landlock: this kernel has none, or it is not enabled")
    unreachable = _not_for_others() if root else ""
    if unreachable:
        missing.append(f"no sandbox uid: {unreachable}")
    uid_choices = (True, False) if root and not unreachable else (False,)
    candidates: list[Layers] = []
    if no_namespaces:
        missing.append(f"namespaces not tried (${NO_NAMESPACES_VARIABLE} is set)")
    elif not shutil.which("bwrap"):
        missing.append("no bubblewrap: install it (Debian and Ubuntu: apt-get install bubblewrap)")
    else:
        candidates += [Layers(True, abi, not seccomp_problem, uid, root) for uid in uid_choices]
    if abi:
        candidates += [Layers(False, abi, not seccomp_problem, uid, root) for uid in uid_choices]
    if root and not unreachable:  # last: a uid of its own without either wall (it reads what every user may)
        candidates.append(Layers(False, 0, not seccomp_problem, True, root))
    for layers in candidates:
        problem = _try(layers)
        if not problem:
            return Layers(layers.namespaces, layers.landlock_abi, layers.seccomp, layers.sandbox_uid, root, tuple(missing))
        missing.append(problem)
    return Layers(False, 0, not seccomp_problem, False, root, tuple(missing))


def _not_for_others() -> str:
    """"" where another uid may run the interpreter and read the lent packages, as far as the mode
    bits of every folder on the way say (a root-only /root/.pyenv: no); else what stops it. Saves
    starting a jail that could only fail."""
    import stat
    from pathlib import Path

    from . import view

    for target in (view.interpreter(), *view.package_paths(("numpy",))):
        for folder in [target, *target.parents]:
            try:
                mode = folder.stat().st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH or not stat.S_ISDIR(mode) and not mode & stat.S_IROTH:
                return f"{folder} is not open to other users, so another uid could not run {Path(target).name}"
    return ""


def _try(layers: Layers) -> str:
    """"" if a jailed Python starts with these layers and can read a lent package, else what failed."""
    import subprocess

    from .launch import Cell, Jailed

    what = ("bubblewrap" if layers.namespaces else "Landlock" if layers.landlock_abi else "no wall") + (
        " as a sandbox uid" if layers.sandbox_uid else "")
    check = "import os, sys; open(os.path.join(sys.argv[1], 'numpy', '__init__.py')).close(); print('ok')"
    try:
        with Jailed(Cell(), layers) as jail:
            if layers.sandbox_uid and jail.lease is None:
                return f"{what}: no sandbox uid is free"
            proc = jail.popen([jail.python, "-I", "-S", "-B", "-c", check, jail.packages_inside],
                              env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
            out, err = proc.communicate(timeout=PROBE_SECONDS)
    except (OSError, subprocess.SubprocessError, ModuleNotFoundError) as exc:
        return f"{what}: {type(exc).__name__}: {exc}"
    if proc.returncode == 0 and out.strip() == b"ok":
        return ""
    said = err.decode("utf-8", "replace").strip().splitlines()
    return f"{what} failed (status {proc.returncode}){': ' + said[-1][:200] if said else ''}"
