"""Starting one jailed process: its folder, its view, its uid, the launcher, and bubblewrap or Landlock.

    cell = Cell(packages=("numpy",), hidden=(...), syscalls=SyscallPolicy(), limits=ResourceLimits(...))
    with Jailed(cell, layers) as jail:                  # a fresh folder; a uid leased where root
        jail.write("submission.py", text)
        proc = jail.popen([jail.python, "-I", "-S", "-B", "pyworker.py"], env=...)
        ...
    # closed: every process of the jail killed, the uid given back, the folder removed

The command's paths are those the process sees: `jail.folder_inside` (its working folder) and
`jail.packages_inside` (put it first on sys.path to import the lent packages).
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..parent.rlimits import ResourceLimits
from . import confine, syscalls, uids, view as views
from .layers import Layers

CONFINE_SCRIPT = Path(confine.__file__).resolve()
RW_RIGHTS = (1 << 13) - 1 | confine.FS_REFER | confine.FS_TRUNCATE  # everything inside its own folder
DEVICE_FILES = {"/dev/null": True, "/dev/zero": True, "/dev/full": True, "/dev/random": False, "/dev/urandom": False}


@dataclass(frozen=True)
class Cell:
    """What one jailed process is lent: packages to import, what it may do, its limits."""

    packages: tuple[str, ...] = ("numpy",)
    hidden: tuple[Path, ...] = ()  # never visible, even where a readable root holds them
    syscalls: syscalls.SyscallPolicy = field(default_factory=syscalls.SyscallPolicy)
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    processes_limit: int = 64  # RLIMIT_NPROC, where the process runs as a sandbox uid
    gpu: int | None = None  # the one GPU it may use (its device node and the driver's), by index


def gpu_devices(index: int) -> list[str]:
    """The device nodes a CUDA process needs for GPU `index`: the control and unified-memory nodes,
    that GPU's own node, and the mode-setting and capability nodes where the driver has them."""
    nodes = ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", f"/dev/nvidia{int(index)}", "/dev/nvidia-modeset"]
    return [n for n in nodes if os.path.exists(n)] + (["/dev/nvidia-caps"] if os.path.isdir("/dev/nvidia-caps") else [])


# What the driver reads about the machine: PCI devices, NUMA nodes and its own module's parameters.
GPU_SYSTEM_FOLDERS = ("/sys/devices", "/sys/bus", "/sys/module/nvidia", "/sys/module/nvidia_uvm")


class Unavailable(OSError):
    """The jail asked for cannot be had on this machine (the grader's limitation, never the student's)."""


