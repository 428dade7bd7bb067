"""Traffic and bank conflicts: the submission's memory counters against the reference solution's,
measured in the same run (Nsight Compute on a GPU, the emulator's exact counts without one)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, Sequence

from ..results import TestResult
from .atomic_free import atomic_free
from ..spec import COUNTER_METRICS, CheckSpec, Spec
from ..run.parent.supervisor import Prestarted, StageStop, TaskSupervisor
from ..run.tasks import Task, TaskResult
from ..tools import NcuRows, Tools, ncu_env, ncu_wrapper, parse_ncu_csv, sum_rows
from ..run.parent import profile_spool
from . import shipped as shipped_counters
from .base import Context, gate, not_run, sizes_text, verdict
from .by_line import launch_per_line
from .correctness import task_ids as correctness_task_ids
from .evidence import Evidence, gather

LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
SH_LD_WAVES = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SH_ST_WAVES = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
SH_LD_INST = "smsp__sass_inst_executed_op_shared_ld.sum"
SH_ST_INST = "smsp__sass_inst_executed_op_shared_st.sum"
# Global atomics: `atom` (old value used) and `red` (reductions, and atomics whose result is unused).
ATOM_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum"
RED_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"
ATOM_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"
RED_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"
# Shared-memory atomics: their wavefronts and warp instructions.
SH_ATOM_WAVES = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"
SH_ATOM_INST = "smsp__inst_executed_op_shared_atom.sum"


@dataclass(frozen=True)
class Measure:
    """What a counters check compares: the summed metrics, the helpers reported beside them, the words."""

    name: str
    compared: tuple[str, ...]
    reported: tuple[str, ...]
    unit: str
    advice: str


TRAFFIC = Measure(
    "Global memory traffic", (LD_SECTORS, ST_SECTORS, ATOM_SECTORS, RED_SECTORS),
    (LD_REQUESTS, ST_REQUESTS, ATOM_REQUESTS, RED_REQUESTS), "global 32-byte sectors",
    "Coalesce: consecutive threads (threadIdx.x) should touch consecutive addresses, and data reused by a "
    "block should be loaded once into shared memory.")
BANKS = Measure(
    "Shared-memory bank conflicts", (SH_LD_WAVES, SH_ST_WAVES), (SH_LD_INST, SH_ST_INST), "shared-memory wavefronts",
    "Threads of a warp should hit 32 different banks.")
# Traffic advice for a kernel whose PTX has global atomics (only then: others have none to combine).
ATOMIC_ADVICE = "Combine results inside a block (shared memory, warp shuffles) so that one atomic per block, not one per thread, goes to global memory."
# Bank-conflict advice for a conflicting line of a kernel with a two-dimensional shared tile.
PAD_ADVICE = "A column walk of a [32][32] float tile lands in one bank: pad it to [32][33]."


MEASURES = {"traffic": TRAFFIC, "bank-conflicts": BANKS}
# Every metric a spec's `counters` may name for a check (the emulator counts each of them).
COUNTABLE = COUNTER_METRICS


def compared(category: str, conf: CheckSpec) -> tuple[str, ...]:
    """The metrics a counters check sums: the spec's `counters`, else the check's default."""
    return tuple(conf.counters) if conf.counters else MEASURES[category].compared
NCU_STAGE = "ncu"
# The label of the counter checks' profile launches' seed (Context.class_seed_for: the class's, not
# the student's, so the reference is measured on the same inputs for everyone).
PROFILE_SEED = "profile"
# The global atomic metrics: exactly 0 for modules without global or generic atomics (atomic_free).
ATOMIC_METRICS = (ATOM_SECTORS, RED_SECTORS, ATOM_REQUESTS, RED_REQUESTS)


class CountersCheck:
    """Shared by traffic and bank-conflicts; `measure` says which counters are compared."""

    def __init__(self, category: str, measure: Measure):
        self.category = category
        self.measure = measure

    def plan(self, ctx: Context, conf: CheckSpec) -> Sequence[Task]:
        if not ctx.has_reference:
            # A student bundle ships the reference's emulator counts: measure the submission on the
            # emulator too (beside the GPU launches, if any), so like is compared with like.
            if shipped_counters.load(ctx.exercise.root, self.category, conf) is not None and ctx.emu_available:
                sizes = shipped_counters.sizes_of(conf)
                return [Task(id=_profile_id("submission", sizes), kind="profile", backend="emu", module="submission",
                             sizes=sizes, seeds=(ctx.class_seed_for(PROFILE_SEED),), compare=False)]
            return []
        if ctx.backend == "gpu":
            # One ncu run profiles every launch all counter checks need (ncu's start-up costs seconds);
            # its counts are exact whatever else runs on the GPU, so it need not wait. In a batch
            # (a profiler serves this GPU) it starts only once judge() knows the counts will be used.
            if ctx.tools.ncu and NCU_STAGE not in ctx.background and profile_spool.spool_folder() is None:
                ctx.start(NCU_STAGE, _ncu_counts, ctx)
            return []
        sizes = conf.emu_size or conf.size
        # Counted only for a kernel right at every size (judge's gate): after a wrong size, not launched
        # (a kernel that hung there would spend its step budget again here).
        needs = tuple(correctness_task_ids(ctx))
        return [Task(id=_profile_id(m, sizes), kind="profile", backend="emu", module=m, sizes=sizes,
                     seeds=(ctx.class_seed_for(PROFILE_SEED),), compare=False, requires=needs) for m in ("submission", "reference")]

    def judge(self, ctx: Context, conf: CheckSpec) -> Sequence[TestResult]:
        name = self.measure.name
        gated = gate(ctx, name, conf, need_all=True)
        if gated:
            return [gated]
        shipped = None if ctx.has_reference else shipped_counters.load(ctx.exercise.root, self.category, conf)
        if not ctx.has_reference and (shipped is None or not ctx.emu_available):
            not_run(ctx, name, conf, "no reference solution is available to compare with")
            return []
        if shipped is not None:
            sizes = shipped_counters.sizes_of(conf)
            counts, problem = _emu_counts(ctx, sizes, modules=("submission",))
            if counts is not None:
                counts["reference"] = shipped
            if problem:
                return [verdict(name, conf, False, f"Could not measure at {sizes_text(sizes)}: {problem}")]
            return [self._score(conf, counts, sizes, "emu", shipped=True, advice=self.advice(ctx, conf))]
        if ctx.backend == "emu":
            sizes = conf.emu_size or conf.size
            counts, problem = _emu_counts(ctx, sizes)
        else:
            sizes = conf.size
            if not ctx.tools.ncu:
                not_run(ctx, name, conf, "Nsight Compute (ncu) was not found on this machine", grader_fault=True)
                return []
            if NCU_STAGE not in ctx.background:  # deferred to here in a batch: past the gate, so needed
                ctx.start(NCU_STAGE, _ncu_counts, ctx)
            by_size, problem = ctx.finish(NCU_STAGE)
            counts = by_size.get(sizes_text(sizes)) if by_size else None
            if counts is None and not problem:
                problem = "ncu profiled no launch at this size"
            if problem:
                # The kernel already passed every correctness size: a profiler that cannot measure
                # it (a resource it could not get, a metric it does not know) is the grader's problem.
                not_run(ctx, name, conf, f"Nsight Compute could not measure at {sizes_text(sizes)}: {problem}",
                        grader_fault=True)
                return []
        if problem:
            return [verdict(name, conf, False, f"Could not measure at {sizes_text(sizes)}: {problem}")]
        scored = self._score(conf, counts, sizes, ctx.backend, advice=self.advice(ctx, conf))
        lines = launch_per_line(ctx, _profile_id("submission", sizes)) if ctx.backend == "emu" else None
        if lines:  # the submission's counts by source line, for the HTML report (extra_data.per_line)
            scored = replace(scored, extra={**scored.extra, "per_line": lines})
        return [scored]

    def advice(self, ctx: Context, conf: CheckSpec) -> str:
        """What to change when over the budget, from the submission's evidence: atomics advice only for
        a kernel whose PTX has global atomics; bank-conflict advice only for lines whose accesses
        really conflict (grader.checks.evidence.conflict_lines), naming them; the exercise's hints
        that its facts call for."""
        evidence = gather(ctx)
        hints = evidence.hints(conf, "fails")
        if self.category == "traffic":
            parts = [self.measure.advice] + ([ATOMIC_ADVICE] if evidence.has("global_atomics") else [])
        else:
            parts = bank_advice(ctx, evidence, self.measure)
        return " ".join(parts + hints)

    def _score(self, conf: CheckSpec, counts: Mapping[str, Mapping[str, float]], sizes, backend: str,
               shipped: bool = False, advice: str = "") -> TestResult:
        m = self.measure
        summed = compared(self.category, conf)
        sub = sum(counts["submission"].get(k, 0) for k in summed)
        ref = sum(counts["reference"].get(k, 0) for k in summed)
        ratio = sub / ref if ref else (1.0 if sub == 0 else float("inf"))
        passed = ratio <= conf.max_ratio
        # Partial credit falls linearly from the budget to zero at twice the budget.
        score = conf.points if passed else conf.points * max(0.0, min(1.0, (2 * conf.max_ratio - ratio) / conf.max_ratio))
        source = "Nsight Compute" if backend == "gpu" else "the emulator (exact, PTX level)"
        if shipped:
            source += "; the reference's counts come with the exercise"
        text = (f"{sub:,.0f} {m.unit} against {ref:,.0f} for the reference solution at {sizes_text(sizes)} "
                f"(ratio {ratio:.2f}, budget {conf.max_ratio:.2f}; measured by {source}).")
        if not passed:
            text += " " + (advice or m.advice)
        extra = {"ratio": round(ratio, 4) if ratio != float("inf") else "inf", "sizes": dict(sizes), "summed": list(summed),
                 "submission": dict(counts["submission"]), "reference": dict(counts["reference"])}
        return verdict(m.name, conf, passed, text, score=score, extra=extra)


def bank_advice(ctx: Context, evidence: Evidence, measure: Measure) -> list[str]:
    """Bank-conflict advice from per-line counts: the lines that conflict (evidence.conflict_lines),
    or, where none does, that the extra wavefronts come from more shared accesses."""
    if evidence.conflict_lines:
        named = "; ".join(f"{ctx.quote(line)} averages {per:.1f} wavefronts per warp access"
                          for line, per in evidence.conflict_lines[:3])
        return [f"Conflicting shared-memory accesses: {named}.", measure.advice] + ([PAD_ADVICE] if evidence.has("tile_2d") else [])
    if ctx.backend == "emu":
        return ["No shared-memory access line has bank conflicts: the extra wavefronts come from more shared-memory "
                "accesses than the reference makes (for example threads or blocks working on padding or on zeros). "
                "`grade profile` counts them per line."]
    return ["Grade with `--backend emu` to see which lines conflict."]


def _profile_id(module: str, sizes: Mapping[str, int]) -> str:
    return f"profile:{module}:{sizes_text(sizes)}"


def _emu_counts(ctx: Context, sizes: Mapping[str, int], modules: Sequence[str] = ("submission", "reference")):
    counts = {}
    for module in modules:
        result = ctx.results.get(_profile_id(module, sizes))
        if result is None or not result.launches:
            return None, f"the {module} launch did not run ({result.message if result else 'no result'})"
        launch = result.launches[0]
        if launch.get("error"):
            return None, f"the {module} launch failed: {launch['error']}"
        counts[module] = launch["emu"]["counters"]
    return counts, None


def ncu_metrics(spec: Spec) -> list[str]:
    """Every metric the spec's counter checks read (empty: no check needs ncu)."""
    checks = {c: conf for c, conf in spec.checks.items() if c in MEASURES and conf.size}
    return list(dict.fromkeys(m for c, conf in checks.items() for m in compared(c, conf) + MEASURES[c].reported))


