"""Turning the emulator's exact findings and the sanitizers' reports into messages a student can act on."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..results import NotRun, TestResult
from ..spec import CheckSpec
from ..run.tasks import Task
from ..tools import SANITIZER_EXIT, parse_sanitizer, sanitizer_wrapper
from .base import Context, emu_launches, sizes_text, verdict
from .code_facts import code_facts, submission_ptx

MAX_MESSAGES = 6


def emu_findings_task(ctx: Context, sizes: Mapping[str, int]) -> Task:
    """The shared emulator launch that race and memory-safety both read (deduplicated by id)."""
    label = "emu:" + sizes_text(sizes)
    return Task(id=label, kind="run", backend="emu", sizes=sizes, seeds=(ctx.seed_for(label),))


def unfinished_emu(ctx: Context, sizes: Mapping[str, int]) -> str | None:
    """Why the dedicated emulated launch at `sizes` gives no evidence (it hung, trapped, crashed), or None.

    A launch that stopped early saw only part of the kernel: "no race found" would then be a guess.
    """
    label = "emu:" + sizes_text(sizes)
    result = ctx.results.get(label)
    if result is None or not result.launches:
        return f"the emulated launch at {sizes_text(sizes)} did not run ({result.message if result else 'no result'})"
    error = next((l["error"] for l in result.launches if l.get("error")), None)
    return f"the emulated launch at {sizes_text(sizes)} did not finish: {error}" if error else None


def emu_task_ids(ctx: Context) -> list[str]:
    """Ids of every planned task that ran on the emulator (correctness sizes included on the emu backend)."""
    return [tid for tid, t in ctx.planned.items() if t.backend == "emu" and t.kind == "run"]


def race_items(ctx: Context) -> list[tuple[str, Mapping[str, Any], Mapping[str, int]]]:
    """("barrier" or "hazard", the emulator's record, its sizes) for every barrier error and hazard of
    every emulated launch, deduplicated: what the race check judges, however it is shown."""
    seen, out = set(), []
    for sizes, launch in emu_launches(ctx, emu_task_ids(ctx)):
        emu = launch["emu"]
        for b in emu.get("barrier_errors", []):
            key = ("barrier", b["kind"], b.get("line"))
            if key not in seen:
                seen.add(key)
                out.append(("barrier", b, sizes))
        # Every hazard the emulator records is between two accesses inside a live buffer, so it is a
        # race whatever else the launch did: an unguarded index that runs past the end of a row lands
        # on an element another thread stores to, and on a GPU the launches then disagree. When the
        # launch also reached outside its buffers, the missing bounds check is the likely cause, and
        # the message says so (``strayed``) instead of advising atomics.
        strayed = any(m.get("space") == "global" for m in emu.get("memory_errors", []))
        for h in emu.get("hazards", []):
            stray = strayed and h.get("space") == "global"
            # a stray store's race has one message whether its two threads share a block or not
            scope = "any" if stray else h.get("scope")
            key = ("hazard", h["kind"], h["first_line"], h["second_line"], h.get("space"), scope, h.get("cause", ""))
            if key not in seen:
                seen.add(key)
                out.append(("hazard", {**h, "strayed": True} if stray else h, sizes))
    return out


def race_messages(ctx: Context) -> list[str]:
    """Hazards between warps and barrier errors from every emulated launch, worst first, deduplicated.

    The legacy warp-synchronous idiom (hazards of cause "volatile") is one message naming all its
    lines, and none when the race check's spec allows it (race_notes then names it)."""
    items = race_items(ctx)
    out = [_barrier_text(ctx, item, sizes) if what == "barrier" else _hazard_text(ctx, item, sizes)
           for what, item, sizes in items if not _warp_synchronous(item)]
    legacy = [(item, sizes) for what, item, sizes in items if _warp_synchronous(item)]
    if legacy and not warp_synchronous_allowed(ctx):
        out.append(_warp_synchronous_text(ctx, legacy, allowed=False))
    return out


def race_notes(ctx: Context) -> list[str]:
    """What the race check names without failing: the legacy warp-synchronous idiom, where the
    spec allows it (`[checks.race] warp_synchronous = "allow"`)."""
    legacy = [(item, sizes) for what, item, sizes in race_items(ctx) if _warp_synchronous(item)]
    return [_warp_synchronous_text(ctx, legacy, allowed=True)] if legacy and warp_synchronous_allowed(ctx) else []


def warp_synchronous_allowed(ctx: Context) -> bool:
    """Whether the exercise allows the legacy volatile warp-synchronous idiom (its race spec says so)."""
    conf = ctx.spec.checks.get("race")
    return conf is not None and conf.warp_synchronous == "allow"


def _warp_synchronous(item: Mapping[str, Any]) -> bool:
    return item.get("cause") == "volatile" and item.get("scope") == "warp"


def memory_items(ctx: Context) -> list[tuple[str, Mapping[str, Any], Mapping[str, int]]]:
    """("mem" or "uninit", the emulator's record, its sizes) for every out-of-bounds or misaligned
    access (one per kind, space and line) and every read of unwritten shared memory (one per line) of
    every emulated launch: what memory safety judges, however it is shown."""
    seen, out = set(), []
    for sizes, launch in emu_launches(ctx, emu_task_ids(ctx)):
        emu = launch["emu"]
        for m in emu.get("memory_errors", []):
            key = ("mem", m["kind"], m["space"], m.get("line"))
            if key not in seen:
                seen.add(key)
                out.append(("mem", m, sizes))
        for u in emu.get("uninit_reads", []):
            key = ("uninit", u.get("line"))
            if key not in seen:
                seen.add(key)
                out.append(("uninit", u, sizes))
    return out


def uninit_read_text(ctx: Context, u: Mapping[str, Any], sizes: Mapping[str, int]) -> str:
    """A read of unwritten shared memory, quoted: the line, how much, where."""
    return (f"{ctx.quote(u.get('line'))} reads shared memory that no thread of the block wrote "
            f"({u['count']:,} bytes at {sizes_text(sizes)}, e.g. block {tuple(u['block'])}, offset {u['offset']})")


def memory_messages(ctx: Context) -> list[str]:
    """Out-of-bounds and misaligned accesses and uninitialised shared reads from every emulated launch."""
    out = []
    for what, item, sizes in memory_items(ctx):
        if what == "mem":
            out.append(f"{item['kind'].replace('-', ' ')} of {item['space']} memory at {ctx.quote(item.get('line'))} "
                       f"({sizes_text(sizes)}, block {tuple(item['block'])}, thread {tuple(item['thread'])}): "
                       f"{item.get('detail', '')}".rstrip(": "))
        else:
            out.append(uninit_read_text(ctx, item, sizes) + ": write every element of the tile (zero past the edge) "
                       "before the barrier.")
    return out


def emu_problems(ctx: Context) -> list[str]:
    """Emulated launches that did not complete for reasons other than the student's bug (unsupported code)."""
    out = []
    for sizes, launch in emu_launches(ctx, emu_task_ids(ctx)):
        if launch["emu"].get("status") == "unsupported":
            out.append(f"the emulator could not run the kernel at {sizes_text(sizes)}: {launch['emu'].get('message')}")
    return sorted(set(out))


def emu_unsupported(ctx: Context, sizes: Mapping[str, int]) -> bool:
    """Whether the emulator could not run the dedicated launch at `sizes` (an instruction it lacks):
    not the student's fault, and no evidence either way."""
    result = ctx.results.get("emu:" + sizes_text(sizes))
    return bool(result) and any(l.get("emu", {}).get("status") == "unsupported" for l in result.launches)


def gpu_stands_in(ctx: Context, sizes: Mapping[str, int]) -> bool:
    """On a GPU, whether the GPU's own evidence (launches, sanitizers) stands in for an emulated launch
    the emulator could not run: that launch then neither passes nor gates the check."""
    return ctx.backend == "gpu" and emu_unsupported(ctx, sizes)


def sanitizers_wanted(ctx: Context, conf: CheckSpec, sizes: Mapping[str, int]) -> bool:
    """Whether this check's policy wants the compute-sanitizer tools.

    The emulator's checks at the same size see everything these tools see, exactly and with source
    lines, so by default ("fallback") they run only where the emulator gives no evidence: no
    emulator here, or a kernel it cannot run. Before the emulated launch has run, that second case
    cannot be known yet, so "fallback" wants them then only without an emulator; "always" always.
    """
    if ctx.backend != "gpu" or conf.sanitizer == "never":
        return False
    return conf.sanitizer == "always" or not ctx.emu_available or emu_unsupported(ctx, sizes)


def start_sanitizers(ctx: Context, conf: CheckSpec, tools: Sequence[str], sizes: Mapping[str, int]) -> None:
    """Start, in the background, the sanitizer tools the policy wants and that are not started yet:
    called while planning (beside the launches) and again when judging (after the emulated launch)."""
    if not ctx.tools.sanitizer or not sanitizers_wanted(ctx, conf, sizes):
        return
    for tool in tools:
        if tool not in ctx.background:
            ctx.start(tool, run_sanitizer, ctx, tool, sizes)


def sanitizer_messages(ctx: Context, conf: CheckSpec, tools: Sequence[str], sizes: Mapping[str, int],
                       category: str) -> list[str]:
    """What the sanitizers this check's policy wanted reported (starting any still needed); an entry
    in not_run when they were wanted but compute-sanitizer is missing."""
    start_sanitizers(ctx, conf, tools, sizes)
    if sanitizers_wanted(ctx, conf, sizes) and not ctx.tools.sanitizer:
        ctx.not_run.append(NotRun(f"compute-sanitizer {'/'.join(tools)}", category, "compute-sanitizer was not found on this machine",
                                  grader_fault=True))
    return [found for tool in tools if tool in ctx.background and (found := ctx.finish(tool))]


def unfinished_verdict(ctx: Context, name: str, conf: CheckSpec, sizes: Mapping[str, int], judged: str,
                       extra: Mapping[str, Any] | None = None) -> TestResult | None:
    """A gated failure when the dedicated emulated launch at `sizes` stopped early (hung, trapped):
    "nothing found" would then be a guess. None when it finished, or when the GPU's evidence stands
    in for a launch the emulator could not run."""
    if not ctx.emu_available or gpu_stands_in(ctx, sizes):
        return None
    stopped = unfinished_emu(ctx, sizes)
    if not stopped:
        return None
    return verdict(name, conf, False, f"Not graded: {stopped} ({judged} can only be judged on a launch that completes)",
                   extra={**(extra or {}), "gated": True})


def run_sanitizer(ctx: Context, tool: str, sizes: Mapping[str, int]) -> str | None:
    """Run one compute-sanitizer tool over a launch at `sizes`; a message if it reported errors, else None."""
    task = Task(id=f"sanitizer-{tool}", kind="run", backend="gpu", sizes=sizes, seeds=(ctx.seed_for(tool),), compare=False)
    stage = ctx.runner.run([task], backend="gpu", wrapper=sanitizer_wrapper(ctx.tools.sanitizer, tool),
                           pool=False, log_name=tool, timeout=ctx.time_left())
    report = parse_sanitizer(stage.log_text())
    child = stage.children[-1] if stage.children else None
    result = stage.results.get(task.id)
    if report.errors or (child and child.returncode == SANITIZER_EXIT):
        details = "; ".join(report.lines[:4])
        return f"compute-sanitizer {tool} at {sizes_text(sizes)}: {report.errors or 'some'} error(s). {details}".strip()
    if result is not None and result.status in ("timeout", "crashed"):
        return f"compute-sanitizer {tool} at {sizes_text(sizes)}: {result.message}"
    return None


def bullet(messages: Sequence[str]) -> str:
    shown = list(messages[:MAX_MESSAGES])
    text = "\n".join(f"- {m}" for m in shown)
    if len(messages) > MAX_MESSAGES:
        text += f"\n- ... and {len(messages) - MAX_MESSAGES} more"
    return text


def _hazard_text(ctx: Context, h: Mapping[str, Any], sizes: Mapping[str, int]) -> str:
    first, second = ctx.quote(h["first_line"]), ctx.quote(h["second_line"])
    where = f"({h['count']:,} bytes at {sizes_text(sizes)}, e.g. block {tuple(h['block'])}: {h.get('example', '')})"
    scope, space = h.get("scope", "block"), h.get("space", "shared")
    if space == "global" and scope == "grid" and h.get("cause") == "block-atomic":
        who = f"{first} updates" if h["first_line"] == h["second_line"] else f"{first} and {second} update"
        return (f"race between blocks on global memory: {who} the same global memory from different blocks with "
                f"atomics, at least one of block scope (atomicAdd_block or another _block atomic) {where}. A _block "
                "atomic is atomic only with respect to the threads of its own block: use atomicAdd (device scope) "
                "when different blocks add to one address; _block atomics suit shared memory or an address only "
                "one block updates.")
    if scope == "warp" and h.get("cause") == "volatile":
        return _warp_synchronous_text(ctx, [(h, sizes)], allowed=False)
    if space == "global" and h.get("strayed") and h["kind"] == "WAW":
        return (f"{h['kind']} race on global memory: {first} and {second} store to the same element from different "
                f"threads {where}. The kernel also accesses memory outside its arrays (see Memory safety): an index "
                "that is not checked against its own bound (a column past the end of its row, a row past the last) "
                "lands on an element another thread owns, and which store wins changes from launch to launch. "
                "Check every index against its bound before the store.")
    if space == "global" and scope == "grid":
        head = (f"race between blocks on global memory: {first} and {second} access the same global memory from "
                f"different blocks, at least one with a plain write ({h['kind']}) {where}. Blocks of one launch run in no "
                "fixed order and cannot wait for each other: ")
        if "global_atomics" in code_facts(submission_ptx(ctx), ctx.source)[0]:
            # Advice to use atomics would contradict the code: the plain access is the one that races.
            return head + ("the kernel already adds with atomics, so the plain access is what races: a block that "
                           "stores to (or zeroes) memory other blocks are adding to, or reads it before they are done. "
                           "Let atomics do every update of memory that several blocks share, and leave its "
                           "initialisation to before the launch.")
        return head + ("combine the blocks' results with an atomic (atomicAdd), or write one partial result per block "
                       "and combine them in a second kernel.")
    if space == "global":
        return (f"{h['kind']} race on global memory inside a block: {first} and {second} access the same global memory "
                f"from different warps with no __syncthreads() between them {where}.")
    if scope == "warp":
        return (f"race inside a warp: {first} and {second} access the same shared memory from different lanes of one "
                f"warp with no __syncwarp() between them ({h['kind']}) {where}. Since Volta the lanes of a warp do not "
                "run in lock-step: put __syncwarp() between the write and the read (and between the read and the next "
                "write), or exchange values with __shfl_down_sync().")
    if h["kind"] == "RAW":
        return (f"read-after-write race: {second} reads shared memory that another warp writes at {first} "
                f"with no __syncthreads() between them {where}. Add a barrier after the writes, before the reads.")
    if h["kind"] == "WAR":
        return (f"write-after-read race: {second} overwrites shared memory that another warp may still be reading at "
                f"{first} {where}. Add a barrier after the last read, before the next write (e.g. at the end of the loop body).")
    return f"write-after-write race: two warps write the same shared memory at {first} and {second} with no barrier between {where}."


def _warp_synchronous_text(ctx: Context, items: Sequence[tuple[Mapping[str, Any], Mapping[str, int]]],
                           allowed: bool) -> str:
    """One message for every hazard of the legacy volatile warp-synchronous idiom, naming its lines."""
    lines = sorted({int(l) for h, _ in items for l in (h["first_line"], h["second_line"]) if l})
    h, sizes = items[0]
    count = sum(int(i["count"]) for i, at in items if at == sizes)  # the example's launch
    span = (f"{ctx.quote(lines[0])} to {ctx.quote(lines[-1])} (lines {', '.join(map(str, lines))})"
            if len(lines) > 1 else ctx.quote(lines[0] if lines else None))
    what = (f"{span} exchange values between lanes of one warp through volatile shared memory with no __syncwarp() "
            f"between the steps ({count:,} bytes at {sizes_text(sizes)}, e.g. block {tuple(h['block'])}: "
            f"{h.get('example', '')}).")
    why = ("`volatile` keeps every access in memory but does not make the lanes wait for each other: since Volta the "
           "lanes of a warp are not in lock-step (independent thread scheduling), so a lane may read a neighbour's "
           "element before the neighbour has written it, and compute-sanitizer racecheck reports these accesses.")
    fix = ("Put __syncwarp() between the steps (`v += s[t + k]; __syncwarp(); s[t] = v; __syncwarp();`), or add "
           "the last 32 values in registers with __shfl_down_sync().")
    if allowed:
        return f"note (not failed, this exercise allows legacy warp-synchronous code): {what} {why} {fix}"
    return f"race inside a warp (legacy warp-synchronous code): {what} {why} {fix}"


def _barrier_text(ctx: Context, b: Mapping[str, Any], sizes: Mapping[str, int]) -> str:
    where = f"{ctx.quote(b.get('line'))} ({sizes_text(sizes)}, block {tuple(b['block'])})"
    if b["kind"] == "divergent-block" or b["kind"] == "divergent-warp":
        return (f"__syncthreads() at {where} is not reached by every thread of the block: a barrier inside a branch "
                f"that differs between threads is undefined. Keep barriers outside conditions ({b.get('detail', '')}).")
    return f"barrier deadlock at {where}: {b.get('detail', '')}"


