"""Compare the grader's verdicts on the held-out Triton corpus with truth.py's (issue 34).

    python docs/gpu-logs/heldout-triton/compare.py TRUTH_DIR emu=GRADE_DIR [gpu=GRADE_DIR2 ...]

TRUTH_DIR is truth.py's --out (<exercise>/<name>.json); each GRADE_DIR is grade_all.sh's OUTDIR
(the grader's results documents, <exercise>/<name>.json). For each backend a Markdown table:
correctness (the grader's correctness tests, public and hidden, all passed) against the truth's
`correct`, and memory safety (the grader's memory-safety test failed) against the truth's memory
error (a guard written, an output that read a guard, a memcheck error, or a crash); then every
disagreement with the grader's first lines and the truth's evidence. The grader's watch also sees
out-of-bounds reads whose value never reaches an output, which the truth only sees through memcheck
(and not at all on the CPU): such a row is a disagreement to read, not necessarily a grader error.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def truth_memory_error(truth: dict[str, Any]) -> bool:
    """The truth's memory verdict: any evidence of an access outside the tensors."""
    crashed = truth.get("crashed") or ""
    return bool(truth["writes_out_of_bounds"] or truth["reads_out_of_bounds"]
                or (truth.get("memcheck_errors") or 0) > 0 or crashed.startswith("exit status -"))


def grader_verdicts(doc: dict[str, Any]) -> tuple[bool | None, bool | None, str]:
    """(correct, memory-safety failed, its first lines) from a results document; None: not run."""
    tests = doc.get("tests", [])
    not_run = {n.get("category") for n in doc.get("extra_data", {}).get("not_run", [])}
    correctness = [t for t in tests if "correctness" in t.get("tags", [])]
    loads = [t for t in tests if "compile" in t.get("tags", [])]
    correct: bool | None
    if correctness:
        correct = all(t["status"] == "passed" for t in correctness + loads)
    elif loads and any(t["status"] == "failed" for t in loads):
        correct = False
    else:
        correct = None
    memory = [t for t in tests if "memory-safety" in t.get("tags", [])]
    if memory and memory[0].get("output", "").startswith("Not graded"):
        # The grader judges memory safety only once the kernel is correct somewhere: no verdict.
        failed, detail = None, memory[0]["output"].splitlines()[0]
    elif memory:
        failed = memory[0]["status"] == "failed"
        detail = " | ".join(memory[0].get("output", "").splitlines()[:3])
    else:
        failed, detail = None, ("not run" if "memory-safety" in not_run else "absent")
    return correct, failed, detail


def truth_detail(truth: dict[str, Any]) -> str:
    """One line of the truth's evidence: the first failing case and the flags."""
    bits = []
    if truth.get("error"):
        bits.append(truth["error"].splitlines()[0][:160])
    if truth.get("crashed"):
        bits.append(f"crashed: {truth['crashed']}")
    for case in truth.get("cases", []):
        if case.get("ok") is False:
            what = case.get("error") or json.dumps(case.get("outputs"))[:160]
            bits.append(f"{case['sizes']}: {what}")
            break
    for flag in ("writes_out_of_bounds", "reads_out_of_bounds", "inputs_changed"):
        if truth.get(flag):
            cases = [c["sizes"] for c in truth["cases"]
                     if c.get({"writes_out_of_bounds": "guards_changed", "reads_out_of_bounds": "reads_guard",
                               "inputs_changed": "inputs_changed"}[flag])]
            bits.append(f"{flag} at {cases[:3]}")
    if truth.get("memcheck_errors"):
        bits.append(f"memcheck: {truth['memcheck_errors']} errors")
    return "; ".join(bits) or "-"


def table(truth_dir: Path, label: str, grade_dir: Path) -> list[str]:
    """The Markdown table and disagreement list for one backend."""
    rows, disagreements = [], []
    agree_c = agree_m = n_c = n_m = 0
    for truth_file in sorted(truth_dir.glob("*/*.json")):
        truth = json.loads(truth_file.read_text())
        key = f"{truth_file.parent.name}/{truth_file.stem}"
        graded = grade_dir / truth_file.parent.name / truth_file.name
        if not graded.exists():
            rows.append(f"| {key} | {truth['correct']} | not graded | n/a | {truth_memory_error(truth)} | not graded | n/a |")
            continue
        correct, mem_failed, mem_detail = grader_verdicts(json.loads(graded.read_text()))
        t_mem = truth_memory_error(truth)
        c_agree = "n/a" if correct is None else ("yes" if correct == truth["correct"] else "**NO**")
        m_agree = "n/a" if mem_failed is None else ("yes" if mem_failed == t_mem else "**NO**")
        n_c += correct is not None
        agree_c += c_agree == "yes"
        n_m += mem_failed is not None
        agree_m += m_agree == "yes"
        g_c = {None: "not run", True: "pass", False: "fail"}[correct]
        g_m = {None: "not run", True: "fail", False: "pass"}[mem_failed]
        rows.append(f"| {key} | {truth['correct']} | {g_c} | {c_agree} | {t_mem} | {g_m} | {m_agree} |")
        if "NO" in c_agree or "NO" in m_agree:
            disagreements.append(f"- **{key}** (correctness {c_agree}, memory {m_agree})\n"
                                 f"  - grader memory-safety: {mem_detail[:300]}\n"
                                 f"  - truth: {truth_detail(truth)[:400]}")
    head = [f"## Backend {label} (grader results in {grade_dir})", "",
            f"Correctness agrees on {agree_c}/{n_c} graded files; memory safety on {agree_m}/{n_m}.", "",
            "| file | truth correct | grader correctness | agree | truth memory error | grader memory-safety | agree |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    return head + rows + ["", "Disagreements:" if disagreements else "No disagreement.", *disagreements, ""]


def main(argv: list[str]) -> int:
    """Print one table per backend given as LABEL=DIR."""
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        print(__doc__)
        return 2
    truth_dir = Path(argv[0])
    for spec in argv[1:]:
        label, _, grade_dir = spec.partition("=")
        print("\n".join(table(truth_dir, label, Path(grade_dir))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
