"""The Volta rendezvous of `.sync` warp collectives reached on divergent paths.

PTX: a thread executing `shfl.sync` (likewise `vote.sync`, `redux.sync`, `match.sync`,
`bar.warp.sync`) waits until every non-exited thread of `membermask` has executed a collective
with the same qualifiers and the same membermask. NVRTC emits one instruction per branch for
`if (c) v = __shfl_xor_sync(FULL, v, 1); else v = __shfl_xor_sync(FULL, v + 1, 1);`, so the two
halves of the warp meet at two different PCs.

The machine keeps its IPDOM stacks and adds one rule. A stack entry that reaches a collective whose
members are not all in it is *parked* there (it keeps its PC; `spark` marks it, `smm` keeps the
membermask). The warp then runs another pending entry: one whose lanes are disjoint from every entry
above it in the stack, which is exactly a path that has not started yet (a reconvergence entry
always shares lanes with the paths above it). That entry is moved to the top, runs, and pops as
usual. When every member lane is parked at a matching collective, the collective runs once for their
union, each lane with the operands of its own instruction, and each entry continues after its own
PC. If no entry can run and the members are still missing (they exited inside the region, wait at
the reconvergence point, or sit at another collective) the rendezvous can never happen: that is a
"divergent-warp" barrier error, and the collective then runs with the lanes that arrived, as a
pre-Volta GPU would, so the launch still finishes.

Lanes of an entry parked at an unconditional `ret` (the `if (i >= n) return;` lanes the machine keeps
at the bottom of the stack) count as exited: they will execute nothing else.
"""

from __future__ import annotations

import numpy as np

_WARP = 32


def _bits(v: int) -> int:
    return bin(int(v)).count("1")


