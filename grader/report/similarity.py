"""Near-identical submissions: how much of two sources' own code (what is not starter code) they share.

Each source becomes a token stream (comments and whitespace gone, literals and names kept), then
the set of its runs of K consecutive tokens. Runs that occur in the starter code (the skeleton)
are dropped, since every student starts from it; what is left is the student's own code. Two
submissions are near-identical when the Jaccard similarity of those sets reaches a threshold. This
is the shingling that MOSS-style tools use, kept small: a hint for staff to look, not a verdict.
Renaming every variable defeats it; an edited comment, spacing or a changed constant does not.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

K = 5
THRESHOLD = 0.8
_COMMENTS = re.compile(r'("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')|(/\*.*?\*/|//[^\n]*)', re.DOTALL)
_TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_]\w*|\d[\w.]*|<<=|>>=|->|\+\+|--|<<|>>|[<>=!+\-*/%&|^]=|&&|\|\||\S')


@dataclass(frozen=True)
class Pair:
    """Two submissions (or a submission and a known source) that share most of their own code."""

    first: str
    second: str
    similarity: float   # Jaccard similarity of their token runs, starter code excluded


def tokens(source: str) -> list[str]:
    """The source's tokens, comments and whitespace removed (string literals kept whole)."""
    stripped = _COMMENTS.sub(lambda m: m.group(1) or " ", source)
    return _TOKEN.findall(stripped)


def shingles(source: str, k: int = K) -> set[int]:
    """Hashes of every run of k consecutive tokens."""
    toks = tokens(source)
    return {hash(tuple(toks[i:i + k])) for i in range(max(len(toks) - k + 1, 0))}


def near_identical(sources: Mapping[str, str], *, starter: Iterable[str] = (), known: Mapping[str, str] | None = None,
                   threshold: float = THRESHOLD, skip: Iterable[frozenset[str]] = ()) -> list[Pair]:
    """Pairs of `sources` (name -> text), and of a source with a `known` text (label -> text, e.g.
    the reference solution), whose own code is at least `threshold` alike; most alike first.
    `skip` holds pairs not to report (already reported as identical)."""
    common: set[int] = set()
    for text in starter:
        common |= shingles(text)
    own = {name: shingles(text) - common for name, text in sources.items()}
    own = {name: s for name, s in own.items() if s}
    known_sets = {label: shingles(text) - common for label, text in (known or {}).items()}
    skipped = set(skip)
    names = sorted(own)
    found = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if frozenset((a, b)) in skipped:
                continue
            sim = _jaccard(own[a], own[b])
            if sim >= threshold:
                found.append(Pair(a, b, round(sim, 3)))
        for label, s in known_sets.items():
            sim = _jaccard(own[a], s)
            if s and sim >= threshold and frozenset((a, label)) not in skipped:
                found.append(Pair(a, label, round(sim, 3)))
    return sorted(found, key=lambda p: (-p.similarity, p.first, p.second))


def _jaccard(a: set[int], b: set[int]) -> float:
    if not a or not b:
        return 0.0
    # Sizes bound the similarity: skip the intersection when it cannot reach any threshold that matters.
    small, large = sorted((len(a), len(b)))
    if small / large < 0.5:
        return small / large
    return len(a & b) / len(a | b)


def groups_to_pairs(groups: Sequence[Sequence[str]]) -> set[frozenset[str]]:
    """Every pair within each group (for `skip`)."""
    return {frozenset((a, b)) for g in groups for i, a in enumerate(g) for b in g[i + 1:]}
