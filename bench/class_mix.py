"""A realistic level2 class for the speed bench (bench/grading_speed.py --mix class).

A real class is mostly kernels that work: the recipe is about 60% correct, 10% correct but slow and
30% broken, built only from kernels the repository already grades:

- correct: reference/level2/solution.cu and the tiled kernel TILED of tests/emu/test_kernels.py
  (a second student's style: no fmaf, its own loop bounds; full marks on the emulator);
- slow but correct: tests/data/slow_kernels/level2_naive.cu and level2_thirty_phases.cu;
- broken: every reference/level2/wrong/*.cu and exercises/level2/skeleton.cu.

(No kernel of tests/emu/ptx_corpus has level2's signature, `matmul_tiled(A, B, C, N)`.)

Each category's share of N is rounded by largest remainder, its files take turns, and the class is
shuffled. Every copy is lightly varied, so that no two files are byte-identical and a cache keyed by
a hash of the source cannot make the bench faster than a real class: a first comment line with the
student's number, some local variables renamed (whole words, to names the file does not use), and
its own indentation. The variations change no token the compiler sees but identifiers and layout, so
each copy grades as its original does (tests/test_class_mix.py compiles both and compares the PTX).
Everything is drawn from random.Random(seed): the same seed gives the same class, byte for byte.
"""
from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARES = (("correct", 0.60), ("slow", 0.10), ("broken", 0.30))
# Locals of the level2 kernels a student might name otherwise (multi-letter only: a one-letter name
# as a whole word also matches inside comments' contractions).
RENAMES = {
    "acc": ("sum", "total", "result", "cval", "accum"),
    "row": ("r", "gy", "out_row", "i_row"),
    "col": ("c", "gx", "out_col", "j_col"),
    "tx": ("lx", "tidx", "local_x"),
    "ty": ("ly", "tidy", "local_y"),
    "a_col": ("ak", "a_k", "kA"),
    "b_row": ("bk", "b_k", "kB"),
}
INDENTS = ("    ", "  ", "\t", "   ")
HEADERS = ("// student {n}: homework 2, tiled matmul", "// {n} - matmul_tiled submission",
           "/* student {n} */", "// submitted by student {n}")


@dataclass(frozen=True)
class Original:
    """A kernel of the recipe: its category, a name for its copies, and its source."""

    category: str
    stem: str
    source: str


@dataclass(frozen=True)
class Copy:
    """One student's submission: the file name, its original and the varied source."""

    name: str
    original: Original
    source: str


def _test_string(path: Path, name: str) -> str:
    """The string constant `name` assigned at the top of a Python file (read, never imported)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{path} assigns no {name}")


def originals(root: Path = ROOT) -> list[Original]:
    """The recipe's kernels, by category (see the module's docstring)."""
    ref = root / "reference" / "level2"
    slow = root / "tests" / "data" / "slow_kernels"
    files = [("correct", ref / "solution.cu"),
             ("slow", slow / "level2_naive.cu"), ("slow", slow / "level2_thirty_phases.cu"),
             ("broken", root / "exercises" / "level2" / "skeleton.cu")] \
        + [("broken", p) for p in sorted((ref / "wrong").glob("*.cu"))]
    found = [Original(cat, p.stem, p.read_text()) for cat, p in files]
    tiled = Original("correct", "tests_tiled", _test_string(root / "tests" / "emu" / "test_kernels.py", "TILED"))
    return found[:1] + [tiled] + found[1:]


def counts(size: int) -> dict[str, int]:
    """How many of `size` submissions each category gets: SHARES rounded by largest remainder."""
    exact = {cat: share * size for cat, share in SHARES}
    got = {cat: int(x) for cat, x in exact.items()}
    for cat in sorted(exact, key=lambda c: -(exact[c] - got[c]))[:size - sum(got.values())]:
        got[cat] += 1
    return got


def vary(source: str, number: int, rng: random.Random) -> str:
    """`source` as student `number` might have written it: a comment line of their own, some locals
    renamed, their own indentation. Tokens other than identifiers and whitespace are unchanged."""
    text = source
    for old, choices in RENAMES.items():
        if rng.random() < 0.5 or not re.search(rf"\b{old}\b", text):
            continue
        free = [new for new in choices if not re.search(rf"\b{new}\b", text)]
        if free:
            text = re.sub(rf"\b{old}\b", rng.choice(free), text)
    # the file's own indent step (the narrowest leading run of spaces), each step in the student's unit
    step = min((len(m) for m in re.findall(r"^( +)\S", text, flags=re.M)), default=4)
    unit = rng.choice(INDENTS)
    text = re.sub(r"^( +)", lambda m: unit * (len(m.group(1)) // step) + " " * (len(m.group(1)) % step), text, flags=re.M)
    header = rng.choice(HEADERS).format(n=f"{number:03d}")
    return header + "\n" + text.rstrip("\n") + "\n" * rng.randint(1, 2)


def build(size: int, seed: int = 0, root: Path = ROOT) -> list[Copy]:
    """The class of `size`: each category's count (counts()) cycling over its files, shuffled, each
    copy varied; named studentNNN_<original>.cu. Raises if two copies come out byte-identical."""
    rng = random.Random(seed)
    kernels = originals(root)
    picked: list[Original] = []
    for cat, n in counts(size).items():
        mine = [k for k in kernels if k.category == cat]
        picked += [mine[i % len(mine)] for i in range(n)]
    rng.shuffle(picked)
    copies = [Copy(f"student{i:03d}_{k.stem}.cu", k, vary(k.source, i, rng)) for i, k in enumerate(picked)]
    if len({c.source for c in copies}) != len(copies):
        raise AssertionError("two copies of the class are byte-identical")
    return copies


def write(copies: list[Copy], folder: Path) -> None:
    """Write the class into `folder`, one file per student."""
    for c in copies:
        (folder / c.name).write_text(c.source)
