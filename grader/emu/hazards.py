"""Shared-memory race and uninitialised-read tracking, like racecheck and initcheck but deterministic.

One ``SharedShadow`` lives for one launch. The emulator calls :meth:`SharedShadow.access` once per
batched shared-memory instruction (all warps of the grid that execute it together) and
:meth:`SharedShadow.barrier` whenever a block's barrier completes.

Rules (survey section 4.3), per block and per *epoch* (the interval between two completed barriers
of that block), at byte granularity:

* RAW: a read touches a byte last written in this epoch by a different warp.
* WAW: a write touches a byte written in this epoch by a different warp (including two warps of one
  batched instruction writing the same byte).
* WAR: a write touches a byte read in this epoch by a different warp. The reader set is compressed
  to "first reader thread + whether more than one warp read", which is enough to never miss a WAR.
* Accesses from the same warp are not reported by the three rules above (the emulator runs a warp in
  lockstep). When the caller passes each warp's count of warp-level synchronisations
  (``warp_sync``: ``__syncwarp()``, shuffles, votes and other ``.sync`` collectives the warp
  executed), one more rule applies, because since Volta the lanes of a warp are scheduled
  independently: a read of a byte that *another lane of the same warp* wrote in this epoch with no
  warp-level synchronisation of that warp in between is an intra-warp RAW (scope "warp"); a write of
  a byte another lane read in that window is an intra-warp WAR. When the read and the write are both
  ``volatile`` (the legacy warp-synchronous reduction tail, ``volatile float* v = s; v[t] +=
  v[t + 16];``) the hazard is reported with ``cause = "volatile"``: it is a race since Volta, as
  racecheck says, but an exercise may allow the idiom (docs/exercise-format.md), so it is told apart.
* Atomics (``atomic=True``) are writes that never conflict with each other; an atomic and a plain
  access of another warp in one epoch still race.
* Uninitialised read: a read of a byte no thread of the block has written since the launch.

Findings are aggregated by ``(kind, first_line, second_line)`` (hazards) and by line (uninitialised
reads). ``count`` is the number of conflicting (thread, byte) accesses, so a 4-byte read by one
thread of a word written by another warp counts 4. At most ``max_findings`` distinct keys of each
list are kept (later keys are dropped, counts of kept keys keep growing) so a hostile kernel cannot
exhaust memory.

Shadow layout: two int64 arrays of ``num_blocks * nbytes`` entries (16 bytes per shared byte, taken
from zero-filled memory, so pages of blocks that never touch shared memory cost nothing). Each entry
packs the epoch, source line and thread of the last writer (``_w``) or first reader (``_r``, plus
the "several warps read" bit), so one fancy-indexed gather checks a whole batch.

Fast paths (exact; they only skip work that provably cannot change a report):

* A load is checked against the writer shadow only in blocks where it can find something: blocks
  with a byte never written (``_unwritten``, kept exact per block) or with a write in the current
  epoch (``_wepoch``). A tiled kernel reads its tiles in an epoch with no write, after every byte
  was written, so its loads skip the gather.
* The reader-set update of a load is deferred: the batch goes to a log, and the log is replayed in
  order just before the next store (the only thing that looks at reader entries). A reader entry
  from an older epoch can never be reported, so rows whose block has since completed a barrier are
  dropped from the log instead of replayed; in a tiled kernel the whole log expires at the
  barrier that ends the compute phase and is never replayed.
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
_ATOMIC = np.int64(1 << 10)  # the same bit in writer entries: written by an atomic
# Intra-warp reader entries (``_rw``): bits 0-9 first reader thread, bit 10 "read by several lanes of
# that warp", bit 11 "some read was not volatile", bits 12-27 line, bits 28-63 the window the reads
# fall in: (block epoch mod 2^18) << 18 | (warp-sync count mod 2^18).
_RW_MULTI = np.int64(1 << 10)
_RW_NONVOL = np.int64(1 << 11)
_RW_LINE_SHIFT = np.int64(12)
_RW_KEY_SHIFT = np.int64(28)
_RW_KEY_BITS = np.int64((1 << 18) - 1)
_LINE_SHIFT = np.int64(11)
_LINE_MASK = np.int64(0xFFFF)
_EPOCH_SHIFT = np.int64(27)
_WARP_SHIFT = np.int64(5)

# Deferred load batches: replayed once their lanes add up to this many, to bound memory.
_MAX_PENDING_LANES = 1 << 23


@dataclass
class _PendingRead:
    """A load batch whose reader-set update is deferred (arrays owned by the shadow)."""

    block: np.ndarray  # int64 [W] linear block id of each row
    warp: np.ndarray  # int64 [W] warp in the block
    offset: np.ndarray  # uint32 [W, 32] byte offsets, clipped to the shadow size (still "outside")
    active: np.ndarray  # bool [W, 32]
    epoch: np.ndarray  # int64 [W] epoch of each row's block when the load ran
    nbytes: int
    line: int
    sync: np.ndarray | None = None  # int64 [W] warp-sync count of each row's warp (intra-warp rule)
    volatile: bool = False


@dataclass(frozen=True)
class Hazard:
    """A data race between two source lines (racecheck-style, aggregated)."""

    kind: str  # "RAW", "WAR", "WAW"
    first_line: int  # source line of the earlier access
    second_line: int  # source line of the later, conflicting access
    count: int  # conflicting (thread, byte) accesses over the launch for this key
    block: tuple[int, int, int]  # one block where it happened (first seen)
    example: str  # one concrete thread pair and offset
    space: str = "shared"  # "shared" or "global"
    # "block": threads of different warps of one block; "warp": lanes of one warp with no warp-level
    # synchronisation between (Volta's independent thread scheduling); "grid": different blocks.
    scope: str = "block"
    # What makes this pair of accesses a race when it may look like none: "" (plain accesses),
    # "block-atomic" (atomics of different blocks, one of block scope: atomicAdd_block), "volatile"
    # (both accesses volatile, lanes of one warp: the legacy warp-synchronous idiom, which the race
    # check's spec may allow; see docs/exercise-format.md).
    cause: str = ""


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
        self._w = np.zeros(size, dtype=np.int64)  # last writer: epoch | line | tid | atomic bit
        # last writer's warp-sync count << 2 | volatile bit << 1 (the intra-warp rule; see above)
        self._ws = np.zeros(size, dtype=np.int64)
        self._rw = np.zeros(size, dtype=np.int64)  # intra-warp reader set (see _RW_*)
        self._r = np.zeros(size, dtype=np.int64)  # first reader: epoch | line | multi | tid
        # Per-block summaries that let loads skip the writer check (see the module docstring).
        self._unwritten = np.full(self.num_blocks, self.nbytes, dtype=np.int64)  # bytes never written
        self._wepoch = np.zeros(self.num_blocks, dtype=np.int64)  # epoch of the block's last store
        self._pending: list[_PendingRead] = []  # loads whose reader update is deferred, in order
        self._pending_lanes = 0
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
        warp_sync: np.ndarray | None = None,
        volatile: bool = False,
        atomic: bool = False,
    ) -> None:
        """Record one batched shared-memory instruction and check it against the shadow.

        Args:
            block: int64 ``[W]`` linear block id (x + y*gx + z*gx*gy) of each warp.
            warp: int64 ``[W]`` warp index inside its block (linear tid // 32).
            offset: uint64 or uint32 ``[W, 32]`` byte offset of each lane's access in its block's
                shared memory.
            nbytes: bytes accessed per lane (a ``.v4.f32`` is 16).
            active: bool ``[W, 32]`` lanes that really access (active and predicate-true).
            write: True for stores (and the write half of atomics), False for loads.
            line: source line of the instruction (0 if unknown).
            warp_sync: int64 ``[W]`` warp-level synchronisations each row's warp has executed so far
                in this launch; None turns the intra-warp rule off.
            volatile: the instruction is a ``volatile`` access (``ld.volatile.shared``).
            atomic: the write half of an atomic (never a hazard against another atomic).

        Bytes outside ``[0, nbytes)`` of the block's shared memory are ignored here; the memory
        model reports them as out-of-bounds accesses.
        """
        line = min(max(int(line), 0), int(_LINE_MASK))
        block = np.asarray(block, dtype=np.int64)
        warp = np.asarray(warp, dtype=np.int64)
        offset = np.asarray(offset)
        if offset.dtype != np.uint32:
            offset = offset.astype(np.uint64, copy=False)
        active = np.asarray(active, dtype=bool)
        rows = active.any(axis=1)
        sync = None if warp_sync is None else np.asarray(warp_sync, dtype=np.int64)
        if not rows.all():
            block, warp, offset, active = block[rows], warp[rows], offset[rows], active[rows]
            sync = None if sync is None else sync[rows]
        if block.size == 0:
            return
        epoch_rows = self._epoch[block]
        if write:
            self._replay_reads()  # the WAR check below needs every earlier load's reader entry
            flat, tid, epoch = self._expand(block, warp, offset, active, nbytes, epoch_rows)
            if flat.size:
                if atomic:  # an atomic reads the old value first: one no thread wrote is an uninitialised read
                    never = self._w[flat] == 0
                    if never.any():
                        self._note_uninit(never, flat, tid, line)
                side = None
                if sync is not None:
                    rec_sync = self._expand(block, warp, offset, active, nbytes, sync)[2]
                    self._check_warp_write(flat, tid, epoch, rec_sync, volatile, line)
                    side = (rec_sync << 2) | (2 if volatile else 0)
                self._write(flat, tid, epoch, tid >> _WARP_SHIFT, line, atomic, side)
            # Conservative (rows with every lane outside count too): only gates the load check.
            self._wepoch[block] = epoch_rows
            return
        # Only rows whose block has a never-written byte or a store in this epoch can be an
        # uninitialised read or a RAW; the others are skipped without touching the shadow.
        check = (self._unwritten[block] != 0) | (self._wepoch[block] == epoch_rows)
        if check.any():
            sel = None if check.all() else check
            rows_ = _rows(sel, block, warp, offset, active)
            flat, tid, epoch, rec_sync = self._expand_with(*rows_, nbytes, epoch_rows if sel is None else epoch_rows[sel],
                                                           None if sync is None else sync if sel is None else sync[sel])
            if flat.size:
                # One gather and one decoding of the writer entries serve both checks.
                w = self._w[flat]
                wtid = w & _TID_MASK
                current = (w >> _EPOCH_SHIFT) == epoch
                other_warp = (wtid >> _WARP_SHIFT) != (tid >> _WARP_SHIFT)
                self._check_read(flat, tid, epoch, tid >> _WARP_SHIFT, line, w, current & other_warp)
                if sync is not None:
                    self._check_warp_read(flat, tid, epoch, rec_sync, volatile, line, w,
                                          current & ~other_warp & (wtid != tid))
        self._defer_read(block, warp, offset, active, epoch_rows, int(nbytes), line, sync, volatile)

    def barrier(self, blocks: np.ndarray) -> None:
        """A barrier completed in each of ``blocks`` (linear ids): start a new epoch there."""
        blocks = np.asarray(blocks, dtype=np.int64)
        self._epoch[blocks] += 1  # duplicates increment once, which is all that matters
        if self._pending:
            # Logged loads of blocks that just left their epoch can never be reported any more.
            self._pending = [p for p in self._pending if (self._epoch[p.block] == p.epoch).any()]
            self._pending_lanes = sum(p.active.size for p in self._pending)

    def hazards(self) -> tuple[Hazard, ...]:
        """Aggregated hazards, sorted by (first_line, second_line, kind)."""
        out = [
            Hazard(kind.split("-")[-1], first, second, int(v[0]), v[1], v[2],
                   scope="warp" if "warp-" in kind else "block",
                   cause="volatile" if kind.startswith("vwarp-") else "")
            for (kind, first, second), v in self._hazards.items()
        ]
        return tuple(sorted(out, key=lambda h: (h.first_line, h.second_line, h.kind)))

    def uninit_reads(self) -> tuple[UninitRead, ...]:
        """Aggregated uninitialised shared reads, one per source line, sorted by line."""
        return tuple(
            UninitRead(line, v[1], v[2], v[3], int(v[0])) for line, v in sorted(self._uninit.items())
        )

    # ------------------------------------------------------------------ checks

    def _check_read(self, flat, tid, epoch, me, line, w=None, raw=None) -> None:
        """Uninitialised reads and RAW of a load batch, against the writer shadow (`w`: its entries
        at `flat`, and `raw` the RAW records, where the caller has them already)."""
        w = self._w[flat] if w is None else w
        uninit = w == 0
        if uninit.any():
            self._note_uninit(uninit, flat, tid, line)
        if raw is None:
            raw = ((w >> _EPOCH_SHIFT) == epoch) & (((w & _TID_MASK) >> _WARP_SHIFT) != me)
        if raw.any():
            self._note_hazard("RAW", raw, w, flat, tid, line)

    def _check_warp_read(self, flat, tid, epoch, sync, volatile, line, w=None, same_warp=None) -> None:
        """The intra-warp rule: a byte written in this epoch by another lane of the reader's warp,
        with no warp-level synchronisation of that warp since; kept apart ("vwarp-RAW") when both
        accesses are volatile (`same_warp`: the records written in this epoch by another lane of
        the warp, if known)."""
        w = self._w[flat] if w is None else w
        if same_warp is None:
            wtid = w & _TID_MASK
            same_warp = ((w >> _EPOCH_SHIFT) == epoch) & ((wtid >> _WARP_SHIFT) == (tid >> _WARP_SHIFT)) & (wtid != tid)
        if not same_warp.any():
            return
        ws = self._ws[flat]
        race = same_warp & ((ws >> 2) == sync)
        if volatile:
            legacy = race & ((ws & 2) != 0)
            if legacy.any():
                self._note_hazard("vwarp-RAW", legacy, w, flat, tid, line)
                race &= ~legacy
        if race.any():
            self._note_hazard("warp-RAW", race, w, flat, tid, line)

    def _defer_read(self, block, warp, offset, active, epoch_rows, nbytes, line, sync=None, volatile=False) -> None:
        """Log a load batch for its reader-set update (copies: the caller may reuse its arrays)."""
        # Offsets at or past the end are dropped by _expand either way, so clipping them to the
        # shadow size keeps them "outside" and lets them fit in 32 bits.
        if offset.dtype == np.uint32:
            clipped = offset.copy()
        else:
            clipped = np.minimum(offset, np.uint64(self.nbytes)).astype(np.uint32)
        self._pending.append(_PendingRead(block.copy(), warp.copy(), clipped, active.copy(),
                                          epoch_rows.copy(), nbytes, line,
                                          None if sync is None else sync.copy(), volatile))
        self._pending_lanes += active.size
        if self._pending_lanes > _MAX_PENDING_LANES:
            self._replay_reads()

    def _replay_reads(self) -> None:
        """Apply the logged loads' reader-set updates in order, skipping rows of past epochs."""
        pending, self._pending, self._pending_lanes = self._pending, [], 0
        for p in pending:
            live = self._epoch[p.block] == p.epoch
            if not live.any():
                continue
            sel = None if live.all() else live
            block, warp, offset, active = _rows(sel, p.block, p.warp, p.offset, p.active)
            flat, tid, epoch, sync = self._expand_with(block, warp, offset, active, p.nbytes,
                                                       p.epoch if sel is None else p.epoch[sel],
                                                       None if p.sync is None else p.sync if sel is None else p.sync[sel])
            if flat.size:
                self._update_readers(flat, tid, epoch, tid >> _WARP_SHIFT, p.line)
                if p.sync is not None:
                    self._update_warp_readers(flat, tid, epoch, sync, p.volatile, p.line)

    @staticmethod
    def _warp_key(epoch, sync):
        return ((epoch & _RW_KEY_BITS) << np.int64(18)) | (sync & _RW_KEY_BITS)

    def _update_warp_readers(self, flat, tid, epoch, sync, volatile, line) -> None:
        """The intra-warp reader set of a load batch: the first reader of each byte in the current
        (epoch, warp-sync) window of its warp, and whether other lanes of that warp read it too."""
        key = self._warp_key(epoch, sync)
        me = tid >> _WARP_SHIFT
        r = self._rw[flat]
        mine = ((r >> _RW_KEY_SHIFT) == key) & (((r & _TID_MASK) >> _WARP_SHIFT) == me)
        fresh = ~mine
        if fresh.any():
            stamp = np.broadcast_to((key << _RW_KEY_SHIFT) | (np.int64(line) << _RW_LINE_SHIFT) | tid
                                    | (0 if volatile else _RW_NONVOL), flat.shape)
            self._rw[flat[fresh]] = stamp[fresh]
            r = self._rw[flat]
            mine = ((r >> _RW_KEY_SHIFT) == key) & (((r & _TID_MASK) >> _WARP_SHIFT) == me)
        other = mine & ((r & _TID_MASK) != tid) & ((r & _RW_MULTI) == 0)
        if other.any():
            self._rw[flat[other]] |= _RW_MULTI
        if not volatile:
            nonvol = mine & ((r & _RW_NONVOL) == 0)
            if nonvol.any():
                self._rw[flat[nonvol]] |= _RW_NONVOL

    def _check_warp_write(self, flat, tid, epoch, sync, volatile, line) -> None:
        """Intra-warp WAR: a byte that another lane of the writer's warp read in the same (epoch,
        warp-sync) window; kept apart ("vwarp-WAR") when every one of those reads and this write
        are volatile."""
        key = self._warp_key(epoch, sync)
        r = self._rw[flat]
        rtid = r & _TID_MASK
        race = ((r >> _RW_KEY_SHIFT) == key) & ((rtid >> _WARP_SHIFT) == (tid >> _WARP_SHIFT)) & (
            (rtid != tid) | ((r & _RW_MULTI) != 0))
        if not race.any():
            return
        # _note_hazard reads the earlier line from bits 11-26 of the entry: repack the reader's
        prev = ((r >> _RW_LINE_SHIFT) & _LINE_MASK) << _LINE_SHIFT | rtid
        if volatile:
            legacy = race & ((r & _RW_NONVOL) == 0)
            if legacy.any():
                self._note_hazard("vwarp-WAR", legacy, prev, flat, tid, line)
                race &= ~legacy
        if race.any():
            self._note_hazard("warp-WAR", race, prev, flat, tid, line)

    def _update_readers(self, flat, tid, epoch, me, line) -> None:
        """The reader-set half of a load batch (see the module docstring for the encoding)."""
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

    def _write(self, flat, tid, epoch, me, line, atomic=False, side=None) -> None:
        w = self._w[flat]
        waw = ((w >> _EPOCH_SHIFT) == epoch) & (((w & _TID_MASK) >> _WARP_SHIFT) != me)
        if atomic:
            waw &= (w & _ATOMIC) == 0  # atomics never race with each other
        if waw.any():
            self._note_hazard("WAW", waw, w, flat, tid, line)
        r = self._r[flat]
        war = ((r >> _EPOCH_SHIFT) == epoch) & (
            ((r & _MULTI) != 0) | (((r & _TID_MASK) >> _WARP_SHIFT) != me)
        )
        if war.any():
            self._note_hazard("WAR", war, r, flat, tid, line)

        fresh = w == 0
        if fresh.any():
            self._count_first_writes(flat[fresh])
        stamp = self._stamp(epoch, line, tid, flat.shape)
        self._w[flat] = stamp | _ATOMIC if atomic else stamp
        if side is not None:
            self._ws[flat] = np.broadcast_to(side, flat.shape)
        # Two warps of this batch writing one byte: the scatter kept one of them; every record
        # of another warp lost the race against it (atomics do not race with each other).
        w = self._w[flat]
        lost = ((w & _TID_MASK) >> _WARP_SHIFT) != me
        if lost.any() and not atomic:
            self._note_hazard("WAW", lost, w, flat, tid, line)

    def _count_first_writes(self, flat: np.ndarray) -> None:
        """Keep ``_unwritten`` exact for bytes ``flat`` (never written before; may repeat).

        Cheaper than sorting: each record scatters a distinct negative tag into the writer
        shadow (real entries are positive, and the caller overwrites these bytes right after),
        and the record whose tag survived stands for its byte.
        """
        tag = -np.arange(1, flat.size + 1, dtype=np.int64)
        self._w[flat] = tag
        first = flat[self._w[flat] == tag]
        self._unwritten -= np.bincount(first // self.nbytes, minlength=self.num_blocks)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _stamp(epoch, line, tid, shape) -> np.ndarray:
        """Packed shadow entries for these records, broadcast to the records' shape."""
        stamp = (epoch << _EPOCH_SHIFT) | (np.int64(line) << _LINE_SHIFT) | tid
        return np.broadcast_to(stamp, shape)

    def _expand(self, block, warp, offset, active, nbytes, epoch_rows):
        """Active lanes x bytes -> (flat shadow index, thread id, epoch).

        ``epoch_rows`` is the epoch of each row's block when the access ran. In the common case
        (every byte inside shared memory) ``flat`` is ``[lanes, nbytes]`` and the per-lane ``tid``
        and ``epoch`` are ``[lanes, 1]``, so nothing is repeated per byte; otherwise all three are
        1-D over the bytes that are inside.
        """
        return self._expand_with(block, warp, offset, active, nbytes, epoch_rows, None)[:3]

    def _expand_with(self, block, warp, offset, active, nbytes, epoch_rows, sync_rows):
        """_expand, plus ``sync_rows`` (a per-row value, or None) spread to the records the same way
        as the epoch: one pass for a load that both checks need."""
        wi, lane = np.nonzero(active)
        offset = offset[wi, lane]
        block = block[wi]
        epoch = epoch_rows[wi]
        sync = None if sync_rows is None else sync_rows[wi]
        tid = warp[wi] * WARP_SIZE + lane
        nbytes = int(nbytes)
        # Drop lanes that start outside shared memory before adding, so a huge offset cannot wrap.
        ok = offset < self.nbytes
        if not ok.all():
            offset, block, tid, epoch = offset[ok], block[ok], tid[ok], epoch[ok]
            sync = None if sync is None else sync[ok]
        start = block * self.nbytes + offset.astype(np.int64)
        flat = start[:, None] + np.arange(nbytes, dtype=np.int64)
        inside = (offset.astype(np.int64) + nbytes) <= self.nbytes
        if inside.all():
            return flat, tid[:, None], epoch[:, None], None if sync is None else sync[:, None]
        keep = (flat - (block * self.nbytes)[:, None]) < self.nbytes
        rows = np.nonzero(keep)[0]
        return flat[keep], tid[rows], epoch[rows], None if sync is None else sync[rows]

    def _pick(self, arr, where, shape) -> np.ndarray:
        return np.broadcast_to(arr, shape)[where]

    def _note_hazard(self, kind, mask, prev, flat, tid, line) -> None:
        """Aggregate the flagged records of one check by the earlier access's source line."""
        prev = prev[mask]  # the flagged records in np.nonzero(mask)'s order
        first_lines = (prev >> _LINE_SHIFT) & _LINE_MASK
        if (first_lines == first_lines[0]).all():  # one earlier line (the usual case): no sort needed
            lines, first_pos, counts = [int(first_lines[0])], [0], [int(first_lines.size)]
        else:
            found = np.unique(first_lines, return_index=True, return_counts=True)
            lines, first_pos, counts = (a.tolist() for a in found)
        new = [
            (first_line, pos, count)
            for first_line, pos, count in zip(lines, first_pos, counts)
            if (kind, first_line, line) not in self._hazards
        ]
        for first_line, count in zip(lines, counts):
            entry = self._hazards.get((kind, first_line, line))
            if entry is not None:
                entry[0] += count
        if not new:
            return
        where = np.nonzero(mask)
        f = flat[where]
        t = self._pick(tid, where, flat.shape)
        for first_line, pos, count in new:
            if len(self._hazards) >= self.max_findings:
                break
            block, byte = divmod(int(f[pos]), self.nbytes)
            example = self._example(kind, int(prev[pos]), int(t[pos]), byte, first_line, line)
            self._hazards[(kind, first_line, line)] = [count, xyz(self.grid_dim, block), example]

    def _example(self, kind: str, prev: int, tid: int, byte: int, first: int, second: int) -> str:
        earlier = xyz(self.block_dim, prev & int(_TID_MASK))
        later = xyz(self.block_dim, tid)
        if kind.startswith("vwarp-"):
            return self._example(kind[1:], prev, tid, byte, first, second) + " (both accesses volatile)"
        if kind == "warp-WAR":
            return (
                f"lanes of one warp (the first: {earlier}) read shared offset {byte} at line {first}; lane {later} "
                f"of the same warp wrote it at line {second} with no __syncwarp() in between"
            )
        if kind == "warp-RAW":
            return (
                f"lane {earlier} wrote shared offset {byte} at line {first}; lane {later} of the same warp "
                f"read it at line {second} with no __syncwarp() in between"
            )
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
        self._uninit[line] = [count, xyz(self.grid_dim, block), xyz(self.block_dim, t), byte]


def xyz(dims: tuple[int, int, int], linear: int) -> tuple[int, int, int]:
    """A linear block (or thread) id back into (x, y, z) for a grid (or block) of `dims`, for the reports."""
    dx, dy, _ = dims
    return (linear % dx, (linear // dx) % dy, linear // (dx * dy))


def _rows(sel, *arrays):
    """``arrays`` restricted to the rows where ``sel`` is true (all of them when sel is None)."""
    return arrays if sel is None else tuple(a[sel] for a in arrays)