def ncu_prestart(spec: Spec, runner: TaskSupervisor, tools: Tools, wait: float) -> Prestarted | None:
    """Start the ncu child while the submission compiles (ncu's own start-up takes seconds); it
    waits `wait` seconds for the compile, and then has its run limit. None in a batch, whose
    profiler (grader.run.parent.profile_broker) runs ncu for many gradings at once."""
    metrics = ncu_metrics(spec)
    if not (metrics and tools.ncu) or profile_spool.spool_folder() is not None:
        return None
    return runner.prestart("gpu", wrapper=ncu_wrapper(tools.ncu, metrics, [k.name for k in spec.kernel.chain]), extra_env=ncu_env(),
                           wait=wait + spec.limits.run_seconds)


@dataclass(frozen=True)
class NcuRequest:
    """One grading's ncu run as data: the launches (every submission launch before any reference
    launch), the metrics and kernels to profile; what a batch's profiler needs to run it for the grading.
    `zero`: metrics of `metrics` known to be 0 (the global atomics' where no module has any): not
    asked of ncu (fewer replay passes), filled in as 0, so the counts are the ones ncu would give."""

    exercise_root: str
    modules: Mapping[str, str]  # module name -> CUBIN
    tasks: tuple[Task, ...]
    metrics: tuple[str, ...]
    kernels: tuple[str, ...]    # the exercise's chain: one ncu row per kernel per launch
    zero: tuple[str, ...] = ()

    @property
    def asked(self) -> tuple[str, ...]:
        """The metrics ncu is asked for: `metrics` but the known zeros."""
        return tuple(m for m in self.metrics if m not in self.zero)

    def to_json(self) -> dict[str, Any]:
        return {"exercise": self.exercise_root, "modules": dict(self.modules), "tasks": [t.to_json() for t in self.tasks],
                "metrics": list(self.metrics), "kernels": list(self.kernels), "zero": list(self.zero)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "NcuRequest":
        return cls(str(data["exercise"]), {str(k): str(v) for k, v in data["modules"].items()},
                   tuple(Task.from_json(t) for t in data["tasks"]), tuple(data["metrics"]), tuple(data["kernels"]),
                   tuple(data.get("zero", ())))

    def wrapper(self, ncu: str) -> list[str]:
        """The ncu command line that profiles these launches."""
        return ncu_wrapper(ncu, list(self.asked), list(self.kernels))

    def parse(self, text: str) -> NcuRows:
        """ncu's rows from its log, each with every metric of `metrics` in order (the known zeros as 0.0)."""
        parsed = parse_ncu_csv(text, self.asked)
        if not self.zero:
            return parsed
        rows = tuple({m: (0.0 if m in self.zero else row[m]) for m in self.metrics if m in self.zero or m in row}
                     for row in parsed.rows)
        return NcuRows(rows, parsed.missing)


# (counts by size text -> module -> metric -> value, None), or (None, the problem)
NcuCounts = tuple[Optional[dict[str, dict[str, Mapping[str, float]]]], Optional[str]]


def ncu_request(ctx: Context) -> NcuRequest:
    """Profile the submission, then the reference, at every size a counter check of the spec needs,
    with every metric those checks read."""
    checks = {c: conf for c, conf in ctx.spec.checks.items() if c in MEASURES and conf.size}
    sizes = list({sizes_text(conf.size): dict(conf.size) for conf in checks.values()}.values())
    # Every submission launch comes before any reference launch: no output of the reference exists
    # in the process while student code can still run there.
    modules = ("submission", "reference")
    tasks = tuple(Task(id=f"ncu:{m}:{sizes_text(s)}", kind="profile", backend="gpu", module=m, sizes=s,
                       seeds=(ctx.class_seed_for(PROFILE_SEED),), compare=False) for m in modules for s in sizes)
    metrics = tuple(ncu_metrics(ctx.spec))
    # The global atomic metrics cost ncu replay passes of their own; read from both modules' PTX
    # (compiled with their CUBINs), where neither has a global or generic atomic they are 0.
    ptx = ctx.runner.modules.get("emu", {})
    zero = tuple(m for m in ATOMIC_METRICS if m in metrics) if atomic_free(ptx.get(m) for m in modules) else ()
    return NcuRequest(str(ctx.exercise.root), dict(ctx.runner.modules.get("gpu", {})), tasks, metrics,
                      tuple(k.name for k in ctx.spec.kernel.chain), zero)


def _ncu_counts(ctx: Context) -> NcuCounts:
    """The counts of the grading's ncu run (ncu_request): from the batch's profiler where one serves
    this GPU and answers in time, else from an ncu run of its own."""
    request = ncu_request(ctx)
    spool = profile_spool.spool_folder()
    if spool is not None:
        # Waiting in the profiler's queue (one ncu at a time per GPU) is allowed one run limit.
        with ctx.runner.clock.measure("ncu (batch profiler)"):
            answer = profile_spool.ask(spool, request.to_json(), ctx.runner.workdir / "ncu-answer.json",
                                       wait=2 * ctx.spec.limits.run_seconds)
        if answer is not None:
            return answer.get("by_size"), answer.get("problem")
        # The wait in the batch profiler's queue is not the kernel's doing and keeps its own limit; but
        # once the grading's deadline has passed (Context.finish), no lone ncu run starts.
        if ctx.stop_event(NCU_STAGE).is_set():
            return None, ctx.stop_event(NCU_STAGE).reason or "the profiler's run was stopped"
    prestarted = ctx.take_prestart(NCU_STAGE)
    if prestarted is not None:
        # Started before the PTX was known (ncu_prestart), asking for every metric: it measures them
        # all, which the known zeros equal.
        request = replace(request, zero=())
    return profile_alone(ctx.runner, request, ctx.tools.ncu, prestarted=prestarted, stop=ctx.stop_event(NCU_STAGE))


def profile_alone(runner: TaskSupervisor, request: NcuRequest, ncu: str, prestarted: Prestarted | None = None,
                  stop: StageStop | None = None, gpu: str | None = None) -> NcuCounts:
    """One ncu run (a child, restarted after a crash as every launch stage is) for one grading's request;
    setting `stop` kills it (its counts are no longer needed). `gpu`: the CUDA_VISIBLE_DEVICES value
    the runner's children get, where it is not this process's own (tools.ncu_env)."""
    # No turns across gradings: ncu's own lock (in the temp folder they share, tools.ncu_env) already
    # profiles one kernel at a time, while each run's start-up (about 1 s at its first profiled
    # launch) overlaps other runs' (bench/ncu_startup.sh).
    stage = runner.run(request.tasks, backend="gpu", wrapper=request.wrapper(ncu), log_name="ncu", extra_env=ncu_env(gpu),
                       prestarted=prestarted, stop=stop)
    text = stage.log_text() + "\n" + "\n".join(c.stdout for c in stage.children)
    return counts_from(request, stage.results, request.parse(text))


def ncu_failure_text(module: str, message: str) -> str:
    """What is known when a launch failed under ncu: ncu's run failed, and what it left. Under ncu the
    process running the kernel is ncu, which replays the launch; counts are only needed for kernels
    that already ran right without it (the reference; a submission past correctness), so the
    probable cause is the profiler's run (several at once on one GPU), not the kernel."""
    detail = (message or "no result").replace("the process running your kernel", "the ncu process")
    return (f"the {module} launch under ncu failed ({detail}); where the kernel ran right without the profiler "
            "(the reference always does), the probable cause is ncu's own run (e.g. several profiler runs on one "
            "GPU at once), not the kernel")


def counts_from(request: NcuRequest, results: Mapping[str, TaskResult], parsed: NcuRows) -> NcuCounts:
    """The counts by size from the request's launch results and its ncu rows (in launch order), or a problem."""
    if parsed.missing:
        return None, f"ncu did not report {', '.join(parsed.missing)} (unknown metric name on this GPU?)"
    for t in request.tasks:
        r = results.get(t.id)
        if r is None or r.status != "ok":
            return None, ncu_failure_text(t.module, r.message if r else "")
    per_task = len(request.kernels)  # one row per kernel of the chain: summed per launch
    if len(parsed.rows) != len(request.tasks) * per_task:
        return None, f"ncu reported {len(parsed.rows)} profiled launch(es), expected {len(request.tasks) * per_task}"
    by_size: dict[str, dict[str, Mapping[str, float]]] = {}
    for t, row in zip(request.tasks, sum_rows(parsed.rows, per_task)):
        by_size.setdefault(sizes_text(t.sizes), {})[t.module] = row
    return by_size, None
