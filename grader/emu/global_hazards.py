"""Global-memory races: accesses to one address by different blocks, or by different warps of one
block with no barrier between, where at least one is a plain (non-atomic) write.

The CUDA memory model orders nothing between the blocks of one launch (short of fences and
atomics used as flags, see below), so two blocks that touch one byte, one of them with a plain
store, race whatever order the emulator happened to run them in: a `*out += partial` that every
block executes loses updates on a GPU. Inside a block, `__syncthreads()` orders global memory as it
orders shared memory, so the shared-memory rules apply per barrier interval (epoch).

Rules, per byte of every buffer live at the launch, for the launch:

* RAW: a plain read of a byte last written by another block, or by another warp of the same block
  in the current epoch.
* WAW: a write of a byte last written by another block, or by another warp of the block in this
  epoch; two atomics do not race, unless they come from different blocks and one of them has block
  scope (`atomicAdd_block`: PTX `atom.cta`/`red.cta`), which is atomic only with respect to the
  threads of its own block (``cause`` = "block-atomic"). Shared memory is per block, so a
  block-scoped atomic there is always enough.
* WAR: a write (plain or atomic) of a byte that another block read, or that another warp of the
  block read in this epoch. The reader set is "first reader + read by several warps + read by
  several blocks", which never misses one.

Accesses of one warp are not reported (the emulator runs a warp in lockstep). A kernel with a memory
fence (`__threadfence()`: `membar`/`fence`) is not tracked at all: it may order its blocks through a
fence and an atomic flag (the "last block finishes the sum" pattern), which these rules cannot see,
and a false race would cost a correct student points. Its races are left to the GPU's repeated
launches.

Fast path (exact): a buffer no instruction has written yet in this launch cannot be the earlier
half of a RAW or WAW, so its loads only matter for a later WAR. They are logged, not checked; the
first store to the buffer replays its log (in order, with each load's epoch) and from then on its
loads are checked as they come. An input that is only read, the bulk of most kernels' loads, is
logged and dropped at the end of the launch. A batch identical to the buffer's last logged one
(a loop polling a flag) is logged once (_log_loads says why that is exact).

Shadow layout: four int64 per tracked byte (last writer and its line and epoch; first reader and
its flags), over the live buffers laid end to end (``_index``), zero-filled so bytes never touched
cost no memory. Buffers past ``max_bytes`` in total are not tracked.
"""

from __future__ import annotations

import numpy as np

from .hazards import Hazard, xyz
from .memory import span_holding

_TID = np.int64(0x3FF)
_ATOMIC = np.int64(1 << 10)
_BLOCK_SCOPE = np.int64(1 << 11)  # the atomic has block scope (atomicAdd_block)
_WHO_SHIFT = np.int64(12)  # who = (block + 1) << 12 | block scope << 11 | atomic << 10 | thread
_EPOCH_SHIFT = np.int64(18)  # meta = epoch << 18 | line << 2 | several warps << 1 | several blocks
_LINE_MASK = np.int64(0xFFFF)
_MULTI_WARP = np.int64(2)
_MULTI_BLOCK = np.int64(1)
MAX_FINDINGS = 100
_MAX_LOGGED_LANES = 1 << 23  # loads kept in the logs before they are applied (about 40 B each)


