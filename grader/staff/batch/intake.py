"""Intake: anything a course hands in, read into entries (one per student: the file to grade, or why
there is none).

Accepted: a folder of .cu or .py files or Colab notebooks (.ipynb), a folder of per-student folders,
or a zip of either, a Gradescope "export submissions" zip included (its submission_metadata.yml
gives each entry its submitters). A zip is extracted under the batch's scratch folder with caps on
size and members; a member that cannot be unpacked costs only the submission it belongs to, whose
entry says why. Student ids are sanitised (safe as file names and CSV cells) and unique.
"""
from __future__ import annotations

import hashlib
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ...errors import UsageError
from ...submission import printable

MAX_ZIP_BYTES = 512 * 1024**2       # total extracted bytes
MAX_ZIP_MEMBERS = 20_000
SOURCE_SUFFIX = ".cu"
NOTEBOOK_SUFFIX = ".ipynb"   # a Colab notebook: its %%writefile submission.cu cell is graded (grader.notebook)
PYTHON_SUFFIX = ".py"        # a Python exercise's module
SUFFIXES = (SOURCE_SUFFIX, PYTHON_SUFFIX, NOTEBOOK_SUFFIX)


@dataclass(frozen=True)
class Entry:
    """One student's input: the .cu to grade, or why there is none."""

    student: str                  # sanitised, unique within the batch
    origin: str                   # the file or folder name as submitted
    source: Path | None
    problem: str = ""             # set when source is None: no .cu, several .cu
    fingerprint: str = ""         # sha256 of the submission's bytes (of the problem text when there is none)
    submitters: tuple[str, ...] = ()


def collect(submissions: Path, scratch: Path) -> list[Entry]:
    """The students in a folder or zip, sorted by id. A zip is extracted (safely) under scratch."""
    submissions = Path(submissions)
    unpacked: dict[str, list[tuple[str, str]]] = {}  # top-level name -> (member within it, why it was not unpacked)
    if submissions.is_file() and zipfile.is_zipfile(submissions):
        extracted = scratch / "extracted"
        failed = {extracted / member: why for member, why in extract_zip(submissions, extracted).items()}
        root = _descend(extracted, tuple(failed))
        for path, why in failed.items():
            if path.is_relative_to(root) and path != root:
                parts = path.relative_to(root).parts
                unpacked.setdefault(parts[0], []).append(("/".join(parts[1:]), why))  # "": the top-level item itself
    elif submissions.is_dir():
        root = submissions
    else:
        raise UsageError(f"{submissions}: expected a folder of .cu or .ipynb files, a folder of student folders, or a .zip")
    submitters = _gradescope_submitters(root)
    raw: list[tuple[str, Path]] = []
    for item in sorted(root.iterdir(), key=lambda p: p.name):
        if item.name.startswith(".") or item.name == "__MACOSX" or item.is_symlink():
            continue
        if item.is_file() and item.suffix.lower() in SUFFIXES:
            raw.append((item.name[: -len(item.suffix)], item))
        elif item.is_dir():
            raw.append((item.name, item))
    # A submission the zip held (a student's folder, or a .cu) that could not be unpacked still gets
    # its row, saying why.
    seen = {path.name for _, path in raw}
    for name, lost in unpacked.items():
        folder = any(member for member, _ in lost)
        if name not in seen and (folder or Path(name).suffix.lower() in SUFFIXES):
            raw.append((name if folder else Path(name).stem, root / name))
    raw.sort(key=lambda item: item[1].name)
    if not raw:
        raise UsageError(f"{submissions}: no .cu or .ipynb files and no student folders found")
    entries, taken = [], set()
    for name, path in raw:
        student = _unique(sanitize_id(name), taken)
        who = submitters.get(path.name, ())
        lost = unpacked.get(path.name, [])
        if not lost and path.is_file():
            entries.append(Entry(student, path.name, path, fingerprint=file_hash(path), submitters=who))
            continue
        files = [] if not _is(path.is_dir) else sorted(
            p for p in path.rglob("*") if p.is_file() and not p.is_symlink() and p.suffix.lower() in SUFFIXES
            and not any(part.startswith(".") or part == "__MACOSX" for part in p.relative_to(path).parts))
        # One .cu (or .py) is the submission; without one, one notebook is (a source file beside the
        # notebook it came from wins).
        sources = ([p for p in files if p.suffix.lower() == SOURCE_SUFFIX] or [p for p in files if p.suffix.lower() == PYTHON_SUFFIX]
                   or files)
        if lost and (not sources or any(Path(member or path.name).suffix.lower() in SUFFIXES for member, _ in lost)):
            # Grading what happened to unpack could grade the wrong file, or half a submission.
            listed = "; ".join(f"{printable(member or path.name)} ({why})" for member, why in lost[:5])
            problem = (f"Part of this submission could not be unpacked from the zip: {listed}. "
                       "Submit it again (one .cu file or one .ipynb notebook).")
        elif len(sources) == 1:
            entries.append(Entry(student, path.name, sources[0], fingerprint=file_hash(sources[0]), submitters=who))
            continue
        elif sources:
            listed = ", ".join(printable(str(p.relative_to(path))) for p in sources[:10])
            kind = {SOURCE_SUFFIX: ".cu files", PYTHON_SUFFIX: ".py files"}.get(sources[0].suffix.lower(), "notebooks")
            problem = (f"{len(sources)} {kind} were submitted ({listed}); submit exactly one .cu file or one notebook "
                       "with your kernel.")
        else:
            others = sorted(printable(str(p.relative_to(path))) for p in path.rglob("*") if p.is_file())
            found = ", ".join(others[:10]) if others else "nothing"
            problem = f"No .cu file or notebook was submitted (found: {found}); submit your kernel as one .cu file or one .ipynb notebook."
        entries.append(Entry(student, path.name, None, problem, hashlib.sha256(problem.encode()).hexdigest(), who))
    return entries


