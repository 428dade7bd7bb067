"""Grading a Triton exercise on the CPU: the student's launcher and kernel run under Triton's
interpreter in a walled-off child (grader/triton/sandbox.py), watched (grader/triton/watch.py).

The pipeline: read the submission (a .py module) -> load it in the child (torch and Triton lent) ->
every public and hidden case: inputs from the exercise's harness.py, tensors made in the child inside
poisoned guard regions, the launcher called `repeat` times -> the grader compares what came back
with the float64 reference, checks every guard and input, and reads the watch's findings -> the
reference solution's traffic at the traffic size, in a child of its own -> one test per check.

What comes back from the child is the student's process's word: the buffers are judged here; the
watch's record is read defensively (numbers and short strings only) and is evidence, not a wall.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping, Sequence

import numpy as np

from .. import submission as submission_module
from ..errors import SpecError
from ..backends.base import POISON_BITS
from ..exercise import Exercise
from ..grading.output import shown_output
from ..grading.seed import derive_seed
from ..grading.submitted import Submitted
from ..notebook import SourceMap
from ..pyexercise.grade import hide_paths
from ..results import NotRun, Report, TestResult, inert
from ..submission import PolicyVerdict
from . import gpu as tritongpu
from . import timing
from .sandbox import CaseOutcome, TritonWorker, available
from .spec import TritonSpec, sizes_label

BACKEND = "emu"
LOAD_NAME = "Loads"
MAX_SHOWN = 6
TITLES = {"correctness": "Correct at the public sizes", "hidden": "Correct at the hidden sizes",
          "memory-safety": "Memory safety (watched loads and stores, guard regions)",
          "traffic": "Memory traffic (modelled sectors against the reference)", "performance": timing.TITLE}
CATEGORY = {"correctness": "correctness", "hidden": "correctness", "memory-safety": "memory-safety", "traffic": "traffic",
            "performance": "performance"}


def read(path: Path, spec: TritonSpec) -> Submitted:
    """The .py module, read once and held to the size limit; a refusal says why."""
    path = Path(path)
    name = submission_module.display_name(path)
    plain = SourceMap(name)
    sub, verdict = submission_module.read(path, name=name)
    if sub is None:
        return Submitted(name, None, None, PolicyVerdict(False, verdict.message.replace("submit the .cu source",
                                                                                        "submit your .py file")), plain)
    if sub.size > spec.limits.max_source_bytes:
        return Submitted(name, sub.source, sub.sha256, PolicyVerdict(False, f"{name} is {sub.size:,} bytes; the limit is "
                                                                              f"{spec.limits.max_source_bytes:,}"), plain)
    if not sub.source.strip():
        return Submitted(name, sub.source, sub.sha256, PolicyVerdict(False, f"{name} is empty; submit your kernel and launcher"), plain)
    return Submitted(name, sub.source, sub.sha256, PolicyVerdict(True), plain)


def harness(exercise: Exercise) -> ModuleType:
    """The exercise's harness.py (staff code, loaded in the grader): make_inputs and reference."""
    path = exercise.root / "harness.py"
    spec = importlib.util.spec_from_file_location(f"kernel_grader_triton_harness_{exercise.id}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the exercise author's error
        raise SpecError(f"{path}: failed to import: {type(exc).__name__}: {exc}") from None
    for fn in ("make_inputs", "reference"):
        if not callable(getattr(module, fn, None)):
            raise SpecError(f"{path}: must define {fn}()")
    return module


def case_params(spec: TritonSpec, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> list[dict]:
    """The launcher's parameters for one case, as the child makes them."""
    out = []
    for p in spec.params:
        if p.is_tensor:
            doc = {"name": p.name, "role": p.role, "dtype": p.dtype, "shape": list(p.shape_for(sizes))}
            bits = _float_poison(spec, p)
            if bits is not None:
                doc["poison"] = bits
            if p.role == "in":
                doc["value"] = np.ascontiguousarray(inputs[p.name], dtype=np.float32 if p.dtype in ("float16", "bfloat16") else p.dtype)
            out.append(doc)
        else:
            out.append({"name": p.name, "role": p.role, "value": p.scalar_for(sizes)})
    return out


@dataclasses.dataclass
class Findings:
    """Per check: the problems found (short texts), in the order met."""

    by_check: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    ran: dict[str, int] = dataclasses.field(default_factory=dict)
    failed_runs: int = 0  # cases whose launcher raised, hung or crashed
    right: int = 0  # cases (public or hidden) whose outputs were all right
    # Seen but not failing by itself: a load of an output element before anything stored it. Its value
    # is undefined; where it reached an output, the poison fails correctness and this says why; where
    # the outputs are right the load was dead (as the CUDA kind, evidence, never a verdict).
    warnings: list[str] = dataclasses.field(default_factory=list)

    def add(self, check: str, text: str | None = None) -> None:
        self.by_check.setdefault(check, [])
        if text and text not in self.by_check[check]:
            self.by_check[check].append(text)

    def count(self, check: str) -> None:
        self.ran[check] = self.ran.get(check, 0) + 1


def judge_case(spec: TritonSpec, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray],
               expected: Mapping[str, np.ndarray], outcome: CaseOutcome, where: SourceMap, check: str,
               findings: Findings, prefix: str = "") -> None:
    """Judge one case's buffers (correctness, under `check`) and its guards and watch (memory safety).
    `prefix` starts each finding's label (where it was found: the GPU's compiled run)."""
    wrong_before = len(findings.by_check.get(check, []))
    _judge_case(spec, sizes, inputs, expected, outcome, where, check, findings, prefix)
    if len(findings.by_check.get(check, [])) == wrong_before:
        findings.right += 1


def _judge_case(spec: TritonSpec, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray],
                expected: Mapping[str, np.ndarray], outcome: CaseOutcome, where: SourceMap, check: str,
                findings: Findings, prefix: str = "") -> None:
    label = prefix + sizes_label(sizes)
    findings.count(check)
    findings.count("memory-safety")
    if not outcome.ok:
        at = f" (at {where.describe(outcome.line)})" if outcome.line else ""
        findings.add(check, f"{label}: {spec.launcher}() failed: {outcome.error}{at}")
        if tritongpu.fault_finding(outcome):
            findings.add("memory-safety", f"{label}: the kernel faulted on the GPU: {outcome.error[:200]}")
        else:
            findings.failed_runs += 1
        findings.add("memory-safety")
        _watch_findings(outcome.trace, label, where, findings)
        return
    trace = outcome.trace if isinstance(outcome.trace, Mapping) else {}
    if not trace.get("launches"):
        findings.add(check, f"{label}: {spec.launcher}() launched no Triton kernel (the grader watches the kernel's "
                            "loads and stores: compute with a @triton.jit kernel, not with torch)")
    g = spec.guard
    unwritten = {_text(r.get("tensor")): _int(r.get("elements")) for r in _records(trace.get("unwritten"))
                 if isinstance(r.get("elements"), int)}
    for launch, snap in enumerate(outcome.buffers):
        # The same problem at every launch is said once; one only a later launch shows says which.
        nth = f" (at launch {launch + 1} of {len(outcome.buffers)} on the same tensors)" if launch else ""
        before = sum(map(len, findings.by_check.values()))
        for p in spec.tensors:
            buf = snap.get(p.name)
            shape = p.shape_for(sizes)
            n = int(np.prod(shape))
            if not isinstance(buf, np.ndarray) or buf.size != n + 2 * g:
                findings.add(check, f"{label}: the buffer of {p.name} came back damaged{nth}")
                continue
            body, guards = buf[g:g + n], np.concatenate([buf[:g], buf[g + n:]])
            bits = _float_poison(spec, p)
            if not _poison_intact(guards, bits):
                which = np.nonzero(~_is_poison(guards, bits))[0][0]
                side = "before" if which < g else "after"
                off = (which - g) if side == "before" else (which - g + 1)
                findings.add("memory-safety", f"{label}: the kernel wrote {'past the end' if side == 'after' else 'before the start'} "
                                              f"of {p.name} (guard element {off:+d}){nth}")
            if p.role == "in":
                if not np.array_equal(body.astype(np.float64), np.asarray(inputs[p.name], dtype=np.float64).ravel(), equal_nan=True):
                    findings.add(check, f"{label}: the input {p.name} was changed{nth}")
                continue
            problem = _compare(body.astype(np.float64), np.asarray(expected[p.name], dtype=np.float64).ravel(), spec,
                               _is_poison(body, bits), stored_all=unwritten.get(p.name) == 0)
            if problem:
                findings.add(check, f"{label}: {p.name} {problem}{nth}")
        if launch == 0 and sum(map(len, findings.by_check.values())) > before:
            break  # wrong at the first launch: the later ones say nothing new
    findings.add(check)
    findings.add("memory-safety")
    _watch_findings(trace, label, where, findings)