class GlobalShadow:
    """Per-launch shadow of the live global buffers for cross-block and cross-warp races."""

    def __init__(self, starts, ends, names, num_blocks: int, block_dim, grid_dim,
                 max_bytes: int = 1 << 22) -> None:
        """Track the buffers ``[starts[i], ends[i])`` (device addresses, sorted) for a launch of
        ``num_blocks`` blocks; only the first ``max_bytes`` bytes of them in total."""
        self.starts = np.asarray(starts, dtype=np.uint64)
        self.ends = np.asarray(ends, dtype=np.uint64)
        self.names = list(names)
        sizes = (self.ends - self.starts).astype(np.int64)
        self.base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.size = int(min(int(sizes.sum()), max_bytes))
        self.block_dim = tuple(int(v) for v in block_dim)
        self.grid_dim = tuple(int(v) for v in grid_dim)
        self._epoch = np.ones(max(int(num_blocks), 1), dtype=np.int64)
        self._w = np.zeros(self.size, dtype=np.int64)
        self._wm = np.zeros(self.size, dtype=np.int64)
        self._r = np.zeros(self.size, dtype=np.int64)
        self._rm = np.zeros(self.size, dtype=np.int64)
        self._hazards: dict[tuple[str, str, int, int, str], list] = {}
        self._written = np.zeros(len(self.names), dtype=bool)  # buffers stored to in this launch
        self._log: dict[int, list] = {}  # buffer -> its loads before its first store (see above)
        self._logged = 0

    # ------------------------------------------------------------------ public API

    def barrier(self, blocks: np.ndarray) -> None:
        """A barrier completed in each of ``blocks`` (linear ids): a new epoch there."""
        self._epoch[np.asarray(blocks, dtype=np.int64)] += 1

    def access(self, addr: np.ndarray, nbytes: int, block: np.ndarray, tid: np.ndarray, write: bool,
               line: int, atomic: bool = False, block_scope: bool = False) -> None:
        """Record one batched global access of the lanes given (already in bounds).

        Args:
            addr: uint64 ``[n]`` device address of each lane's access.
            nbytes: bytes per lane.
            block: int64 ``[n]`` linear block id of each lane.
            tid: int64 ``[n]`` linear thread id in its block.
            write: a store (or an atomic); False for a load.
            line: source line of the instruction.
            atomic: an atomic read-modify-write (never races with another atomic of its block, nor
                with one of another block unless either has block scope).
            block_scope: the atomic has block scope (`.cta`): atomic only among the threads of its
                block.
        """
        if addr.size == 0 or self.size == 0:
            return
        line = min(max(int(line), 0), int(_LINE_MASK))
        addr = np.asarray(addr, dtype=np.uint64)
        block = np.asarray(block, dtype=np.int64)
        tid = np.asarray(tid, dtype=np.int64)
        one = self._one_buffer(addr, nbytes)
        if one is not None:
            self._access_one(one, addr, int(nbytes), block, tid, write, line, atomic, block_scope)
            return
        buf = np.searchsorted(self.starts, addr, side="right").astype(np.int64) - 1
        inside = buf >= 0
        bc = np.maximum(buf, 0)
        inside &= addr + np.uint64(nbytes) <= self.ends[bc]
        if not inside.all():
            addr, bc, block, tid = addr[inside], bc[inside], block[inside], tid[inside]
        if addr.size == 0:
            return
        epoch = self._epoch[block]
        if write:
            for b in np.unique(bc).tolist():
                if not self._written[b]:
                    self._written[b] = True
                    self._replay(b)
            self._apply(addr, bc, int(nbytes), block, tid, epoch, line, True, atomic, block_scope)
            return
        later = ~self._written[bc]
        if later.any():
            for b in np.unique(bc[later]).tolist():
                sel = later & (bc == b)
                self._log_loads(b, addr[sel], int(nbytes), block[sel], tid[sel], epoch[sel], line)
            self._cap_log()
            keep = ~later
            addr, bc, block, tid, epoch = addr[keep], bc[keep], block[keep], tid[keep], epoch[keep]
        if addr.size:
            self._apply(addr, bc, int(nbytes), block, tid, epoch, line, False, False)

    def _one_buffer(self, addr: np.ndarray, nbytes: int) -> int | None:
        """The buffer that holds every lane's access, when one does (the usual case: one
        instruction reads one array); else None, and the lanes are sorted out one by one."""
        return span_holding(self.starts, self.ends, addr, nbytes)

    def _access_one(self, b: int, addr, nbytes: int, block, tid, write: bool, line: int, atomic: bool,
                    block_scope: bool = False) -> None:
        """`access` for lanes that all fall in buffer `b`: the same rules, with no per-lane sorting
        into buffers."""
        epoch = self._epoch[block]
        if not self._written[b]:
            if not write:
                # Logged until the buffer's first store (see the module's docstring); copies, since
                # the log outlives the caller's arrays.
                self._log_loads(b, addr.copy(), nbytes, block.copy(), tid.copy(), epoch, line)
                self._cap_log()
                return
            self._written[b] = True
            self._replay(b)
        self._apply(addr, b, nbytes, block, tid, epoch, line, write, atomic, block_scope)

    def _log_loads(self, buf: int, addr, nbytes: int, block, tid, epoch, line: int) -> None:
        """Keep a load batch of a buffer not stored to yet, for _replay.

        The same batch as the buffer's last logged one (a loop that polls a flag: every warp, the
        same lanes, addresses, epoch and line) is dropped: nothing touched the buffer's shadow in
        between (its stores would have ended the log, its loads are this log), and applying a batch
        to the reader sets twice in a row leaves them as once (the first application takes every
        fresh entry and sets every flag the second would). Without this, a spinning kernel's log
        outgrows _MAX_LOGGED_LANES within seconds and every later load is checked eagerly."""
        entries = self._log.setdefault(buf, [])
        if entries:
            last = entries[-1]
            if (last[5] == line and last[1] == nbytes and last[0].shape == addr.shape
                    and all(np.array_equal(x, y) for x, y in zip((last[0], last[2], last[3], last[4]), (addr, block, tid, epoch)))):
                return
        entries.append((addr, nbytes, block, tid, epoch, line))
        self._logged += addr.size

    def _cap_log(self) -> None:
        """Past _MAX_LOGGED_LANES logged loads, apply every log and check loads as they come from now on."""
        if self._logged > _MAX_LOGGED_LANES:
            for buf in list(self._log):
                self._written[buf] = True
                self._replay(buf)

    def _replay(self, buf: int) -> None:
        """Apply a buffer's logged loads (before its first store) to the reader sets, in order."""
        for addr, nbytes, block, tid, epoch, line in self._log.pop(buf, ()):
            self._logged -= addr.size
            self._apply(addr, np.full(addr.size, buf, dtype=np.int64), nbytes, block, tid, epoch, line, False, False)

    def _apply(self, addr, bc, nbytes, block, tid, epoch, line, write, atomic, block_scope=False) -> None:
        start = self.base[bc] + (addr - self.starts[bc]).astype(np.int64)
        flat = (start[:, None] + np.arange(nbytes, dtype=np.int64)).ravel()
        if nbytes > 1:
            block, tid, epoch = (np.repeat(a, nbytes) for a in (block, tid, epoch))
        keep = flat < self.size
        if not keep.all():
            flat, block, tid, epoch = flat[keep], block[keep], tid[keep], epoch[keep]
        if flat.size == 0:
            return
        if write:
            self._write(flat, block, tid, epoch, line, atomic, atomic and block_scope)
        else:
            self._read(flat, block, tid, epoch, line)

    def hazards(self) -> tuple[Hazard, ...]:
        """Aggregated hazards, sorted by (first_line, second_line, kind)."""
        out = [Hazard(kind, first, second, int(v[0]), v[1], v[2], space="global", scope=scope, cause=cause)
               for (kind, scope, first, second, cause), v in self._hazards.items()]
        return tuple(sorted(out, key=lambda h: (h.first_line, h.second_line, h.kind, h.scope)))

    # ------------------------------------------------------------------ rules

    def _read(self, flat, block, tid, epoch, line) -> None:
        w = self._w[flat]
        written = w != 0
        if written.any():
            wb = (w >> _WHO_SHIFT) - 1
            grid = written & (wb != block)
            same = written & (wb == block) & (((w & _TID) >> 5) != (tid >> 5)) & ((self._wm[flat] >> _EPOCH_SHIFT) == epoch)
            self._note("RAW", "grid", grid, w, self._wm[flat], flat, block, tid, line)
            self._note("RAW", "block", same, w, self._wm[flat], flat, block, tid, line)
        # Reader set: the first reader of the byte, then flags for other warps and other blocks.
        me = ((block + 1) << _WHO_SHIFT) | tid
        meta = (epoch << _EPOCH_SHIFT) | (np.int64(line) << 2)
        r = self._r[flat]
        rm = self._rm[flat]
        rb = (r >> _WHO_SHIFT) - 1
        # empty, or this block's entry from an older epoch (other blocks' flag kept): take it over
        fresh = (r == 0) | ((rb == block) & ((rm >> _EPOCH_SHIFT) != epoch))
        if fresh.any():
            self._r[flat[fresh]] = me[fresh]
            self._rm[flat[fresh]] = meta[fresh] | (rm[fresh] & _MULTI_BLOCK)
            r = self._r[flat]
            rm = self._rm[flat]
            rb = (r >> _WHO_SHIFT) - 1
        other_block = (rb != block) & ((rm & _MULTI_BLOCK) == 0)
        if other_block.any():
            self._rm[flat[other_block]] |= _MULTI_BLOCK
        other_warp = (rb == block) & (((r & _TID) >> 5) != (tid >> 5)) & ((rm & _MULTI_WARP) == 0)
        if other_warp.any():
            self._rm[flat[other_warp]] |= _MULTI_WARP

    def _write(self, flat, block, tid, epoch, line, atomic, block_scope=False) -> None:
        w = self._w[flat]
        wm = self._wm[flat]
        written = w != 0
        if written.any():
            wb = (w >> _WHO_SHIFT) - 1
            both_atomic = ((w & _ATOMIC) != 0) & atomic
            grid = written & (wb != block)
            # two atomics of different blocks, one of them atomic only within its own block
            scoped = grid & both_atomic & (((w & _BLOCK_SCOPE) != 0) | block_scope)
            grid &= ~both_atomic
            same = (written & (wb == block) & (((w & _TID) >> 5) != (tid >> 5))
                    & ((wm >> _EPOCH_SHIFT) == epoch) & ~both_atomic)
            self._note("WAW", "grid", grid, w, wm, flat, block, tid, line)
            self._note("WAW", "grid", scoped, w, wm, flat, block, tid, line, "block-atomic")
            self._note("WAW", "block", same, w, wm, flat, block, tid, line)
        r = self._r[flat]
        if (r != 0).any():
            rm = self._rm[flat]
            rb = (r >> _WHO_SHIFT) - 1
            read = r != 0
            grid = read & ((rb != block) | ((rm & _MULTI_BLOCK) != 0))
            same = (read & ~grid & ((rm >> _EPOCH_SHIFT) == epoch)
                    & ((((r & _TID) >> 5) != (tid >> 5)) | ((rm & _MULTI_WARP) != 0)))
            self._note("WAR", "grid", grid, r, rm, flat, block, tid, line)
            self._note("WAR", "block", same, r, rm, flat, block, tid, line)
        me = ((block + 1) << _WHO_SHIFT) | tid | (_ATOMIC if atomic else np.int64(0)) | (
            _BLOCK_SCOPE if block_scope else np.int64(0))
        self._w[flat] = me
        self._wm[flat] = (epoch << _EPOCH_SHIFT) | (np.int64(line) << 2)
        if block_scope:
            # Block-scoped atomics of two blocks in this very batch on one byte: every record of a
            # block other than the one the scatter kept is not atomic with respect to it.
            w = self._w[flat]
            lost_grid = ((w >> _WHO_SHIFT) - 1) != block
            self._note("WAW", "grid", lost_grid, w, self._wm[flat], flat, block, tid, line, "block-atomic")
        elif not atomic:
            # Two blocks (or warps) of this very batch writing one byte: the scatter kept one; every
            # record of another block, or another warp of that block, lost the race against it.
            w = self._w[flat]
            wb = (w >> _WHO_SHIFT) - 1
            lost_grid = wb != block
            lost_block = (wb == block) & (((w & _TID) >> 5) != (tid >> 5))
            wm = self._wm[flat]
            self._note("WAW", "grid", lost_grid, w, wm, flat, block, tid, line)
            self._note("WAW", "block", lost_block, w, wm, flat, block, tid, line)

    # ------------------------------------------------------------------ helpers

    def _note(self, kind, scope, mask, prev_who, prev_meta, flat, block, tid, line, cause="") -> None:
        if not mask.any():
            return
        where = np.flatnonzero(mask)
        first_lines = ((prev_meta[where] >> 2) & _LINE_MASK)
        lines, pos, counts = np.unique(first_lines, return_index=True, return_counts=True)
        for first, p, count in zip(lines.tolist(), pos.tolist(), counts.tolist()):
            key = (kind, scope, first, line, cause)
            entry = self._hazards.get(key)
            if entry is not None:
                entry[0] += count
                continue
            if len(self._hazards) >= MAX_FINDINGS:
                continue
            k = int(where[p])
            who = int(prev_who[k])
            other_block = (who >> int(_WHO_SHIFT)) - 1
            other = xyz(self.block_dim, who & int(_TID))
            mine = xyz(self.block_dim, int(tid[k]))
            b_me, b_other = xyz(self.grid_dim, int(block[k])), xyz(self.grid_dim, other_block)
            what = self._where(int(flat[k]))
            verbs = {"RAW": ("wrote", "read"), "WAW": ("wrote", "wrote"), "WAR": ("read", "wrote")}[kind]
            order = ("the blocks of one launch run in no fixed order" if scope == "grid"
                     else "with no __syncthreads() in between")
            if cause == "block-atomic":
                verbs = ("updated", "updated")
                order = "with atomics, at least one of block scope (atomic only within its own block)"
            example = (f"thread {other} of block {b_other} {verbs[0]} {what} at line {first}; thread {mine} of "
                       f"block {b_me} {verbs[1]} it at line {line}; {order}")
            self._hazards[key] = [count, b_me, example]

    def _where(self, flat: int) -> str:
        i = int(np.searchsorted(self.base, flat, side="right")) - 1
        return f"{self.names[i]}[byte {flat - int(self.base[i])}]"
