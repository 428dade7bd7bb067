"""`grade profile`: the memory counters of one launch, in total and per source line.

On the emulator the counts are exact and attributed to lines through the PTX `.loc` records; on a
GPU, Nsight Compute measures the same metric names for the whole launch.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from . import exercise as exercise_module
from . import notebook as notebook_module
from .errors import UsageError
from .grading.backend import resolve_backend
from .grading.children import child_env
from .kinds.cuda_compile import compile_problem, compile_submission
from .run.parent.supervisor import TaskSupervisor
from .run.tasks import Task
from .tools import PROFILE_METRICS, find_tools, ncu_env, ncu_wrapper, parse_ncu_csv, sum_rows

METRICS = PROFILE_METRICS
# Short column titles for the per-line table, in METRICS order.
TITLES = ("ld sectors", "st sectors", "ld req", "st req", "sh ld inst", "sh st inst", "sh ld waves", "sh st waves",
          "atom sect", "red sect", "atom req", "red req", "sh atom inst", "sh atom wave")


@dataclass(frozen=True)
class Profile:
    """Counters of one launch: totals keyed by Nsight Compute names, and per line where known."""

    backend: str
    sizes: Mapping[str, int]
    counters: Mapping[str, float]
    per_line: Mapping[int, Mapping[str, float]] = field(default_factory=dict)
    source: str = ""
    source_name: str = ""
    error: str = ""
    place: Mapping[int, str] = field(default_factory=dict)  # line -> "notebook cell C, line L" for a notebook

    def to_json(self) -> dict:
        doc = {"backend": self.backend, "sizes": dict(self.sizes), "counters": dict(self.counters),
               "per_line": {str(k): dict(v) for k, v in sorted(self.per_line.items())}, "error": self.error}
        if self.place:
            doc["per_line_place"] = {str(k): v for k, v in sorted(self.place.items())}
        return doc


def parse_sizes(text: str, names: tuple[str, ...]) -> dict[str, int]:
    """"256" for a one-variable exercise, or "rows=70,cols=45"."""
    text = text.strip()
    try:
        if "=" not in text:
            if len(names) != 1:
                raise UsageError(f"--size needs every size variable: e.g. {','.join(f'{n}=64' for n in names)}")
            return {names[0]: int(text)}
        pairs = dict(part.split("=", 1) for part in text.split(","))
        sizes = {k.strip(): int(v) for k, v in pairs.items()}
    except ValueError:
        raise UsageError(f"--size {text!r}: expected a number or name=number pairs") from None
    if set(sizes) != set(names):
        raise UsageError(f"--size must give exactly {', '.join(names)}")
    return sizes


def profile(exercise_dir: Path, submission: Path, sizes: Mapping[str, int], *, backend: str = "auto", seed: int = 1) -> Profile:
    """Compile the submission and measure one launch at `sizes`."""
    exercise = exercise_module.load(Path(exercise_dir))
    chosen, gpu, _ = resolve_backend(backend)
    sub, verdict, where = notebook_module.read_checked(Path(submission), exercise.spec.limits)
    if not verdict.ok:
        return Profile(chosen, sizes, {}, error=verdict.message)
    result = _measure(exercise, sub, sizes, chosen, gpu, seed)
    if not where.is_notebook:
        return result
    places = {line: where.describe(line) for line in result.per_line}
    return replace(result, error=where.rewrite_log(where.rewrite_text(result.error)), place=places)


def _measure(exercise, sub, sizes: Mapping[str, int], chosen: str, gpu, seed: int) -> Profile:
    tmp = Path(tempfile.mkdtemp(prefix="kernel-grader-profile-"))
    try:
        compiled = compile_submission(exercise, sub, gpu.arch if gpu else "sm_90", tmp)
        problem = compile_problem(exercise.spec, sub.name, compiled.get("submission", {}))
        if problem:
            return Profile(chosen, sizes, {}, source=sub.source, source_name=sub.name, error=problem)
        mine = compiled["submission"]
        runner = TaskSupervisor(exercise_root=exercise.root, workdir=tmp, limits=exercise.spec.limits, env=child_env(tmp),
                        modules={"gpu": {"submission": mine["cubin"]}, "emu": {"submission": mine["ptx"]}})
        task = Task(id="profile", kind="profile", backend=chosen, sizes=dict(sizes), seeds=(seed,), compare=False)
        if chosen == "emu":
            return _from_emu(runner, task, sub, sizes)
        return _from_ncu(runner, task, sub, sizes, [k.name for k in exercise.spec.kernel.chain])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _from_emu(runner: TaskSupervisor, task: Task, sub, sizes) -> Profile:
    result = runner.run([task], backend="emu").results.get("profile")
    if result is None or not result.launches:
        return Profile("emu", sizes, {}, source=sub.source, source_name=sub.name, error=result.message if result else "no result")
    launch = result.launches[0]
    emu = launch.get("emu", {})
    per_line = {int(k): v for k, v in emu.get("per_line", {}).items()}
    return Profile("emu", sizes, emu.get("counters", {}), per_line, sub.source, sub.name, launch.get("error", ""))


def _from_ncu(runner: TaskSupervisor, task: Task, sub, sizes, kernel: list[str]) -> Profile:
    tools = find_tools()
    if not tools.ncu:
        return Profile("gpu", sizes, {}, source=sub.source, source_name=sub.name, error="Nsight Compute (ncu) was not found")
    stage = runner.run([task], backend="gpu", wrapper=ncu_wrapper(tools.ncu, METRICS, kernel), log_name="ncu",
                       extra_env=ncu_env())
    parsed = parse_ncu_csv(stage.log_text() + "\n" + "\n".join(c.stdout for c in stage.children), METRICS)
    error = ""
    if parsed.missing:
        error = f"ncu did not report {', '.join(parsed.missing)}"
    if not parsed.rows:
        return Profile("gpu", sizes, {}, source=sub.source, source_name=sub.name, error=error or "ncu profiled no launch")
    # one row per kernel of the chain: their sum is the launch's
    return Profile("gpu", sizes, sum_rows(parsed.rows, len(kernel))[0] if len(parsed.rows) >= len(kernel) else parsed.rows[0],
                   {}, sub.source, sub.name, error)


def table(p: Profile) -> list[str]:
    """The per-line table a student reads: which line costs the sectors or the conflicts."""
    lines = [f"{p.source_name} at {', '.join(f'{k} = {v}' for k, v in p.sizes.items())} ({p.backend})"]
    if p.error:
        lines.append(f"  error: {p.error}")
    src = p.source.splitlines()
    # The load/store columns always; the atomics' only when the kernel has some.
    shown = [(m, t) for i, (m, t) in enumerate(zip(METRICS, TITLES)) if i < 8 or p.counters.get(m, 0)]
    head = "  line " + "".join(f"{t:>13}" for _, t in shown) + "  source"
    if p.place:
        lines.append("  (lines of the notebook's kernel cell: " + ", ".join(sorted(set(
            v.rsplit(",", 1)[0] for v in p.place.values()))) + "; line 1 is the magic line)")
    lines.append(head)
    for line, counters in sorted(p.per_line.items()):
        if not any(counters.get(m, 0) for m, _ in shown):
            continue
        text = src[line - 1].strip()[:60] if 0 < line <= len(src) else ""
        number = p.place[line].rsplit(" ", 1)[-1] if line in p.place else str(line)
        lines.append(f"  {number:>4} " + "".join(f"{counters.get(m, 0):>13,.0f}" for m, _ in shown) + f"  {text}")
    lines.append("  total" + "".join(f"{p.counters.get(m, 0):>13,.0f}" for m, _ in shown))
    return lines
