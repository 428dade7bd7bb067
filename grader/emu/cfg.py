"""Control-flow graph of a kernel: basic blocks, post-dominators and reconvergence points.

A divergent branch reconverges at the first instruction of its immediate post-dominator (IPDOM),
the textbook rule of the SIMT stack. When the IPDOM is the kernel exit (or the branch sits in code
that can never reach the exit), the reconvergence PC is `exit_pc` (one past the last instruction):
the paths only meet again when their threads have exited.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ptx import Instr, Kernel, Sym

_TERMINATORS = {"bra", "ret", "exit", "trap", "brx"}


@dataclass(frozen=True)
class CFG:
    """Basic blocks (as (start, end) PC ranges, end exclusive) and per-branch reconvergence PCs."""

    blocks: tuple[tuple[int, int], ...]
    succs: tuple[tuple[int, ...], ...]  # block index -> successor block indices; exit is len(blocks)
    ipdom: tuple[int, ...]  # block index -> immediate post-dominator block (len(blocks) = exit)
    reconverge: dict[int, int]  # PC of every branch -> PC where its paths reconverge
    exit_pc: int


def branch_target(instr: Instr, labels: dict[str, int]) -> int:
    """PC of a `bra` target label."""
    op = instr.operands[0]
    name = op.name if isinstance(op, Sym) else str(op)
    return labels[name]


def build(kernel: Kernel) -> CFG:
    """Build the CFG of a kernel and compute the reconvergence PC of every branch."""
    instrs = kernel.instrs
    n = len(instrs)
    leaders = {0}
    for pc, ins in enumerate(instrs):
        if ins.opcode in _TERMINATORS:
            leaders.add(pc + 1)
        if ins.opcode == "bra":
            leaders.add(branch_target(ins, kernel.labels))
    leaders.update(v for v in kernel.labels.values())
    starts = sorted(p for p in leaders if p < n)
    blocks = tuple((s, (starts[i + 1] if i + 1 < len(starts) else n)) for i, s in enumerate(starts))
    exit_b = len(blocks)
    block_of = {s: i for i, (s, _) in enumerate(blocks)}

    def block_at(pc: int) -> int:
        return block_of[pc] if pc < n else exit_b

    succs: list[tuple[int, ...]] = []
    for b, (s, e) in enumerate(blocks):
        last = instrs[e - 1]
        out: list[int] = []
        if last.opcode == "bra":
            out.append(block_at(branch_target(last, kernel.labels)))
            if last.guard is not None:
                out.append(block_at(e))
        elif last.opcode in ("ret", "exit", "trap"):
            out.append(exit_b)
            if last.guard is not None:
                out.append(block_at(e))
        else:
            out.append(block_at(e))
        succs.append(tuple(dict.fromkeys(out)))

    # For reconvergence, a thread that leaves the kernel need not be waited for: a guarded branch
    # into a block that only returns (NVRTC's `if (...) return;`, an early exit from a loop) and
    # the exit edge of a guarded ret/exit are left out, so the other threads reconverge where the
    # surviving paths meet (as the hardware's convergence barriers do) rather than at the exit.
    def returns_at(b: int) -> bool:
        if b >= exit_b:
            return True
        first = instrs[blocks[b][0]]
        return first.opcode in ("ret", "exit") and first.guard is None

    pd_succs: list[tuple[int, ...]] = []
    for b, (s, e) in enumerate(blocks):
        last = instrs[e - 1]
        out = succs[b]
        if last.guard is not None and last.opcode in ("bra", "ret", "exit") and len(out) == 2:
            kept = tuple(t for t in out if not (t == out[0] and returns_at(t)))
            out = kept or out
        pd_succs.append(out)
    ipdom = _ipdoms(len(blocks), pd_succs)
    reconverge = {}
    for b, (s, e) in enumerate(blocks):
        if instrs[e - 1].opcode == "bra":
            d = ipdom[b]
            reconverge[e - 1] = blocks[d][0] if d < exit_b else n
    return CFG(blocks, tuple(succs), tuple(ipdom), reconverge, n)


def _ipdoms(nb: int, succs: list[tuple[int, ...]]) -> list[int]:
    """Immediate post-dominators by iterative data flow over bitsets (exit node = nb)."""
    exit_b = nb
    full = (1 << (nb + 1)) - 1
    # blocks that can reach the exit; the others get the exit as their IPDOM
    preds: list[list[int]] = [[] for _ in range(nb + 1)]
    for b, ss in enumerate(succs):
        for t in ss:
            preds[t].append(b)
    reach = {exit_b}
    stack = [exit_b]
    while stack:
        x = stack.pop()
        for p in preds[x]:
            if p not in reach:
                reach.add(p)
                stack.append(p)
    pdom = [full] * (nb + 1)
    pdom[exit_b] = 1 << exit_b
    changed = True
    order = list(range(nb - 1, -1, -1))
    while changed:
        changed = False
        for b in order:
            if b not in reach:
                continue
            acc = full
            for t in succs[b]:
                if t in reach:
                    acc &= pdom[t]
            new = acc | (1 << b)
            if new != pdom[b]:
                pdom[b] = new
                changed = True
    result = []
    for b in range(nb):
        if b not in reach:
            result.append(exit_b)
            continue
        strict = pdom[b] & ~(1 << b)
        want = bin(strict).count("1")
        best = exit_b
        x = strict
        while x:
            low = x & -x
            d = low.bit_length() - 1
            x ^= low
            if bin(pdom[d]).count("1") == want:
                best = d
                break
        result.append(best)
    return result
