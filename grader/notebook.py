"""Notebook submissions: the kernel inside a Colab (.ipynb) notebook, found without running anything.

Students work in the Colab notebook `grade student` writes, where the kernel lives in a cell that
starts with `%%writefile submission.cu`, and hand in the downloaded `.ipynb`. This module reads the
notebook as JSON (nbformat 3 or 4), picks the cell that writes the exercise's submission file (or, failing
that, a cell with nvcc4jupyter's `%%cuda` magic), and returns its text as an ordinary Submission
plus a SourceMap, so every message that names a line of the kernel names the notebook cell and the
line inside it: `notebook cell 7, line 12`. Nothing in the notebook is ever executed.

The submission's sha256 is that of the extracted kernel (the bytes `%%writefile` would have
written), so a notebook and the same kernel handed in as a `.cu` get the same seeds and the same
verdicts. Problems (not JSON, not a notebook, too large, no kernel cell, several) come back as a
refusal saying what was expected and how to fix it; no part of the notebook is echoed except the
magic lines, shortened and made printable.
"""
from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from . import submission as submission_module
from .spec import Limits
from .submission import PolicyVerdict, Submission

SUFFIX = ".ipynb"
DEFAULT_TARGET = "submission.cu"
_CELL_DIAGNOSTIC = re.compile(r"^(?P<name>.+?)\((?P<line>\d+)\): ")
# How the emulator's own messages name a source line ("at line 34", "on line 7", "lines 29 and 34").
_PROSE_LINE = re.compile(r"\b(at|on) line (\d+)\b")
_PROSE_LINES = re.compile(r"\blines (\d+) and (\d+)\b")


@dataclass(frozen=True)
class CellLine:
    """Where one line of the extracted source was written: the cell (1-based, counted from the top
    of the notebook, text cells included) and the line inside that cell (1-based, the magic line
    being line 1)."""

    cell: int
    line: int


@dataclass(frozen=True)
class SourceMap:
    """Turns a line of the graded source into the place a student looks for it.

    For a plain file that is `name:line`; for a notebook, `notebook cell C, line L`. Every message
    that points at a line of student code goes through describe().
    """

    name: str
    cells: tuple[CellLine, ...] = ()  # by source line - 1; empty for a plain file
    magic: str = ""                    # the magic of the graded cell(s): "%%writefile submission.cu" or "%%cuda"

    @property
    def is_notebook(self) -> bool:
        return bool(self.cells)

    def note(self) -> str:
        """For the report: which notebook cells were graded, and how cells are counted ("" for a plain file)."""
        if not self.cells:
            return ""
        numbers = list(dict.fromkeys(c.cell for c in self.cells))
        listed = _listed(numbers, ", ")
        return (f"Graded the kernel in notebook cell{'s' if len(numbers) > 1 else ''} {listed} (`{self.magic}`); cells "
                "are counted from the top of the notebook, text cells included, and line 1 is the magic line.")

    def describe(self, line: int) -> str:
        """`name:line`, or `notebook cell C, line L` for a line of a notebook's kernel."""
        if self.cells and 0 < line <= len(self.cells):
            where = self.cells[line - 1]
            return f"notebook cell {where.cell}, line {where.line}"
        return f"{self.name}:{line}"

    def rewrite_log(self, log: str) -> str:
        """A compiler log whose diagnostics read `name(12): error ...` with `notebook cell C, line L: error ...`."""
        if not self.cells:
            return log
        out = []
        for text in log.split("\n"):
            m = _CELL_DIAGNOSTIC.match(text)
            if m and m.group("name") == self.name:
                text = f"{self.describe(int(m.group('line')))}: {text[m.end():]}"
            out.append(text)
        return "\n".join(out)

    def rewrite_text(self, text: str) -> str:
        """A message whose prose names kernel lines ("at line 34", as the emulator writes them), naming
        the notebook cell and line instead."""
        if not self.cells:
            return text
        text = _PROSE_LINE.sub(lambda m: f"{m.group(1)} {self.describe(int(m.group(2)))}", text)
        return _PROSE_LINES.sub(lambda m: f"{self.describe(int(m.group(1)))} and {self.describe(int(m.group(2)))}", text)

    def rewrite_verdict(self, verdict: PolicyVerdict) -> PolicyVerdict:
        """A policy refusal that names `name:line`, naming the notebook cell instead."""
        if not self.cells or verdict.line is None:
            return verdict
        message = verdict.message.replace(f"{self.name}:{verdict.line}", self.describe(verdict.line), 1)
        return PolicyVerdict(verdict.ok, message, verdict.line)


