"""bench/class_mix.py: the bench's realistic class has the recipe's shares, is the same for a seed, has
no two identical files, and each copy compiles to its original's PTX."""
from __future__ import annotations

import importlib.util
import random
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _class_mix():
    spec = importlib.util.spec_from_file_location("class_mix", ROOT / "bench" / "class_mix.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("class_mix", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class _EveryChange(random.Random):
    """A draw that takes every variation there is: every rename, the last choice, two newlines."""

    def random(self) -> float:
        return 0.99

    def choice(self, seq):
        return seq[-1]

    def randint(self, a: int, b: int) -> int:
        return b


def test_the_shares_of_a_class():
    mix = _class_mix()
    assert mix.counts(100) == {"correct": 60, "slow": 10, "broken": 30}
    assert mix.counts(20) == {"correct": 12, "slow": 2, "broken": 6}
    assert sum(mix.counts(7).values()) == 7
    copies = mix.build(100, seed=0)
    assert Counter(c.original.category for c in copies) == Counter(mix.counts(100))
    # every file of a category takes its turn, and every broken file is in a class of 100
    broken = {c.original.stem for c in copies if c.original.category == "broken"}
    assert broken == {p.stem for p in (ROOT / "reference/level2/wrong").glob("*.cu")} | {"skeleton"}


def test_a_seed_gives_one_class_and_no_two_files_alike():
    mix = _class_mix()
    first, again, other = mix.build(60, seed=3), mix.build(60, seed=3), mix.build(60, seed=4)
    assert [(c.name, c.source) for c in first] == [(c.name, c.source) for c in again]
    assert [c.source for c in first] != [c.source for c in other]
    assert len({c.source for c in first}) == len({c.name for c in first}) == 60
    assert all(re.fullmatch(r"student\d{3}_\w+\.cu", c.name) for c in first)


def test_a_copy_compiles_to_its_originals_ptx():
    from grader.compile import compile_source

    mix = _class_mix()

    def ptx_body(source: str) -> tuple[bool, list[str]]:
        result = compile_source(source, "student.cu")
        # line numbers and the file's name are all a comment line or a layout may change
        return result.ok, [ln for ln in result.ptx.splitlines() if ln.strip() and not re.match(r"\s*(\.loc|\.file|//)", ln)]

    renamed = 0
    for kernel in mix.originals():
        varied = mix.vary(kernel.source, 7, _EveryChange())
        renamed += any(re.search(rf"\b{old}\b", kernel.source) and not re.search(rf"\b{old}\b", varied)
                       for old in mix.RENAMES)
        ok, body = ptx_body(kernel.source)
        assert ptx_body(varied) == (ok, body), kernel.stem
        assert not ok or len(body) > 20, kernel.stem
    assert renamed >= 15  # the variations were there to be compared
