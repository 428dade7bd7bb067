"""Frozen copy of the original byte-granular, eager SharedShadow (kernel-grader 53553d6).

Test oracle only: tests/emu/test_hazards_fastpath.py checks that the optimised
grader.emu.hazards.SharedShadow reports exactly what this straightforward version reports,
examples and first-seen blocks included. Do not optimise this file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WARP_SIZE = 32
MAX_THREADS_PER_BLOCK = 1024

# Packed shadow entry (int64): bits 0-9 thread id in the block, bit 10 "read by several warps"
# (reader entries only), bits 11-26 source line (clamped to 16 bits), bits 27-62 epoch.
# Epochs start at 1 so that an all-zero entry means "never accessed since launch".
_TID_MASK = np.int64(0x3FF)
_MULTI = np.int64(1 << 10)
_LINE_SHIFT = np.int64(11)
_LINE_MASK = np.int64(0xFFFF)
_EPOCH_SHIFT = np.int64(27)
_WARP_SHIFT = np.int64(5)


@dataclass(frozen=True)
class Hazard:
    """A shared-memory data race between two source lines (racecheck-style, aggregated)."""

    kind: str  # "RAW", "WAR", "WAW"
    first_line: int  # source line of the earlier access
    second_line: int  # source line of the later, conflicting access
    count: int  # conflicting (thread, byte) accesses over the launch for this key
    block: tuple[int, int, int]  # one block where it happened (first seen)
    example: str  # one concrete thread pair and shared offset


@dataclass(frozen=True)
class UninitRead:
    """Shared bytes read at ``line`` before any thread of the block wrote them (first example)."""

    line: int
    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    offset: int
    count: int  # bytes read uninitialised at this line over the launch


class SharedShadow:
    """Per-launch shadow of every block's shared memory for race and initcheck-like reports."""

    def __init__(
        self,
        num_blocks: int,
        nbytes: int,
        block_dim: tuple[int, int, int],
        grid_dim: tuple[int, int, int],
        max_findings: int = 100,
    ) -> None:
        """Create the shadow for ``num_blocks`` blocks of ``nbytes`` shared bytes each.

        ``block_dim`` and ``grid_dim`` only serve to turn linear block and thread ids back into
        (x, y, z) for the reports.
        """
        bx, by, bz = (int(v) for v in block_dim)
        if bx * by * bz > MAX_THREADS_PER_BLOCK:
            raise ValueError(f"block {block_dim} has more than {MAX_THREADS_PER_BLOCK} threads")
        self.num_blocks = int(num_blocks)
        self.nbytes = int(nbytes)
        self.block_dim = (bx, by, bz)
        self.grid_dim = tuple(int(v) for v in grid_dim)
        self.max_findings = int(max_findings)
        size = self.num_blocks * self.nbytes
        self._epoch = np.ones(self.num_blocks, dtype=np.int64)
        self._w = np.zeros(size, dtype=np.int64)  # last writer: epoch | line | tid
        self._r = np.zeros(size, dtype=np.int64)  # first reader: epoch | line | multi | tid
        # (kind, first_line, second_line) -> [count, block, example]
        self._hazards: dict[tuple[str, int, int], list] = {}
        # line -> [count, block, thread, offset]
        self._uninit: dict[int, list] = {}

    # ------------------------------------------------------------------ public API

    def access(
        self,
        block: np.ndarray,
        warp: np.ndarray,
        offset: np.ndarray,
        nbytes: int,
        active: np.ndarray,
        write: bool,
        line: int,
    ) -> None:
        """Record one batched shared-memory instruction and check it against the shadow.

        Args:
            block: int64 ``[W]`` linear block id (x + y*gx + z*gx*gy) of each warp.
            warp: int64 ``[W]`` warp index inside its block (linear tid // 32).
            offset: uint64 ``[W, 32]`` byte offset of each lane's access in its block's shared memory.
            nbytes: bytes accessed per lane (a ``.v4.f32`` is 16).
            active: bool ``[W, 32]`` lanes that really access (active and predicate-true).
            write: True for stores (and the write half of atomics), False for loads.
            line: source line of the instruction (0 if unknown).

        Bytes outside ``[0, nbytes)`` of the block's shared memory are ignored here; the memory
        model reports them as out-of-bounds accesses.
        """
        flat, tid, epoch = self._expand(block, warp, offset, nbytes, active)
        if flat.size == 0:
            return
        line = min(max(int(line), 0), int(_LINE_MASK))
        me = tid >> _WARP_SHIFT
        if write:
            self._write(flat, tid, epoch, me, line)
        else:
            self._read(flat, tid, epoch, me, line)

    def barrier(self, blocks: np.ndarray) -> None:
        """A barrier completed in each of ``blocks`` (linear ids): start a new epoch there."""
        blocks = np.asarray(blocks, dtype=np.int64)
        self._epoch[blocks] += 1  # duplicates increment once, which is all that matters

    def hazards(self) -> tuple[Hazard, ...]:
        """Aggregated hazards, sorted by (first_line, second_line, kind)."""
        out = [
            Hazard(kind, first, second, int(v[0]), v[1], v[2])
            for (kind, first, second), v in self._hazards.items()
        ]
        return tuple(sorted(out, key=lambda h: (h.first_line, h.second_line, h.kind)))

    def uninit_reads(self) -> tuple[UninitRead, ...]:
        """Aggregated uninitialised shared reads, one per source line, sorted by line."""
        return tuple(
            UninitRead(line, v[1], v[2], v[3], int(v[0])) for line, v in sorted(self._uninit.items())
        )

    # ------------------------------------------------------------------ checks

    def _read(self, flat, tid, epoch, me, line) -> None:
        w = self._w[flat]
        uninit = w == 0
        if uninit.any():
            self._note_uninit(uninit, flat, tid, line)
        raw = ((w >> _EPOCH_SHIFT) == epoch) & (((w & _TID_MASK) >> _WARP_SHIFT) != me)
        if raw.any():
            self._note_hazard("RAW", raw, w, flat, tid, line)

        # Reader set. A byte whose reader entry is from an older epoch starts a fresh set; then
        # every record whose warp differs from the stored first reader marks the byte as read by
        # several warps. Re-reading after the scatter also catches two warps of this very batch
        # starting the same fresh set (the scatter keeps only one of them).
        r = self._r[flat]
        fresh = (r >> _EPOCH_SHIFT) != epoch
        if fresh.any():
            stamp = self._stamp(epoch, line, tid, flat.shape)
            self._r[flat[fresh]] = stamp[fresh]
            r = self._r[flat]
        other = (((r & _TID_MASK) >> _WARP_SHIFT) != me) & ((r & _MULTI) == 0)
        if other.any():
            self._r[flat[other]] |= _MULTI

    def _write(self, flat, tid, epoch, me, line) -> None:
        w = self._w[flat]
        waw = ((w >> _EPOCH_SHIFT) == epoch) & (((w & _TID_MASK) >> _WARP_SHIFT) != me)
        if waw.any():
            self._note_hazard("WAW", waw, w, flat, tid, line)
        r = self._r[flat]
        war = ((r >> _EPOCH_SHIFT) == epoch) & (
            ((r & _MULTI) != 0) | (((r & _TID_MASK) >> _WARP_SHIFT) != me)
        )
        if war.any():
            self._note_hazard("WAR", war, r, flat, tid, line)

        self._w[flat] = self._stamp(epoch, line, tid, flat.shape)
        # Two warps of this batch writing one byte: the scatter kept one of them; every record
        # of another warp lost the race against it.
        w = self._w[flat]
        lost = ((w & _TID_MASK) >> _WARP_SHIFT) != me
        if lost.any():
            self._note_hazard("WAW", lost, w, flat, tid, line)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _stamp(epoch, line, tid, shape) -> np.ndarray:
        """Packed shadow entries for these records, broadcast to the records' shape."""
        stamp = (epoch << _EPOCH_SHIFT) | (np.int64(line) << _LINE_SHIFT) | tid
        return np.broadcast_to(stamp, shape)

    def _expand(self, block, warp, offset, nbytes, active):
        """Active lanes x bytes -> (flat shadow index, thread id, epoch).

        In the common case (every byte inside shared memory) ``flat`` is ``[lanes, nbytes]`` and
        the per-lane ``tid`` and ``epoch`` are ``[lanes, 1]``, so nothing is repeated per byte;
        otherwise all three are 1-D over the bytes that are inside.
        """
        active = np.asarray(active, dtype=bool)
        wi, lane = np.nonzero(active)
        offset = np.asarray(offset, dtype=np.uint64)[wi, lane]
        block = np.asarray(block, dtype=np.int64)[wi]
        tid = np.asarray(warp, dtype=np.int64)[wi] * WARP_SIZE + lane
        nbytes = int(nbytes)
        # Drop lanes that start outside shared memory before adding, so a huge offset cannot wrap.
        ok = offset < np.uint64(self.nbytes)
        if not ok.all():
            offset, block, tid = offset[ok], block[ok], tid[ok]
        start = block * self.nbytes + offset.astype(np.int64)
        epoch = self._epoch[block]
        flat = start[:, None] + np.arange(nbytes, dtype=np.int64)
        inside = (offset.astype(np.int64) + nbytes) <= self.nbytes
        if inside.all():
            return flat, tid[:, None], epoch[:, None]
        keep = (flat - (block * self.nbytes)[:, None]) < self.nbytes
        rows = np.nonzero(keep)[0]
        return flat[keep], tid[rows], epoch[rows]

    def _pick(self, arr, where, shape) -> np.ndarray:
        return np.broadcast_to(arr, shape)[where]

    def _block_xyz(self, b: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid_dim
        return (b % gx, (b // gx) % gy, b // (gx * gy))

    def _thread_xyz(self, t: int) -> tuple[int, int, int]:
        bx, by, _ = self.block_dim
        return (t % bx, (t // bx) % by, t // (bx * by))

    def _note_hazard(self, kind, mask, prev, flat, tid, line) -> None:
        """Aggregate the flagged records of one check by the earlier access's source line."""
        where = np.nonzero(mask)
        prev = prev[where]
        first_lines = (prev >> _LINE_SHIFT) & _LINE_MASK
        lines, first_pos, counts = np.unique(first_lines, return_index=True, return_counts=True)
        new = [
            (first_line, pos, count)
            for first_line, pos, count in zip(lines.tolist(), first_pos.tolist(), counts.tolist())
            if (kind, first_line, line) not in self._hazards
        ]
        for first_line, count in zip(lines.tolist(), counts.tolist()):
            entry = self._hazards.get((kind, first_line, line))
            if entry is not None:
                entry[0] += count
        if not new:
            return
        f = flat[where]
        t = self._pick(tid, where, flat.shape)
        for first_line, pos, count in new:
            if len(self._hazards) >= self.max_findings:
                break
            block, byte = divmod(int(f[pos]), self.nbytes)
            example = self._example(kind, int(prev[pos]), int(t[pos]), byte, first_line, line)
            self._hazards[(kind, first_line, line)] = [count, self._block_xyz(block), example]

    def _example(self, kind: str, prev: int, tid: int, byte: int, first: int, second: int) -> str:
        earlier = self._thread_xyz(prev & int(_TID_MASK))
        later = self._thread_xyz(tid)
        if kind == "RAW":
            return (
                f"thread {earlier} wrote shared offset {byte} at line {first}; "
                f"thread {later} read it at line {second} with no barrier in between"
            )
        if kind == "WAW":
            return (
                f"thread {earlier} wrote shared offset {byte} at line {first}; "
                f"thread {later} wrote it at line {second} with no barrier in between"
            )
        if prev & int(_MULTI):
            who = f"threads of several warps (first: thread {earlier})"
        else:
            who = f"thread {earlier}"
        return (
            f"{who} read shared offset {byte} at line {first}; "
            f"thread {later} wrote it at line {second} with no barrier in between"
        )

    def _note_uninit(self, mask, flat, tid, line) -> None:
        count = int(np.count_nonzero(mask))
        entry = self._uninit.get(line)
        if entry is not None:
            entry[0] += count
            return
        if len(self._uninit) >= self.max_findings:
            return
        where = np.unravel_index(int(np.argmax(mask)), mask.shape)
        block, byte = divmod(int(flat[where]), self.nbytes)
        t = int(np.broadcast_to(tid, flat.shape)[where])
        self._uninit[line] = [count, self._block_xyz(block), self._thread_xyz(t), byte]