def _watch_findings(trace: Any, label: str, where: SourceMap, findings: Findings) -> None:
    if not isinstance(trace, Mapping):
        return
    for f in _records(trace.get("out_of_bounds")):
        tensor, offset = _text(f.get("tensor")), f.get("offset")
        whose = "the launcher's tensor passed as " if f.get("launcher") is True else ""
        what = (f"{whose}{tensor}[{offset}] (it has {_int(f.get('numel'))} elements)" if tensor and isinstance(offset, int)
                else "an address outside every tensor")
        findings.add("memory-safety", f"{label}: an unmasked {_text(f.get('kind'))} of {what} by program "
                                      f"{_program(f.get('program'))}, {_int(f.get('lanes'))} lane(s), at {where.describe(_int(f.get('line')))}")
    for f in _records(trace.get("misaligned")):
        findings.add("memory-safety", f"{label}: a misaligned {_text(f.get('kind'))} (an address {_int(f.get('address_mod'))} "
                                      f"bytes past a {_int(f.get('itemsize'))}-byte element) by program "
                                      f"{_program(f.get('program'))} at {where.describe(_int(f.get('line')))}")
    for f in _records(trace.get("uninitialised")):
        if len(findings.warnings) >= MAX_SHOWN:
            break
        text = (f"a load of {_text(f.get('tensor'))}[{_int(f.get('offset'))}] before anything was stored there, by program "
                f"{_program(f.get('program'))} at {where.describe(_int(f.get('line')))}: an output holds no data when the "
                "kernel starts (the grader fills it with NaN); store each element before loading it, or do not load it")
        if text not in findings.warnings:
            findings.warnings.append(text)