def _is(check: Callable[[], bool]) -> bool:
    """A pathlib check (is_dir) that says False for a name the disk refuses (too long to unpack)."""
    try:
        return check()
    except OSError:
        return False


def sanitize_id(name: str) -> str:
    """A student id safe as a file name and a CSV cell: letters, digits, . _ - only."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")
    return text[:80] or "student"


def extract_zip(archive: Path, dest: Path, *, max_bytes: int = MAX_ZIP_BYTES, max_members: int = MAX_ZIP_MEMBERS) -> dict[str, str]:
    """Extract a zip refusing absolute paths, `..`, links and anything past the size and count caps.

    A member that cannot be unpacked (a name too long for the disk, a file where a folder of the
    same name is, a damaged or encrypted entry) costs only that member, never the batch: it comes
    back as {member path: why}, and whatever was written of it is removed, so half a file is never
    graded. A zip that cannot be read at all is a usage error.
    """
    dest.mkdir(parents=True, exist_ok=True)
    total = 0
    failed: dict[str, str] = {}
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise UsageError(f"{archive}: not a zip that can be read ({printable(str(exc), 200)})") from None
    with zf:
        members = zf.infolist()
        if len(members) > max_members:
            raise UsageError(f"{archive}: {len(members)} entries; the limit is {max_members}")
        for info in members:
            name = info.filename.replace("\\", "/")
            parts = [p for p in name.split("/") if p not in ("", ".")]
            if name.startswith("/") or ".." in parts or (parts and re.match(r"^[A-Za-z]:", parts[0])):
                raise UsageError(f"{archive}: refusing the entry {info.filename!r} (it points outside the archive)")
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode) or not parts:
                continue  # links could point anywhere, and submissions never need them; "." names nothing to write
            target = dest.joinpath(*parts)
            written = False
            try:
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    written = True
                    while chunk := src.read(1 << 20):
                        total += len(chunk)  # counted as decompressed, not as the header claims
                        if total > max_bytes:
                            raise UsageError(f"{archive}: more than {max_bytes // 1024**2} MiB once extracted; refusing it")
                        out.write(chunk)
            except UsageError:
                raise
            except Exception as exc:  # noqa: BLE001 - zipfile and the disk raise many types; each costs one member
                if written:
                    target.unlink(missing_ok=True)
                failed["/".join(parts)] = _unpack_problem(exc)
    return failed


def _unpack_problem(exc: Exception) -> str:
    """Why a zip member could not be unpacked, in a few words (no grader paths)."""
    if isinstance(exc, (FileExistsError, IsADirectoryError, NotADirectoryError)):
        return "a file and a folder in the zip have the same name"
    if isinstance(exc, RecursionError):  # Path.mkdir makes each missing parent a call deeper
        return "its folders are nested too deeply"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc):
        return "encrypted"
    if isinstance(exc, NotImplementedError):
        return "compressed in a way the grader cannot read"
    return f"damaged in the zip: {type(exc).__name__}"


def _descend(root: Path, lost: Sequence[Path] = ()) -> Path:
    """Skip wrapper folders (a Gradescope export has assignment_<n>_export/ at the top). A folder
    holding a member that could not be unpacked (`lost`) beside its one subfolder is no wrapper:
    that member was a submission of its own."""
    while True:
        items = [p for p in root.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
        dirs = [p for p in items if p.is_dir()]
        if len(dirs) == 1 and not any(p.suffix.lower() in SUFFIXES for p in items if p.is_file()) \
                and not any(p.is_relative_to(root) and not p.is_relative_to(dirs[0]) for p in lost) \
                and not (root / "submission_metadata.yml").exists():
            root = dirs[0]
            continue
        return root


def _gradescope_submitters(root: Path) -> dict[str, tuple[str, ...]]:
    """submission_<n> -> ("Name <email> sid", ...) from a Gradescope export's submission_metadata.yml."""
    meta = root / "submission_metadata.yml"
    if not meta.is_file():
        return {}
    people: dict[str, list[dict[str, str]]] = {}
    current = None
    for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
        top = re.match(r"^(\S[^:]*):\s*$", line)
        if top:
            current = top.group(1).strip("'\"")
            people[current] = []
            continue
        # The value is taken whole and stripped after: "(.*?)\s*$" took time quadratic in the blanks
        # inside a value, and the names are the students' own.
        field_ = re.match(r"^\s*(-\s+)?:(name|sid|email):(.*)$", line)
        if current is not None and field_:
            if field_.group(1) or not people[current]:
                people[current].append({})
            people[current][-1][field_.group(2)] = field_.group(3).strip().strip("'\"")
    return {k: tuple(" ".join(x for x in (p.get("name", ""), f"<{p['email']}>" if p.get("email") else "", p.get("sid", "")) if x)
                     for p in v) for k, v in people.items()}


def _unique(student: str, taken: set[str]) -> str:
    candidate, n = student, 2
    while candidate.lower() in taken:
        candidate, n = f"{student}-{n}", n + 1
    taken.add(candidate.lower())
    return candidate


def file_hash(path: Path) -> str:
    """sha256 of a file's bytes, read a chunk at a time: a huge file in the input costs no memory here
    (its grading refuses it for its size)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError as exc:  # its grading says it cannot be read; the batch goes on
        return hashlib.sha256(f"unreadable: {exc.strerror or exc}".encode()).hexdigest()
    return h.hexdigest()