@dataclass(frozen=True)
class Extracted:
    """The kernel found in a notebook: its text, where each line came from, and which cells held it."""

    source: str
    cells: tuple[CellLine, ...]
    kind: str      # "writefile" or "cuda"
    cell_numbers: tuple[int, ...]


def is_notebook(path: Path, head: bytes | None = None) -> bool:
    """A .ipynb file, or a renamed one: a file whose first character is `{` and that names "cells"."""
    if Path(path).suffix.lower() == SUFFIX:
        return True
    if head is None:
        try:
            with open(path, "rb") as f:
                head = f.read(4096)
        except OSError:
            return False
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and (b'"cells"' in head or b'"nbformat"' in head)


def read_checked(path: Path, limits: Limits, *, target: str = DEFAULT_TARGET
                 ) -> tuple[Submission | None, PolicyVerdict, SourceMap]:
    """Read a submission (a source file or a notebook) and apply the source policy.

    What api.grade and `grade profile` call: a plain file goes to grader.submission unchanged; a
    notebook's kernel is extracted first, then meets the same policy, with line numbers mapped.
    """
    path = Path(path)
    name = submission_module.display_name(path)
    plain = SourceMap(name)
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        head = b""
    if not is_notebook(path, head):
        sub, verdict = submission_module.read_checked(path, limits, name=name)
        return sub, verdict, plain
    data, problem = _read_limited(path, name, limits.max_notebook_bytes)
    if problem:
        return None, PolicyVerdict(False, problem), plain
    found, problem = extract(data, name, target)
    if found is None:
        return None, PolicyVerdict(False, problem), plain
    raw = found.source.encode("utf-8")
    sub = Submission(path=path, name=name, source=found.source, sha256=hashlib.sha256(raw).hexdigest(), size=len(raw))
    where = SourceMap(name, found.cells, f"%%writefile {target}" if found.kind == "writefile" else "%%cuda")
    return sub, where.rewrite_verdict(submission_module.check_policy(sub, limits)), where


def _read_limited(path: Path, name: str, limit: int) -> tuple[bytes, str]:
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        return b"", f"cannot read the submission {name}: {exc.strerror or exc}"
    if len(data) > limit:
        return b"", (f"{name} is larger than {limit // 1024**2} MiB, the limit for a notebook. Clear its outputs "
                     "(in Colab: Edit > Clear all outputs), save, download it again and resubmit.")
    return data, ""


def extract(data: bytes, name: str, target: str = DEFAULT_TARGET) -> tuple[Extracted | None, str]:
    """The kernel in a notebook's bytes, or None and what is wrong in words a student can act on."""
    cells, problem = _code_cells(data, name)
    if cells is None:
        return None, problem
    writers: list[tuple[int, str, bool, int]] = []  # (cell number, body, append, first body line in the cell)
    cuda: list[tuple[int, str, int]] = []
    other_cu: list[tuple[int, str]] = []
    for number, text in cells:
        magic, body, first = _cell_magic(text)
        if magic is None:
            continue
        words = _words(magic)
        if not words:
            continue
        if words[0] == "%%writefile":
            append = any(w in ("-a", "--append") for w in words[1:])
            files = [w for w in words[1:] if not w.startswith("-")]
            if not files:
                continue
            if Path(files[0]).name == target:
                writers.append((number, body, append, first))
            elif files[0].lower().endswith(".cu"):
                other_cu.append((number, _shown(magic)))
        elif words[0] == "%%cuda":
            cuda.append((number, body, first))
    if writers:
        starts = [w for w in writers if not w[2]]
        if len(starts) > 1:
            listed = _listed([w[0] for w in starts], " and ")
            return None, (f"{name}: cells {listed} each start with `%%writefile {target}`, so it is not clear which one "
                          f"is your kernel. Keep exactly one cell that writes {target} (delete or rename the others), "
                          "save the notebook and resubmit.")
        if not starts:
            return None, (f"{name}: every cell that writes {target} appends to it (`%%writefile -a`), so none holds "
                          f"the start of the file. Start your kernel's cell with `%%writefile {target}`.")
        # The file as running the notebook top to bottom would leave it: the one cell that writes
        # it, then the cells after it that append to it.
        chosen = [w for w in writers if w[0] >= starts[0][0]]
        ignored = [w[0] for w in writers if w[0] < starts[0][0]]
        if ignored:
            return None, (f"{name}: cell{'s' if len(ignored) > 1 else ''} {_listed(ignored, ', ')} append{'' if len(ignored) > 1 else 's'} to {target} "
                          f"before cell {starts[0][0]} writes it. Keep the kernel in one `%%writefile {target}` cell.")
        return _join([(w[0], w[1], w[3]) for w in chosen], "writefile"), ""
    if len(cuda) == 1:
        return _join(cuda, "cuda"), ""
    if len(cuda) > 1:
        listed = _listed([c[0] for c in cuda], ", ")
        return None, (f"{name}: no cell writes {target}, and cells {listed} all use `%%cuda`, so it is not clear which "
                      f"one is your kernel. Put the kernel in one cell starting with `%%writefile {target}`.")
    hint = ""
    if other_cu:
        hint = " Found " + "; ".join(f"`{m}` in cell {n}" for n, m in other_cu[:5]) + f": the grader looks for {target}."
    return None, (f"{name}: no cell writes {target}.{hint} Put your kernel in a code cell whose first line is "
                  f"`%%writefile {target}` (as in the notebook you were given), save the notebook and resubmit.")