def traffic_total(trace: Any) -> tuple[int, int, list[dict]]:
    """(sectors, requests, per-line rows) of a case's watched launch, read defensively."""
    rows = [r for r in _records(trace.get("traffic") if isinstance(trace, Mapping) else None)
            if all(isinstance(r.get(k), int) for k in ("sectors", "requests", "line"))]
    return sum(r["sectors"] for r in rows), sum(r["requests"] for r in rows), rows


def _records(value: Any) -> list[Mapping]:
    return [v for v in value[:50] if isinstance(v, Mapping)] if isinstance(value, list) else []


def _text(value: Any) -> str:
    return str(value)[:40] if isinstance(value, (str, int)) else "?"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _program(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return str(tuple(value)) if any(value[1:]) else str(value[0]) if value else "?"
    return "?"


def _float_poison(spec: TritonSpec, p: Any) -> int | None:
    """The bits the child fills a float32/float64 tensor (guards and outputs) with: the CUDA kind's NaN
    (POISON_BITS) with the param's position in its low mantissa bits, so each tensor's fill is its own.
    NaN arithmetic carries an operand's payload: with one pattern for all, an unmasked load of x's
    guard would store x's very fill into out, read back as "never written"."""
    size = {"float32": 4, "float64": 8}.get(p.dtype)
    if size is None:
        return None
    position = next(i for i, q in enumerate(spec.params) if q.name == p.name)
    return int(POISON_BITS[size]) ^ (position << 8)


def _is_poison(values: np.ndarray, bits: int | None = None) -> np.ndarray:
    """Which elements still hold the child's fill: a bit test where the tensor has its own pattern (a
    NaN the kernel computed, or stored past the end, is not poison); else any NaN (the float64 images
    of 2-byte floats keep no payload), or the integer pattern."""
    if values.dtype.kind == "f":
        if bits is not None and values.dtype.itemsize in (4, 8):
            return np.ascontiguousarray(values).view(np.uint32 if values.dtype.itemsize == 4 else np.uint64) == bits
        return np.isnan(values)
    return values == -0x5A5A5A5B


def _poison_intact(values: np.ndarray, bits: int | None = None) -> bool:
    return bool(np.all(_is_poison(values, bits)))


def _compare(got: np.ndarray, expected: np.ndarray, spec: TritonSpec, poison: np.ndarray,
             stored_all: bool = False) -> str | None:
    """Why `got` is not `expected` within the spec's tolerance, or None; `poison` marks the elements
    still holding the grader's fill (never written), as against NaN the kernel wrote. `stored_all`:
    the watch saw every element stored, so a NaN still there was computed (where the fill carries no
    pattern of its own: 2-byte floats)."""
    never = poison & ~np.isnan(expected)
    if never.any():
        first = int(np.nonzero(never)[0][0])
        if stored_all:
            return (f"has {int(never.sum())} NaN element(s), the first at [{first}]: the kernel stored every element, so "
                    "it computed them (from a NaN it loaded, a lane past a tensor; or from an overflow to inf)")
        return f"has {int(never.sum())} element(s) never written (still the NaN the grader filled it with), the first at [{first}]"
    bad = ~(np.abs(got - expected) <= spec.atol + spec.rtol * np.abs(expected))
    bad &= ~(np.isnan(got) & np.isnan(expected))
    if bad.any():
        first = int(np.nonzero(bad)[0][0])
        computed_nan = int((bad & np.isnan(got)).sum())
        nan_note = f"; {computed_nan} of them NaN written by the kernel" if computed_nan else ""
        return (f"is wrong at {int(bad.sum())} of {got.size} elements{nan_note}; the first at [{first}]: got {got[first]:.6g}, "
                f"expected {expected[first]:.6g} (rtol {spec.rtol:g}, atol {spec.atol:g})")
    return None


def grade(exercise: Exercise, sub: Submitted, *, seed: int | None = None, started: float | None = None,
          requested: str = "auto") -> Report:
    """Grade one Triton submission; never raises for anything the submission does. On the CPU path
    always; with `requested` "gpu" or "auto" and a usable GPU, also compiled on the GPU (grader/triton/gpu.py)."""
    started = time.perf_counter() if started is None else started
    spec: TritonSpec = exercise.spec  # type: ignore[assignment]
    if seed is None:
        seed = derive_seed(spec.id, sub.sha256)
    notes: list[str] = []
    backend = [BACKEND]

    def report(tests: Sequence[TestResult], not_run: Sequence[NotRun] = (), output: str = "", device: str = "") -> Report:
        tests = [dataclasses.replace(t, output=inert(t.output)) for t in tests]
        return Report(exercise=spec.id, submission=sub.name, sha256=sub.sha256, backend=backend[0],
                      device=device or "CPU, Triton's interpreter", tests=tuple(tests), not_run=tuple(not_run),
                      max_score=spec.max_score, seconds=time.perf_counter() - started, seeds={"base": int(seed)},
                      notes=tuple(map(inert, notes)), student_output=output)

    if not sub.ok:
        tests, skipped = not_loaded(spec, f"Refused before loading: {sub.verdict.message}")
        return report(tests, skipped)
    missing = available()
    if missing:
        return report([], not_run_all(spec, f"the Triton CPU path cannot run here: {missing}"))
    module = harness(exercise)
    rng = np.random.default_rng(seed)
    cases = [("correctness", c) for c in spec.public_cases] + [("hidden", c) for c in spec.hidden_cases]
    prepared = []
    for check, sizes in cases:
        inputs = {k: np.asarray(v) for k, v in module.make_inputs(dict(sizes), rng).items()}
        expected = module.reference({k: v.copy() for k, v in inputs.items()}, dict(sizes))
        prepared.append((check, sizes, inputs, expected))
    findings = Findings()
    traffic = None
    index, gpu_note = tritongpu.gpu_index(requested)
    notes += [gpu_note] if gpu_note else []
    # The reference's traffic comes from a child of its own (never the student's process), started
    # now so that its start-up overlaps the student's cases; the GPU child runs beside them too.
    with ThreadPoolExecutor(max_workers=2) as pool:
        reference = (pool.submit(_reference_traffic, exercise, spec, module, seed)
                     if spec.traffic_size is not None and spec.points.get("traffic") else None)
        on_gpu = (pool.submit(tritongpu.run_cases, sub.source, spec, prepared, case_params, index, hide_paths(exercise))
                  if index is not None else None)
        worker = TritonWorker(sub.source, launcher=spec.launcher, limits=spec.limits, hide=hide_paths(exercise))
        try:
            loaded, on_cpu = _run_cases(worker, spec, prepared)
            if reference is not None and loaded.ok and loaded.defined.get(spec.launcher) and not worker.dead:
                traffic = _traffic(worker, spec, module, seed, reference.result())
        finally:
            worker.close()
        gpu_run = on_gpu.result() if on_gpu is not None else None
    isolation = worker.isolation
    output = shown_output(worker.output)
    device = f"CPU, Triton's interpreter in a child process ({isolation})"
    compiled = {}
    if gpu_run is not None and gpu_run.fault:
        notes.append(f"The GPU path did not run ({gpu_run.fault[:300]}); this is the grader's environment, not a "
                     "verdict: graded on the CPU path only.")
    elif gpu_run is not None and (loaded.ok or worker.fault):
        backend[0] = "gpu"
        device = (f"GPU {index}: Triton's compiler ({gpu_run.seconds:.1f} s); and the CPU: Triton's interpreter, "
                  f"every load and store watched; each in a child process ({isolation})")
        compiled = dict(gpu_run.outcomes)
        output = shown_output(worker.output + gpu_run.output)
    limited = []
    for i, outcome in on_cpu:
        check, sizes, inputs, expected = prepared[i]
        gpu_outcome = compiled.get(i)
        if _interpreter_limit(outcome, gpu_outcome, spec, sizes, inputs, expected, sub.where, check):
            # The interpreter raised where the compiled kernel ran and was right: Triton's interpreter
            # cannot run this kernel (a construct it lacks), which is not the student's to answer for.
            limited.append(f"{sizes_label(sizes)}: {outcome.error[:160]}")
            continue
        judge_case(spec, sizes, inputs, expected, outcome, sub.where, check, findings)
    for i, outcome in sorted(compiled.items()):
        check, sizes, inputs, expected = prepared[i]
        judge_case(spec, sizes, inputs, expected, outcome, sub.where, check, findings, prefix=tritongpu.PREFIX)
    if limited:
        notes.append(f"Triton's interpreter could not run {len(limited)} case(s) that the compiled kernel ran right on "
                     f"the GPU; those cases are judged by the GPU alone (guard regions, no load-by-load watch): "
                     + "; ".join(limited[:3]))
    if worker.fault and gpu_run is not None and gpu_run.loaded is not None:
        # The interpreter cannot run here, the compiled path can: the GPU alone judges loading and the
        # cases (a submission that does not load there is the student's, as on the CPU).
        limited.append(worker.fault)
        notes.append(f"The CPU path did not run ({worker.fault[:300]}); the cases were judged on the GPU alone.")
        loaded = gpu_run.loaded
    elif worker.fault:
        return report([], not_run_all(spec, f"{worker.fault}; this is the grader's fault, not a verdict", fault=True),
                      device=device)
    if not loaded.ok:
        at = f" (at {sub.where.describe(loaded.line)})" if loaded.line else ""
        tests, skipped = not_loaded(spec, f"{sub.name} does not load: {loaded.error}{at}")
        return report(tests, skipped, output, device)
    if not loaded.defined.get(spec.launcher):
        tests, skipped = not_loaded(spec, f"{sub.name} loads but does not define {spec.signature}: the grader calls it "
                                          "with the tensors and sizes")
        return report(tests, skipped, output, device)
    tests = [TestResult(LOAD_NAME, "compile", 0.0, 0.0, True, f"{sub.name} loads and defines {spec.launcher}().")]
    not_run: list[NotRun] = []
    gate = not findings.by_check.get("correctness")
    for check in ("correctness", "hidden", "memory-safety"):
        points = spec.points.get(check)
        if not points:
            continue
        problems = findings.by_check.get(check, [])
        if check == "memory-safety" and not problems and not findings.right:
            # As for a kernel: memory safety is judged on a kernel that is right somewhere; until then its
            # findings fail it, and their absence earns nothing (a skeleton that stores nothing is "safe").
            tests.append(TestResult(TITLES[check], CATEGORY[check], 0.0, points, False,
                                    "Not graded: the kernel did not produce a correct result at any size yet; memory "
                                    "safety is judged once it does.", extra={"gated": True}))
            continue
        if check == "memory-safety" and not problems and findings.failed_runs:
            tests.append(TestResult(TITLES[check], CATEGORY[check], 0.0, points, False,
                                    f"Not graded: {findings.failed_runs} case(s) did not run to the end, so their loads and "
                                    "stores were not all seen.", extra={"gated": True}))
            continue
        ran = findings.ran.get(check, 0)
        text = (f"{ran} case(s) checked; all passed." if not problems else
                "\n".join([f"{len(problems)} problem(s):"] + [f"- {p}" for p in problems[:MAX_SHOWN]]
                          + ([f"- ... and {len(problems) - MAX_SHOWN} more"] if len(problems) > MAX_SHOWN else [])))
        if findings.warnings and (check == "memory-safety" or problems):
            head = ("Seen as well (not a failure by itself: the outputs say whether it mattered):" if check == "memory-safety"
                    else "Possibly why:")
            text += "\n" + "\n".join([head] + [f"- {w}" for w in findings.warnings])
        tests.append(TestResult(TITLES[check], CATEGORY[check], 0.0 if problems else points, points, not problems, text,
                                visibility="hidden" if check == "hidden" else "visible"))
    if spec.points.get("traffic"):
        test = _traffic_test(spec, traffic, gate)
        mine = traffic["mine"] if traffic else None
        if limited and not test.passed and (mine is None or not mine.ok) and not test.extra.get("gated"):
            # The model needs the interpreter; where it cannot run this kernel, the check is not run
            # (the grader's limit: its points leave the denominator), never failed.
            not_run.append(NotRun(TITLES["traffic"], "traffic", f"Triton's interpreter could not run the traffic case "
                                  f"({(mine.error if mine else limited[-1])[:160]}), and the modelled sectors need it", spec.points["traffic"],
                                  "exclude", True))
        else:
            tests.append(test)
    if spec.points.get("performance"):
        # Only where the compiled cases ran on a GPU; after every other child is closed (nothing of this
        # grading's runs beside the timed launches).
        timed = timing.performance(exercise, spec, sub.source, module, seed, gpu=index if backend[0] == "gpu" else None,
                                   gate=gate, params_of=case_params, hide=hide_paths(exercise))
        (tests if isinstance(timed, TestResult) else not_run).append(timed)
    return report(tests, not_run, output, device)


def _run_cases(worker: TritonWorker, spec: TritonSpec, prepared: list):
    """Every case in the student's child (left open for the traffic case): what loaded, and each case's
    outcome as (its index in `prepared`, the outcome), judged by the caller."""
    loaded, outcomes = worker.loaded, []
    if loaded.ok and loaded.defined.get(spec.launcher):
        for i, (check, sizes, inputs, _expected) in enumerate(prepared):
            if check == "hidden" and not spec.points.get("hidden"):
                continue
            outcomes.append((i, worker.run_case(case_params(spec, inputs, sizes), guard=spec.guard, repeat=spec.repeat)))
            if worker.dead:
                worker.restart()
    return loaded, outcomes


def _interpreter_limit(cpu: CaseOutcome, gpu: CaseOutcome | None, spec: TritonSpec, sizes, inputs, expected,
                       where: SourceMap, check: str) -> bool:
    """Whether a case failed on the interpreter only by raising (not by a time limit or a dead child),
    while its compiled run on the GPU finished with every output right."""
    if cpu.ok or gpu is None or not gpu.ok or not cpu.error or "time limit" in cpu.error or "did not finish" in cpu.error:
        return False
    probe = Findings()
    judge_case(spec, sizes, inputs, expected, gpu, where, check, probe)
    return probe.right == 1


def _traffic_inputs(spec: TritonSpec, module: ModuleType, seed: int) -> list[dict]:
    """The traffic case's parameters: the same for the submission and the reference."""
    sizes = dict(spec.traffic_size)
    inputs = {k: np.asarray(v) for k, v in module.make_inputs(dict(sizes), np.random.default_rng(seed)).items()}
    return case_params(spec, inputs, sizes)


def _reference_traffic(exercise: Exercise, spec: TritonSpec, module: ModuleType, seed: int) -> CaseOutcome | None:
    """The reference solution's watched launch at the traffic size, in a child of its own."""
    if not exercise.solution_path.is_file():
        return None
    with TritonWorker(exercise.solution_path.read_text(encoding="utf-8"), launcher=spec.launcher, limits=spec.limits,
                      hide=hide_paths(exercise)) as ref:
        return ref.run_case(_traffic_inputs(spec, module, seed), guard=spec.guard, repeat=1) if ref.loaded.ok else None


def _traffic(worker: TritonWorker, spec: TritonSpec, module: ModuleType, seed: int, reference: CaseOutcome | None) -> dict:
    """The submission's and the reference's modelled traffic at the traffic size."""
    mine = worker.run_case(_traffic_inputs(spec, module, seed), guard=spec.guard, repeat=1)
    return {"sizes": dict(spec.traffic_size), "mine": mine, "reference": reference}


def _traffic_test(spec: TritonSpec, traffic: dict | None, gate: bool) -> TestResult:
    points = spec.points["traffic"]
    name = TITLES["traffic"]
    if not gate:
        return TestResult(name, "traffic", 0.0, points, False, "Not judged: the kernel is not correct at every public size.",
                          extra={"gated": True})
    if traffic is None or traffic["mine"] is None or not traffic["mine"].ok:
        why = traffic["mine"].error if traffic and traffic["mine"] is not None else "it did not run"
        return TestResult(name, "traffic", 0.0, points, False, f"The traffic case failed: {why}")
    sectors, requests, rows = traffic_total(traffic["mine"].trace)
    label = sizes_label(traffic["sizes"])
    lines = [f"At {label}: {sectors:,} sectors in {requests:,} warp requests (modelled as the compiled kernel's warps issue them)."]
    for r in rows[:MAX_SHOWN]:
        lines.append(f"- line {r['line']}: {_text(r.get('kind'))} {r['sectors']:,} sectors, {r['requests']:,} requests, "
                     f"{_int(r.get('distinct')):,} distinct, vector width {_int(r.get('vector'))}")
    ref = traffic.get("reference")
    if ref is None or not ref.ok:
        lines.append("The reference solution did not run here; nothing to compare with.")
        return TestResult(name, "traffic", points, points, True, "\n".join(lines), extra={"sectors": sectors})
    ref_sectors, _, _ = traffic_total(ref.trace)
    limit = math.floor(ref_sectors * (1 + spec.traffic_slack))
    ok = sectors <= limit
    lines.append(f"The reference moves {ref_sectors:,} sectors; the limit is {limit:,} (+{spec.traffic_slack:.0%}).")
    return TestResult(name, "traffic", points if ok else 0.0, points, ok, "\n".join(lines),
                      extra={"sectors": sectors, "reference_sectors": ref_sectors})


def not_loaded(spec: TritonSpec, reason: str) -> tuple[list[TestResult], list[NotRun]]:
    """Every test failed: the load test with the reason, each check as not graded."""
    tests = [TestResult(LOAD_NAME, "compile", 0.0, 0.0, False, reason)]
    for check in ("correctness", "hidden", "memory-safety", "traffic", "performance"):
        points = spec.points.get(check)
        if points:
            tests.append(TestResult(TITLES[check], CATEGORY[check], 0.0, points, False, "Not graded: the submission did not load.",
                                    visibility="hidden" if check == "hidden" else "visible", extra={"gated": True}))
    return tests, []


def not_run_all(spec: TritonSpec, reason: str, fault: bool = True) -> list[NotRun]:
    """Every check not run, for a reason that is the grader's (its points leave the denominator)."""
    return [NotRun(TITLES[c], CATEGORY[c], reason, spec.points[c], "exclude", fault) for c in spec.points if spec.points[c]]
