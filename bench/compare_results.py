"""Compare two folders of results documents (a batch's results/<student>.json), file by file: every
difference in score, in a test's outcome (passed or failed, its score), in the checks not run, and
(unless --scores-only) in the counts a counter check shows (the submission's and the reference's
metrics and their ratio). Exit status 0 when there is none, 1 when there is.

    python3 bench/compare_results.py BEFORE AFTER [--scores-only]

Made to check that a change of speed changes no verdict: grade one class before and after
(`bench/grading_speed.py --mix class --keep-results FOLDER`, the same --class-seed: the same files)
and compare the two folders. Times, stage records and seeds are not compared.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

# What a counter check's extra_data shows (grader.checks.counters.CountersCheck._score).
COUNT_KEYS = ("ratio", "sizes", "summed", "submission", "reference")


def _load(folder: Path) -> dict[str, Any]:
    """Each results document of the folder by file name; an unreadable one as its error text."""
    docs: dict[str, Any] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            docs[path.name] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            docs[path.name] = f"unreadable: {error}"
    return docs


def _tests(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """A document's tests by name (a name used twice keeps a number: `name #2`)."""
    out: dict[str, Mapping[str, Any]] = {}
    for test in doc.get("tests", []):
        name = str(test.get("name"))
        key, n = name, 1
        while key in out:
            n += 1
            key = f"{name} #{n}"
        out[key] = test
    return out


def differences(before: Mapping[str, Any], after: Mapping[str, Any], counts: bool = True) -> Iterator[str]:
    """What differs between two results documents of one submission, one line each."""
    if isinstance(before, str) or isinstance(after, str):
        if before != after:
            yield f"document: {before if isinstance(before, str) else 'read'} / {after if isinstance(after, str) else 'read'}"
        return
    if before.get("score") != after.get("score"):
        yield f"score: {before.get('score')} -> {after.get('score')}"
    tests_before, tests_after = _tests(before), _tests(after)
    for name in sorted(set(tests_before) | set(tests_after)):
        a, b = tests_before.get(name), tests_after.get(name)
        if a is None or b is None:
            yield f"test {name!r}: {'absent' if a is None else a.get('status')} -> {'absent' if b is None else b.get('status')}"
            continue
        for key in ("status", "score", "max_score"):
            if a.get(key) != b.get(key):
                yield f"test {name!r} {key}: {a.get(key)} -> {b.get(key)}"
        if counts:
            extra_a, extra_b = a.get("extra_data") or {}, b.get("extra_data") or {}
            for key in COUNT_KEYS:
                if extra_a.get(key) != extra_b.get(key):
                    yield f"test {name!r} {key}: {extra_a.get(key)} -> {extra_b.get(key)}"
    not_run = [sorted((n.get("name"), n.get("reason")) for n in (doc.get("extra_data") or {}).get("not_run", []))
               for doc in (before, after)]
    if not_run[0] != not_run[1]:
        yield f"not run: {not_run[0]} -> {not_run[1]}"


def compare(before: Path, after: Path, counts: bool = True) -> list[str]:
    """Every difference between the two folders, as lines naming the file."""
    docs_before, docs_after = _load(before), _load(after)
    lines = [f"{name}: only in {before if name in docs_before else after}"
             for name in sorted(set(docs_before) ^ set(docs_after))]
    for name in sorted(set(docs_before) & set(docs_after)):
        lines += [f"{name}: {line}" for line in differences(docs_before[name], docs_after[name], counts)]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--scores-only", action="store_true", help="compare scores and outcomes, not the counts shown")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not folder.is_dir():
            parser.error(f"{folder} is not a folder")
    lines = compare(args.before, args.after, counts=not args.scores_only)
    same = len(set(p.name for p in args.before.glob("*.json")) & set(p.name for p in args.after.glob("*.json")))
    print("\n".join(lines) if lines else f"no difference in {same} results documents")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