def _code_cells(data: bytes, name: str) -> tuple[list[tuple[int, str]] | None, str]:
    """(cell number, source) of every code cell, numbered among all cells; or None and the problem."""
    not_notebook = (f"{name} is not a Jupyter notebook that can be read ({{why}}). Download it again from Colab "
                    "(File > Download > Download .ipynb) and resubmit, or submit the kernel as a .cu file.")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        return None, not_notebook.format(why=f"it is not UTF-8 text, byte {exc.start}")
    try:
        raw = json.loads(text)
    except RecursionError:
        return None, not_notebook.format(why="its JSON is nested too deeply")
    except ValueError as exc:
        return None, not_notebook.format(why=f"not valid JSON: {_shown(str(exc), 80)}")
    if not isinstance(raw, dict) or not isinstance(raw.get("cells", raw.get("worksheets")), list):
        return None, not_notebook.format(why="it is JSON but has no list of cells")
    major = raw.get("nbformat")
    if major not in (3, 4):
        return None, not_notebook.format(why=f"nbformat {_shown(repr(major), 20)}; versions 3 and 4 are read")
    # The cells are read from the JSON as it is, not through nbformat.from_dict: that builds an
    # object for everything in the file, outputs and metadata included, and a 16 MiB notebook of
    # empty objects took 43 s and 2.8 GB of the grader's own process (measured; json.loads alone
    # takes 0.5 s). Nor is it validated against the schema: Colab's files often are not quite
    # valid (nbformat 4.0 with ids under metadata.id, odd output records), and only the code
    # cells matter here.
    key = "source"
    cells = raw.get("cells", [])
    if major == 3:
        # Version 3 keeps its cells in worksheets (flattened in order, as nbformat's own upgrade
        # does) and a code cell's text under "input".
        worksheets = raw.get("worksheets", [])
        if not isinstance(worksheets, list) or not all(isinstance(w, dict) and isinstance(w.get("cells", []), list)
                                                       for w in worksheets):
            return None, not_notebook.format(why="its worksheets are not lists of cells")
        key, cells = "input", [c for w in worksheets for c in w.get("cells", [])]
    if not isinstance(cells, list):
        return None, not_notebook.format(why="it is JSON but has no list of cells")
    out = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get(key, "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if isinstance(source, str):
            out.append((number, source))
    return out, ""


def _cell_magic(text: str) -> tuple[str | None, str, int]:
    """(the cell magic line, the body after it, the body's first line number in the cell), or
    (None, "", 0) for a cell that is not a cell magic. Blank lines before the magic are allowed, as
    IPython allows them."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not lines[i].startswith("%%"):
        return None, "", 0
    body = "\n".join(lines[i + 1:])
    # IPython hands a cell magic its body ending in a newline; %%writefile writes exactly that.
    if not body.endswith("\n"):
        body += "\n"
    return lines[i], body, i + 2


def _words(magic: str) -> list[str]:
    try:
        return shlex.split(magic)
    except ValueError:
        return magic.split()


def _join(parts: Sequence[tuple[int, str, int]], kind: str) -> Extracted:
    """Concatenate cell bodies (a %%writefile cell and the -a cells after it) with their line map."""
    source, cells = [], []
    for number, body, first in parts:
        lines = body.split("\n")[:-1]  # the body ends with "\n"
        source.append(body)
        cells.extend(CellLine(number, first + k) for k in range(len(lines)))
    return Extracted("".join(source), tuple(cells), kind, tuple(p[0] for p in parts))


def _listed(numbers: Sequence[int], joiner: str) -> str:
    """Cell numbers for a message: all of them, or the first ten and how many there are, so that a
    notebook of thousands of kernel cells does not get a message thousands of numbers long."""
    head = joiner.join(map(str, numbers[:10]))
    return head if len(numbers) <= 10 else f"{head}{joiner}... ({len(numbers)} cells)"


def _shown(text: str, limit: int = 60) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in text).replace("`", "'")
    return text[:limit] + ("..." if len(text) > limit else "")



# ---------------------------------------------------------------------------------------------
# Python exercises: the definitions of every code cell

@dataclass(frozen=True)
class PythonCells:
    """The module a Python notebook submission amounts to, and what was left out of it."""

    source: str
    cells: tuple[CellLine, ...]
    skipped: tuple[str, ...]  # one line each: a cell magic, shell escapes, a cell that does not parse


def extract_python(data: bytes, name: str) -> tuple[PythonCells | None, str]:
    """The definitions (def, class, import, assignments) of every code cell, in notebook order.

    Everything else is left out and never run: calls at the top level (the check cells), `!` shell
    escapes and `%` line magics, and cells that start with a cell magic (`%%bash`, `%%writefile`).
    A cell that does not parse is left out too, and said so.
    """
    import ast

    cells, problem = _code_cells(data, name)
    if cells is None:
        return None, problem
    out: list[str] = []
    where: list[CellLine] = []
    skipped: list[str] = []
    for number, text in cells:
        magic, _, _ = _cell_magic(text)
        if magic is not None:
            skipped.append(f"notebook cell {number}: a `{_shown(magic.split()[0], 20)}` cell (not run)")
            continue
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        escapes = [i for i, line in enumerate(lines) if line.lstrip().startswith(("!", "%"))]
        if escapes:
            skipped.append(f"notebook cell {number}: {len(escapes)} shell escape or magic line(s) (not run)")
            for i in escapes:
                lines[i] = ""
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError as exc:
            skipped.append(f"notebook cell {number}, line {exc.lineno}: SyntaxError: {_shown(exc.msg or '', 80)} "
                           "(the cell was left out)")
            continue
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
                                     ast.Assign, ast.AnnAssign)):
                continue
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            for k in range(first, (node.end_lineno or node.lineno) + 1):
                out.append(lines[k - 1])
                where.append(CellLine(number, k))
    if not out:
        return None, (f"{name}: no code cell defines anything (no `def`, `class`, `import` or assignment was found). "
                      "Write your functions in the notebook's code cells, save it and resubmit.")
    return PythonCells("\n".join(out) + "\n", tuple(where), tuple(skipped)), ""


def graded_source(path: Path, *, python: bool = False, limit: int = 16 * 1024**2) -> tuple[str | None, str]:
    """The text that was graded, for showing it (an HTML report): a plain file's own text, or what
    a notebook amounts to (its kernel cell, or for a Python exercise its definitions). None and why
    when there is none. Line numbers are those of the graded text, as in the results."""
    path = Path(path)
    name = submission_module.display_name(path)
    if not is_notebook(path):
        # Bounded too: the batch calls this in its own process for every student (the summary, the pages).
        sub, verdict = submission_module.read(path, limit)
        return (sub.source, "") if sub else (None, verdict.message)
    data, problem = _read_limited(path, name, limit)
    if problem:
        return None, problem
    if python:
        found_py, problem = extract_python(data, name)
        return (found_py.source, "") if found_py else (None, problem)
    found, problem = extract(data, name)
    return (found.source, "") if found else (None, problem)