class Jailed:
    """A jail's folder and uid, and the process started in it (see the module's docstring)."""

    def __init__(self, cell: Cell, layers: Layers):
        self.cell, self.layers = cell, layers
        self.lease = uids.lease() if layers.sandbox_uid else None
        self.root = Path(tempfile.mkdtemp(prefix="kg-jail-", dir=_base(self.lease is not None)))
        self.folder = self.root / "box"
        self.folder.mkdir()
        if cell.syscalls.processes and not layers.namespaces and self.lease is None:
            # Nothing could find a process that left the process group (setsid) to kill it when the
            # jail ends: no PID namespace, no uid of its own. Refuse rather than leave it running.
            remove(self.root)
            raise Unavailable("a jail whose process may start others needs namespaces (bubblewrap) or a sandbox "
                              "uid (the grader running as root); this machine gives neither")
        if self.lease is not None:
            os.chmod(self.root, 0o711)  # the sandbox uid may pass through to its folder, never list it
            os.chown(self.folder, self.lease.uid, self.lease.gid)
            os.chmod(self.folder, 0o700)
        self.view = views.view(cell.packages, cell.hidden)
        self.python = str(views.interpreter())
        if layers.namespaces:
            self.folder_inside, self.packages_inside = views.FOLDER_INSIDE, views.PACKAGES_INSIDE
        else:  # the lent packages as links in a folder of the jail's own (Landlock allows where they lead)
            self.folder_inside, self.packages_inside = str(self.folder), str(self.root / "site")
            site = self.root / "site"
            site.mkdir(mode=0o755)
            for path in self.view.packages:
                (site / path.name).symlink_to(path)
        self.proc: subprocess.Popen | None = None

    def write(self, name: str, text: str) -> None:
        """A file of the jail's folder, readable by the jailed process."""
        path = self.folder / name
        path.write_text(text, encoding="utf-8")
        if self.lease is not None:
            os.chown(path, self.lease.uid, self.lease.gid)

    def popen(self, argv: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen:
        """Start argv (paths as seen inside) in the jail, stdin, stdout and stderr on pipes."""
        seccomp_fd = syscalls.program_fd(self.cell.syscalls) if self.layers.seccomp else None
        try:
            if self.layers.namespaces:
                command = self._bwrap(argv, seccomp_fd)
                config = self._launcher_config(command, dict(env), seccomp_fd=None)
                config["keep_fds"] = [] if seccomp_fd is None else [seccomp_fd]  # bubblewrap reads the filter
            else:
                config = self._launcher_config(list(argv), dict(env), seccomp_fd=seccomp_fd)
                config["landlock"] = self._landlock() if self.layers.landlock_abi else None
                config["cwd"] = str(self.folder)
            launcher = [sys.executable, "-I", "-S", "-B", str(CONFINE_SCRIPT), _json(config)]
            self.proc = subprocess.Popen(launcher, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, cwd=str(self.folder), env={"LANG": "C.UTF-8"},
                                         start_new_session=True, pass_fds=() if seccomp_fd is None else (seccomp_fd,))
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        return self.proc

    def _launcher_config(self, argv: list[str], env: dict[str, str], seccomp_fd: int | None) -> dict:
        limits = self.cell.limits
        rlimits = {"core": 0}
        for name, value in (("cpu", limits.cpu_seconds), ("as", limits.address_space_bytes),
                            ("fsize", limits.file_size_bytes), ("nofile", limits.open_files)):
            if value is not None:
                rlimits[name] = int(value)
        if self.lease is not None:
            rlimits["nproc"] = self.cell.processes_limit
        return {"argv": argv, "env": env, "limits": rlimits, "seccomp_fd": seccomp_fd,
                "uid": self.lease.uid if self.lease else None, "gid": self.lease.gid if self.lease else None,
                # bubblewrap drops them itself, after it has mapped the user namespace's ids
                "drop_capabilities": self.lease is None and os.geteuid() == 0 and not self.layers.namespaces}

    def _bwrap(self, argv: Sequence[str], seccomp_fd: int | None) -> list[str]:
        bwrap = shutil.which("bwrap") or "bwrap"
        args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--cap-drop", "ALL",
                "--uid", "65534", "--gid", "65534", "--hostname", "sandbox"]
        args += views.bwrap_arguments(self.view)
        # Its /tmp is memory: as large as one file may be, so that filling it costs no more than a file.
        tmp_bytes = self.cell.limits.file_size_bytes or 64 * 1024**2
        args += ["--proc", "/proc", "--dev", "/dev", "--size", str(tmp_bytes), "--tmpfs", "/tmp",
                 "--bind", str(self.folder), views.FOLDER_INSIDE, "--chdir", views.FOLDER_INSIDE]
        if self.cell.gpu is not None:
            for node in gpu_devices(self.cell.gpu):
                args += ["--dev-bind", node, node]  # a plain bind is nodev: the driver could not be opened
            for folder in GPU_SYSTEM_FOLDERS:
                args += ["--ro-bind-try", folder, folder]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        return [*args, "--", *argv]

    def _landlock(self) -> dict:
        rules = views.landlock_rules(self.view)
        rules.append((str(self.root / "site"), confine.read_rights(True)))
        rules.append((str(self.folder), RW_RIGHTS))
        for device, writable in DEVICE_FILES.items():
            rights = confine.FS_READ_FILE | (confine.FS_WRITE_FILE if writable else 0)
            rules.append((device, rights))
        if self.cell.gpu is not None:
            gpu_rights = confine.FS_READ_FILE | confine.FS_WRITE_FILE | confine.FS_IOCTL_DEV | confine.FS_READ_DIR
            rules += [(node, gpu_rights) for node in gpu_devices(self.cell.gpu)]
            rules += [(folder, confine.read_rights(True)) for folder in GPU_SYSTEM_FOLDERS if os.path.isdir(folder)]
            # The driver reads its own /proc/driver/nvidia and the process's maps, and names its threads
            # (/proc/<pid>/task/<tid>/comm). Other processes' entries stay shut: Landlock lets a process
            # reach only the /proc entries of processes in its own domain.
            rules.append(("/proc", confine.FS_READ_FILE | confine.FS_WRITE_FILE | confine.FS_TRUNCATE | confine.FS_READ_DIR))
        return {"abi": self.layers.landlock_abi, "rules": rules}

    def kill(self) -> None:
        """SIGKILL the jail's process group and wait for its process: under bubblewrap, the PID
        namespace then takes everything else in the jail along."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()

    def close(self) -> None:
        """Kill whatever the jail still runs, give its uid back and remove its folder."""
        self.kill()
        if self.lease is not None:
            uids.kill_all(self.lease.uid)  # a process that left the group (setsid) still has the uid
            self.lease.release()
            self.lease = None
        remove(self.root)

    def __enter__(self) -> "Jailed":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _base(for_another_uid: bool) -> str:
    """Where a jail's folder is made: the temp folder, unless a sandbox uid could not pass through it
    to its own folder (a grading's TMPDIR is often a 0700 folder of the grader's), then /tmp."""
    base = tempfile.gettempdir()
    if not for_another_uid:
        return base
    for folder in [Path(base), *Path(base).parents]:
        try:
            if not folder.stat().st_mode & stat.S_IXOTH:
                return "/tmp"
        except OSError:
            return "/tmp"
    return base


def remove(folder: Path) -> None:
    """Remove a jail's folder whatever the student left in it: `rm -rf` (a tree thousands of folders
    deep makes shutil.rmtree recurse past Python's limit), then shutil for what is left. Never raises."""
    try:
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(folder)], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    except (OSError, subprocess.SubprocessError):
        pass
    if os.path.lexists(folder):
        try:
            shutil.rmtree(folder, ignore_errors=True)
        except RecursionError:
            pass


def _json(doc: dict) -> str:
    import json

    return json.dumps(doc, separators=(",", ":"))
