"""What a jailed process may read: the interpreter and its libraries, the packages it is lent, nothing else.

One description serves both walls. With namespaces it becomes bubblewrap's mounts: a new root holding
read-only binds of the system's library folders and the interpreter's prefix, each site-packages
folder and every hidden path under them covered by an empty read-only tmpfs, the lent packages bound
at PACKAGES_INSIDE. Without namespaces it becomes Landlock rules: the same roots granted for reading,
except that a folder holding something hidden is not granted whole: its other entries are, one by
one (Landlock can only grant, never subtract).
"""
from __future__ import annotations

import importlib.util
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Sequence

from .confine import FS_READ_DIR, read_rights

SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf")
FOLDER_INSIDE = "/box"  # the jailed process's own folder, where namespaces give it a root of its own
PACKAGES_INSIDE = "/kg-site"  # where the lent packages are bound (namespaces); on sys.path first


@dataclass(frozen=True)
class View:
    """The readable roots, what must never be seen under them, and the packages lent by name."""

    roots: tuple[Path, ...]
    files: tuple[Path, ...]
    site_folders: tuple[Path, ...]  # covered, but their names may be listed (the import system lists its folders)
    hidden: tuple[Path, ...]  # covered, names and all
    packages: tuple[Path, ...]  # folders (or files) of the lent packages, each exposed under its own name

    def covered(self) -> tuple[Path, ...]:
        """Everything under a root that the jailed process must not read."""
        return tuple(dict.fromkeys((*self.site_folders, *self.hidden)))


def interpreter() -> Path:
    """The Python binary a jailed process runs: the base interpreter, not a virtual environment's
    link to it (the environment's site-packages, which may hold the grader, is never lent)."""
    real = Path(os.path.realpath(sys.executable))
    base = Path(sys.base_prefix).resolve()
    if base in real.parents:
        return real
    for name in (f"python{sys.version_info.major}.{sys.version_info.minor}", f"python{sys.version_info.major}"):
        candidate = base / "bin" / name
        if candidate.exists():
            return Path(os.path.realpath(candidate))
    return real


def package_paths(names: Sequence[str]) -> tuple[Path, ...]:
    """Each package's folder (or module file), and the `<name>.libs` folder beside it where its wheel
    keeps the shared libraries it vendors."""
    found: list[Path] = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError(f"the package {name} is not installed for this Python")
        if (not spec.origin or spec.origin == "namespace") and spec.submodule_search_locations:
            # A namespace package (the nvidia-* wheels' `nvidia`): its first folder, where pip puts them all.
            found.append(Path(list(spec.submodule_search_locations)[0]).resolve())
            continue
        if not spec.origin:
            raise ModuleNotFoundError(f"the package {name} is not installed for this Python")
        origin = Path(spec.origin).resolve()
        top = origin.parent if spec.submodule_search_locations else origin
        found.append(top)
        libs = top.parent / f"{name}.libs"
        if libs.is_dir():
            found.append(libs.resolve())
        # Its distribution's metadata: a package that finds its plugins by entry point (Triton finds
        # its GPU backends so) reads it through importlib.metadata on sys.path.
        found += sorted(p.resolve() for p in top.parent.glob(f"{name}-*.dist-info") if p.is_dir())[:1]
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=1)
def site_folders() -> tuple[Path, ...]:
    """Every site-packages (or dist-packages) folder of this Python and of its base installation:
    where the grader and anything else pip installed lives."""
    folders = set(site.getsitepackages()) | set(site.getsitepackages([sys.base_prefix]))
    folders |= {p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")}
    folders |= {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], site.getusersitepackages()}
    return tuple(sorted({Path(p).resolve() for p in folders if p and Path(p).is_dir()}))


def view(packages: Sequence[str], hidden: Sequence[Path]) -> View:
    """The view of a process that runs this interpreter with `packages` lent, `hidden` never seen."""
    base = Path(sys.base_prefix).resolve()
    roots = [Path(r) for r in SYSTEM_ROOTS if os.path.lexists(r)]
    if not any(base == r or r in base.parents for r in roots):
        roots.append(base)
    grader_package = Path(__file__).resolve().parents[2]
    hide = {Path(h).resolve() for h in (*hidden, grader_package) if os.path.lexists(h)}
    return View(tuple(roots), tuple(Path(f) for f in SYSTEM_FILES if os.path.exists(f)), site_folders(),
                tuple(sorted(hide)), package_paths(packages))


def bwrap_arguments(v: View) -> list[str]:
    """bubblewrap's mount options for the view (the jailed folder and devices come after)."""
    args: list[str] = []
    for root in v.roots:
        if root.is_symlink():  # /lib -> usr/lib on a merged /usr: the same link inside
            args += ["--symlink", os.readlink(root), str(root)]
        else:
            args += ["--ro-bind", str(root), str(root)]
    for f in v.files:
        args += ["--ro-bind", str(f), str(f)]
    real_roots = [Path(os.path.realpath(r)) for r in v.roots]
    for covered in v.covered():
        if covered.is_dir() and any(r == covered or r in covered.parents for r in real_roots):
            args += ["--tmpfs", str(covered), "--remount-ro", str(covered)]
    for path in v.packages:
        args += ["--ro-bind", str(path), f"{PACKAGES_INSIDE}/{path.name}"]
    return args


def landlock_rules(v: View) -> list[tuple[str, int]]:
    """Landlock's read rules for the view: (path, rights), a folder holding something covered
    granted entry by entry around it."""
    rules: list[tuple[str, int]] = []
    covered = [Path(os.path.realpath(c)) for c in v.covered()]
    hidden = [Path(os.path.realpath(h)) for h in v.hidden]
    seen: set[Path] = set()
    for root in v.roots:
        for path, rights in _grant(Path(os.path.realpath(root)), covered, hidden):
            if path not in seen:
                seen.add(path)
                rules.append((str(path), rights))
    rules += [(str(f), read_rights(False)) for f in v.files]
    rules += [(str(p), read_rights(p.is_dir())) for p in v.packages]
    return rules


def _grant(path: Path, covered: Sequence[Path], hidden: Sequence[Path]) -> Iterator[tuple[Path, int]]:
    if any(c == path or c in path.parents for c in covered):
        return  # covered itself
    inside = [c for c in covered if path in c.parents]
    if not inside:
        yield path, read_rights(path.is_dir())
        return
    if not any(path in h.parents for h in hidden):
        yield path, FS_READ_DIR  # names only: the import system lists the folders it searches
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue  # a link is granted (or not) where it leads
        yield from _grant(Path(entry.path), covered, hidden)
