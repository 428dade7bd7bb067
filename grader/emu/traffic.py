"""Memory-traffic model of one warp-level memory instruction, in Nsight Compute's terms.

Both functions take a whole batch of warps at once (``W`` rows of 32 lanes) and return one count per
warp, so the emulator can charge a grid-wide batched instruction with a single NumPy call.

* Global memory: distinct 32-byte sectors touched by the active lanes
  (``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}``).
* Shared memory: wavefronts and ideal wavefronts, from which bank conflicts are
  ``wavefronts - ideal`` (``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}``).

These are PTX-level models (see docs/emulator.md and the research survey, section 3): ptxas may
vectorise or drop accesses, and the 8- and 16-byte shared-memory phase rule is an assumption that has
not been calibrated against ncu.
"""

from __future__ import annotations

import numpy as np

SECTOR_BYTES = 32
WARP_SIZE = 32
NUM_BANKS = 32
BANK_BYTES = 4

# Larger than any real sector or word id (addresses are below 2**64, ids are address // 4 at most),
# so inactive lanes sort to the end of each row and are never counted.
_SENTINEL = np.uint64(np.iinfo(np.uint64).max)


def _per_lane_bytes(nbytes: int | np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Access size per lane as uint64, broadcast to ``shape``."""
    return np.broadcast_to(np.asarray(nbytes, dtype=np.uint64), shape)


def _count_distinct_per_row(ids: np.ndarray) -> np.ndarray:
    """Number of distinct non-sentinel values in each row of a 2-D uint64 array."""
    if ids.shape[1] == 0:
        return np.zeros(ids.shape[0], dtype=np.int64)
    s = np.sort(ids, axis=1)
    valid = s != _SENTINEL
    new_run = np.empty_like(valid)
    new_run[:, 0] = True
    new_run[:, 1:] = s[:, 1:] != s[:, :-1]
    return np.count_nonzero(new_run & valid, axis=1).astype(np.int64)


def global_sectors(addr: np.ndarray, nbytes: int | np.ndarray, active: np.ndarray) -> np.ndarray:
    """Distinct 32-byte sectors touched per warp by one global (or local) memory instruction.

    Args:
        addr: uint64 ``[W, 32]`` byte address of each lane's access.
        nbytes: bytes accessed per lane (1, 2, 4, 8 or 16; a ``.v4.f32`` is 16). A scalar, or an
            array broadcastable to ``[W, 32]``.
        active: bool ``[W, 32]``, lanes that are active *and* predicate-true.

    Returns:
        int64 ``[W]``: the number of distinct sectors touched by each warp's active lanes; 0 for a
        warp with no active lane. Each lane covers ``[addr, addr + nbytes)``, so a misaligned
        access may touch two sectors.
    """
    addr = np.asarray(addr, dtype=np.uint64)
    active = np.asarray(active, dtype=bool)
    if addr.ndim != 2 or addr.shape != active.shape:
        raise ValueError(f"addr {addr.shape} and active {active.shape} must both be [W, 32]")
    size = _per_lane_bytes(nbytes, addr.shape)
    # An access of at most 32 bytes spans at most two sectors; wider ones (never emitted) would
    # also touch the sectors between its first and last, which this model does not count.
    if np.any(size > np.uint64(SECTOR_BYTES)):
        raise ValueError("per-lane accesses wider than 32 bytes are not modelled")
    one = np.uint64(1)
    sector = np.uint64(SECTOR_BYTES)
    with np.errstate(over="ignore"):
        first = addr // sector
        # max(size, 1) keeps a zero-size access inside its first sector instead of wrapping.
        last = (addr + np.maximum(size, one) - one) // sector
    first = np.where(active, first, _SENTINEL)
    last = np.where(active, last, _SENTINEL)
    return _count_distinct_per_row(np.concatenate([first, last], axis=1))


def _phase_lanes(nbytes: int) -> int:
    """Lanes served per shared-memory phase: a phase moves at most 128 bytes (32 banks x 4 B)."""
    if nbytes <= 4:
        return 32
    if nbytes == 8:
        return 16
    if nbytes == 16:
        return 8
    raise ValueError(f"unsupported shared access size {nbytes}")


def shared_wavefronts(
    offset: np.ndarray, nbytes: int, active: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Shared-memory wavefronts and ideal wavefronts per warp for one shared memory instruction.

    Model (survey section 3.2): bank = (byte_offset // 4) % 32. The warp is split into phases of
    32 lanes (accesses of at most 4 bytes), 16 lanes (8 bytes) or 8 lanes (16 bytes). Within a
    phase, lanes touching the same 32-bit word are served together (broadcast, or for stores one
    winner), and the phase needs as many wavefronts as the largest number of distinct words that
    fall in one bank. An 8-byte access touches 2 consecutive words, a 16-byte access 4.

    Args:
        offset: uint64 ``[W, 32]`` byte offset of each lane's access in the block's shared memory.
        nbytes: bytes accessed per lane (1, 2, 4, 8 or 16), the same for the whole instruction.
        active: bool ``[W, 32]``, lanes that are active and predicate-true.

    Returns:
        ``(wavefronts, ideal)``, int64 ``[W]`` each. ``ideal`` is the number of phases with at
        least one active lane; bank conflicts are ``wavefronts - ideal``. A warp with no active lane
        gets 0 and 0.
    """
    offset = np.asarray(offset, dtype=np.uint64)
    active = np.asarray(active, dtype=bool)
    if offset.ndim != 2 or offset.shape != active.shape or offset.shape[1] != WARP_SIZE:
        raise ValueError(f"offset {offset.shape} and active {active.shape} must both be [W, 32]")
    nbytes = int(nbytes)
    lanes = _phase_lanes(nbytes)
    nphase = WARP_SIZE // lanes
    num_warps = offset.shape[0]

    # Words touched by each lane: from offset // 4 to (offset + nbytes - 1) // 4. A misaligned
    # access (undefined in PTX) may touch one word more than an aligned one; size the word axis
    # from the data so the aligned common case sorts no padding.
    four = np.uint64(BANK_BYTES)
    first = offset // four
    last = (offset + np.uint64(nbytes - 1)) // four
    span = int((last - first).max(initial=0)) + 1
    k = np.arange(span, dtype=np.uint64)
    words = first[:, :, None] + k  # [W, 32, span]
    touched = active[:, :, None] & (k <= (last - first)[:, :, None])
    words = np.where(touched, words, _SENTINEL)

    # Distinct words per phase: sort each phase's words, keep the first of every run.
    words = words.reshape(num_warps * nphase, lanes * span)
    s = np.sort(words, axis=1)
    distinct = s != _SENTINEL
    distinct[:, 1:] &= s[:, 1:] != s[:, :-1]

    # Count distinct words per (phase, bank) with one bincount, then take the worst bank.
    rows, cols = np.nonzero(distinct)
    bank = (s[rows, cols] % np.uint64(NUM_BANKS)).astype(np.int64)
    per_bank = np.bincount(rows * NUM_BANKS + bank, minlength=num_warps * nphase * NUM_BANKS)
    worst = per_bank.reshape(num_warps, nphase, NUM_BANKS).max(axis=2)
    wavefronts = worst.sum(axis=1).astype(np.int64)

    phase_active = active.reshape(num_warps, nphase, lanes).any(axis=2)
    ideal = np.count_nonzero(phase_active, axis=1).astype(np.int64)
    return wavefronts, ideal


def atomic_sectors(addr: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Sectors Nsight Compute counts for one global atomic (`atom` or `red`) per warp.

    The lanes of a warp that hit one address are served one after another, so a sector is counted
    once per pass over it: for every sector the warp touches, the largest number of lanes on any
    one address in it. Distinct addresses in one sector share a pass (32 lanes on 32 consecutive
    words: 4 sectors); 32 lanes on one word: 32. Measured on an H200 lane pattern by lane pattern
    (bench/atomic_probe.py, tests/data/ncu_atomic_probe.json): this matches 84 of 87 patterns
    exactly for u32 and f32, `red` and `atom` alike; the other three, scattered random addresses,
    measured one sector more.

    Args:
        addr: uint64 ``[W, 32]`` byte address of each lane's access (aligned, as atomics must be).
        active: bool ``[W, 32]``, lanes that are active *and* predicate-true.

    Returns:
        int64 ``[W]``; 0 for a warp with no active lane.
    """
    addr = np.asarray(addr, dtype=np.uint64)
    active = np.asarray(active, dtype=bool)
    warps = addr.shape[0]
    out = np.zeros(warps, dtype=np.int64)
    w_idx, lane = np.nonzero(active)
    if w_idx.size == 0:
        return out
    a = addr[w_idx, lane]
    order = np.lexsort((a, w_idx))
    w_sorted, a_sorted = w_idx[order], a[order]
    # Runs of one (warp, address): their lengths are the lanes on that address.
    new_addr = np.ones(a_sorted.size, dtype=bool)
    new_addr[1:] = (w_sorted[1:] != w_sorted[:-1]) | (a_sorted[1:] != a_sorted[:-1])
    starts = np.flatnonzero(new_addr)
    lanes_on = np.diff(np.append(starts, a_sorted.size))
    w_run, sect_run = w_sorted[starts], a_sorted[starts] // np.uint64(SECTOR_BYTES)
    # Addresses sorted within a warp keep each sector's addresses together: take the max per run of
    # one (warp, sector).
    new_sect = np.ones(starts.size, dtype=bool)
    new_sect[1:] = (w_run[1:] != w_run[:-1]) | (sect_run[1:] != sect_run[:-1])
    sect_starts = np.flatnonzero(new_sect)
    passes = np.maximum.reduceat(lanes_on, sect_starts)
    np.add.at(out, w_run[sect_starts], passes)
    return out