class Rendezvous:
    """Mixed into `machine.Machine`: parking and meeting of warp collectives."""

    # ------------------------------------------------------------------ entry from _step
    def _members_missing(self, x, coll) -> tuple[np.ndarray, np.ndarray | None]:
        """Per warp of x: the membermask, and whether lanes of it are missing from the entry
        (None when no warp misses any, the convergent fast path)."""
        raw = np.asarray(coll.membermask(x), dtype=np.uint32)
        if raw.ndim == 0:
            mm = np.full(x.W.size, raw, dtype=np.uint32)
        else:
            # the mask as the warp's active lanes give it (they should all give the same one)
            act = x.active.reshape(-1, _WARP)
            mm = np.bitwise_or.reduce(np.where(act, raw.reshape(-1, _WARP), np.uint32(0)), axis=1)
        missing = (mm & self.alive[x.W] & ~x.tbits) != 0
        if not missing.any():
            return mm, None
        for i in np.flatnonzero(missing):
            w = int(x.W[i])
            missing[i] = (int(mm[i]) & int(self.alive[w]) & ~self._leaving(w) & ~int(x.tbits[i])) != 0
        return mm, (missing if missing.any() else None)

    def _park(self, W: np.ndarray, mm: np.ndarray) -> None:
        """Park the top entries of warps W at their collective and go on with each warp."""
        d = self.depth[W] - 1
        self.spark[W, d] = True
        self.smm[W, d] = mm
        self.n_parked += W.size
        for w in W:
            self._resolve(int(w))

    # ------------------------------------------------------------------ one warp
    def _resolve(self, w: int) -> None:
        """Until warp w's top entry is not parked: meet, or run another path, or give up."""
        ws = np.array([w])
        while self.depth[w] > 0 and self.spark[w, self.depth[w] - 1]:
            if self._meet(w):
                self._pop(ws)
                continue
            j = self._runnable_below(w)
            if j >= 0:
                self._rotate(w, j)
                self._pop(ws)
                continue
            self._unmatched(w)
            self._pop(ws)

    def _leaving(self, w: int) -> int:
        """Lanes of warp w that wait at an unconditional ret/exit (as good as exited).

        The lanes that sit at an entry's PC are its lanes that no entry above it holds: a
        reconvergence entry at a `ret` also names the lanes still running the paths above it.
        """
        bits = above = 0
        for i in range(int(self.depth[w]) - 1, -1, -1):
            m = int(self.smask[w, i])
            if self._returns_at(int(self.spc[w, i])):
                bits |= m & ~above
            above |= m
        return bits & int(self.alive[w])

    def _groups(self, w: int) -> dict[tuple, list[int]]:
        """Parked entries of warp w by (signature, membermask): the ones that may meet."""
        groups: dict[tuple, list[int]] = {}
        for i in np.flatnonzero(self.spark[w, : self.depth[w]]):
            coll = self.code.collectives[int(self.spc[w, i])]
            groups.setdefault((coll.signature, int(self.smm[w, i])), []).append(int(i))
        return groups

    def _meet(self, w: int) -> bool:
        """Run every collective of warp w whose members are all parked at it; True if any ran."""
        alive = int(self.alive[w])
        need_live = alive & ~self._leaving(w)
        ran = False
        for (_, mm), entries in self._groups(w).items():
            have = 0
            for i in entries:
                have |= int(self.smask[w, i])
            if mm & need_live & ~(have & alive) == 0:
                self._run_collective(w, entries)
                ran = True
        return ran

    def _run_collective(self, w: int, entries: list[int]) -> None:
        """Execute one collective for the union of the parked entries of warp w."""
        ws = np.array([w])
        execs = []
        for i in entries:
            pc = int(self.spc[w, i])
            execs.append(self._exec(pc, ws, np.array([self.smask[w, i] & self.alive[w]], dtype=np.uint32)))
        vals = None
        part = np.zeros(_WARP, dtype=bool)
        for x in execs:
            v = self.code.collectives[x.pc].read(x)
            if vals is None:
                vals = [np.array(a) for a in v]
            else:
                vals = [np.where(x.mask, a, b) for a, b in zip(v, vals)]
            part |= x.mask
        first = self.code.collectives[execs[0].pc]
        res = first.compute(vals, part.reshape(1, _WARP))
        for x in execs:
            self.code.collectives[x.pc].write(x, res)
        self.warp_sync[ws] += 1
        for i in entries:
            self.spc[w, i] += 1
            self.spark[w, i] = False
        self.n_parked -= len(entries)
        self.rec.steps += 1
        self.rec.warp_instructions += len(entries)

    def _runnable_below(self, w: int) -> int:
        """Index of the highest stack entry of warp w that may run now, or -1.

        An entry whose live lanes are disjoint from all entries above it is a path that has not
        started (or has finished its region): running it first is a legal SIMT schedule. Entries at
        an unconditional return are left alone; their lanes are as good as exited.
        """
        alive = int(self.alive[w])
        above = 0
        top = int(self.depth[w]) - 1
        for i in range(top, -1, -1):
            live = int(self.smask[w, i]) & alive
            if (i < top and live and not self.spark[w, i] and not (live & above)
                    and not self._returns_at(int(self.spc[w, i]))):
                return i
            above |= live
        return -1

    def _rotate(self, w: int, j: int) -> None:
        """Move entry j of warp w's stack to the top."""
        top = int(self.depth[w]) - 1
        for arr in (self.spc, self.smask, self.srpc, self.spark, self.smm):
            arr[w, j: top + 1] = np.roll(arr[w, j: top + 1].copy(), -1)

    def _unmatched(self, w: int) -> None:
        """The top collective of warp w can never meet all its members: report, then run it
        with the lanes that are parked at it."""
        top = int(self.depth[w]) - 1
        pc = int(self.spc[w, top])
        ins = self.instrs[pc]
        mm = int(self.smm[w, top])
        key = (self.code.collectives[pc].signature, mm)
        entries = self._groups(w)[key]
        have = 0
        for i in entries:
            have |= int(self.smask[w, i])
        alive = int(self.alive[w])
        missing = mm & alive & ~self._leaving(w) & ~have
        blk = self.block_coords(int(self.warp_block[w]))
        name = ".".join((ins.opcode, *ins.mods))
        self.rec.finding("barrier", ("barrier", "divergent-warp", ins.line, blk), dict(
            kind="divergent-warp", line=ins.line, block=blk,
            detail=(f"{name} with membermask {mm:#010x} in warp {int(self.warp_in_block[w])}: "
                    f"{_bits(missing)} member lanes never reach a matching {ins.opcode}.sync (they "
                    f"took another path); it ran with the {_bits(have & alive)} lanes that arrived")))
        self._run_collective(w, entries)
