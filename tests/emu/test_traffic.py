"""Sector and shared-wavefront model: the textbook tables plus a brute-force reference."""

from __future__ import annotations

import numpy as np
import pytest

from grader.emu.traffic import global_sectors, shared_wavefronts

LANES = np.arange(32, dtype=np.uint64)
BASE = np.uint64(0x7F00_0000_0000)  # 256-byte aligned, like the emulator's allocations
ALL = np.ones((1, 32), dtype=bool)


def _row(addr: np.ndarray) -> np.ndarray:
    return np.asarray(addr, dtype=np.uint64).reshape(1, 32)


# ---------------------------------------------------------------- brute-force references


def ref_sectors(addr: np.ndarray, nbytes: int, active: np.ndarray) -> list[int]:
    out = []
    for w in range(addr.shape[0]):
        sectors = set()
        for lane in range(32):
            if active[w, lane]:
                for byte in range(int(addr[w, lane]), int(addr[w, lane]) + nbytes):
                    sectors.add(byte // 32)
        out.append(len(sectors))
    return out


def ref_wavefronts(offset: np.ndarray, nbytes: int, active: np.ndarray) -> tuple[list[int], list[int]]:
    per_phase = {1: 32, 2: 32, 4: 32, 8: 16, 16: 8}[nbytes]
    waves, ideal = [], []
    for w in range(offset.shape[0]):
        total, phases = 0, 0
        for start in range(0, 32, per_phase):
            banks: dict[int, set[int]] = {}
            any_active = False
            for lane in range(start, start + per_phase):
                if not active[w, lane]:
                    continue
                any_active = True
                for byte in range(int(offset[w, lane]), int(offset[w, lane]) + nbytes):
                    word = byte // 4
                    banks.setdefault(word % 32, set()).add(word)
            if any_active:
                phases += 1
                total += max(len(v) for v in banks.values())
        waves.append(total)
        ideal.append(phases)
    return waves, ideal


# ---------------------------------------------------------------- global sectors


@pytest.mark.parametrize(
    "addr, nbytes, expected",
    [
        (BASE + LANES * 4, 4, 4),  # coalesced float
        (BASE + 4 + LANES * 4, 4, 5),  # offset by one element
        (BASE + LANES * 8, 4, 8),  # stride 2
        (BASE + LANES * 32, 4, 32),  # stride 8
        (BASE + LANES * 4 * 1000, 4, 32),  # large stride
        (np.full(32, BASE + 12, dtype=np.uint64), 4, 1),  # broadcast
        (BASE + LANES * 16, 16, 16),  # float4 coalesced
        (BASE + LANES * 8, 8, 8),  # double coalesced
        (BASE + LANES * 1, 1, 1),  # bytes
        (BASE + LANES * 2, 2, 2),  # shorts
    ],
)
def test_global_sectors_table(addr, nbytes, expected):
    assert global_sectors(_row(addr), nbytes, ALL).tolist() == [expected]


def test_global_sectors_active_masks():
    addr = _row(BASE + LANES * 4)
    one = np.zeros((1, 32), dtype=bool)
    one[0, 7] = True
    assert global_sectors(addr, 4, one).tolist() == [1]
    assert global_sectors(addr, 4, np.zeros((1, 32), dtype=bool)).tolist() == [0]
    half = np.zeros((1, 32), dtype=bool)
    half[0, :16] = True
    assert global_sectors(addr, 4, half).tolist() == [2]


def test_global_sectors_misaligned_span():
    # A 4-byte access at byte 30 of a sector touches that sector and the next one.
    addr = np.full((1, 32), BASE + 30, dtype=np.uint64)
    assert global_sectors(addr, 4, ALL).tolist() == [2]


def test_global_sectors_many_warps_and_empty_batch():
    addr = np.stack([BASE + LANES * 4, BASE + LANES * 32, np.full(32, BASE)])
    active = np.ones((3, 32), dtype=bool)
    assert global_sectors(addr, 4, active).tolist() == [4, 32, 1]
    empty = np.zeros((0, 32), dtype=np.uint64)
    assert global_sectors(empty, 4, np.zeros((0, 32), dtype=bool)).shape == (0,)


@pytest.mark.parametrize("nbytes", [1, 2, 4, 8, 16])
def test_global_sectors_random_vs_reference(nbytes):
    rng = np.random.default_rng(nbytes)
    w = 200
    # Mix of small ranges (lots of sharing) and random misaligned addresses.
    span = rng.choice([64, 512, 4096, 1 << 20], size=(w, 1))
    addr = (BASE + rng.integers(0, span, size=(w, 32))).astype(np.uint64)
    aligned = rng.random(w) < 0.5
    addr[aligned] -= addr[aligned] % np.uint64(nbytes)
    active = rng.random((w, 32)) < rng.random((w, 1))
    assert global_sectors(addr, nbytes, active).tolist() == ref_sectors(addr, nbytes, active)


@pytest.mark.parametrize("nbytes", [1, 2, 4, 8, 16, 32])
def test_global_sectors_of_aligned_batches_vs_reference(nbytes):
    """Every lane aligned to its size (the one-sort path): the same counts as the model, down to
    addresses that wrap around the top of the 64-bit space and lanes that are inactive."""
    rng = np.random.default_rng(100 + nbytes)
    for base in (BASE, np.uint64(2**64 - 4096)):
        w = 64
        span = rng.choice([64, 512, 4096], size=(w, 1))
        addr = base + (rng.integers(0, span, size=(w, 32)) // nbytes * nbytes).astype(np.uint64)
        active = rng.random((w, 32)) < rng.random((w, 1))
        assert global_sectors(addr, nbytes, active).tolist() == ref_sectors(addr, nbytes, active)
    # Warps that repeat row 0's pattern a whole number of sectors away (counted once), and near misses.
    for base in (BASE, np.uint64(2**64 - 4096 * 64)):
        row = (rng.integers(0, 512, size=32) // nbytes * nbytes).astype(np.uint64)
        shifts = (rng.integers(0, 64, size=(w, 1)) * 32 * max(1, 256 // 32)).astype(np.uint64)
        same = base + shifts + row
        full = np.ones_like(same, dtype=bool)
        assert global_sectors(same, nbytes, full).tolist() == ref_sectors(same, nbytes, full)
        near = same.copy()
        near[7] += np.uint64(nbytes)  # one warp moved by less than a sector: its own count
        assert global_sectors(near, nbytes, full).tolist() == ref_sectors(near, nbytes, full)
    # One misaligned active lane sends the whole batch down the general path, and still counts right.
    addr[3, 5] += np.uint64(1)
    active[3, 5] = True
    assert global_sectors(addr, nbytes, active).tolist() == ref_sectors(addr, nbytes, active)


# ---------------------------------------------------------------- shared wavefronts


@pytest.mark.parametrize(
    "offset, nbytes, waves, ideal",
    [
        (LANES * 4, 4, 1, 1),  # f32 stride 1
        (LANES * 8, 4, 2, 1),  # f32 stride 2
        (LANES * 4 * 32, 4, 32, 1),  # column of float tile[32][32]
        (LANES * 4 * 33, 4, 1, 1),  # column of padded float tile[32][33]
        (np.full(32, 64, dtype=np.uint64), 4, 1, 1),  # broadcast
        (LANES * 8, 8, 2, 2),  # f64 stride 1
        (LANES * 16, 16, 4, 4),  # float4 stride 1
        (LANES, 1, 1, 1),  # bytes: 4 lanes per word
        (LANES * 2, 2, 1, 1),  # shorts
        (LANES * 16, 8, 4, 2),  # f64 stride 2: each half-warp hits every even bank twice
    ],
)
def test_shared_wavefronts_table(offset, nbytes, waves, ideal):
    w, i = shared_wavefronts(_row(offset), nbytes, ALL)
    assert (w.tolist(), i.tolist()) == ([waves], [ideal])


def test_shared_wavefronts_no_active_lanes():
    w, i = shared_wavefronts(_row(LANES * 4), 4, np.zeros((1, 32), dtype=bool))
    assert (w.tolist(), i.tolist()) == ([0], [0])


def test_shared_wavefronts_partial_phases():
    # f64 with only the first half-warp active: one phase, one wavefront.
    active = np.zeros((1, 32), dtype=bool)
    active[0, :16] = True
    w, i = shared_wavefronts(_row(LANES * 8), 8, active)
    assert (w.tolist(), i.tolist()) == ([1], [1])


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("nbytes", [1, 2, 4, 8, 16])
def test_shared_wavefronts_random_vs_reference(nbytes, aligned):
    rng = np.random.default_rng(100 + nbytes + 50 * aligned)
    w = 300
    span = rng.choice([16, 128, 1024, 8192], size=(w, 1))
    offset = rng.integers(0, span, size=(w, 32)).astype(np.uint64)
    if aligned:  # PTX requires natural alignment; misaligned offsets must still count sanely
        offset -= offset % np.uint64(nbytes)
    active = rng.random((w, 32)) < rng.random((w, 1))
    waves, ideal = shared_wavefronts(offset, nbytes, active)
    ref_w, ref_i = ref_wavefronts(offset, nbytes, active)
    assert waves.tolist() == ref_w
    assert ideal.tolist() == ref_i


def test_one_warp_wavefronts_memo_counts_as_the_model_whatever_the_shift():
    from grader.emu import ops_memory

    rng = np.random.default_rng(3)
    ops_memory._ONE_WARP.clear()
    for total in (4, 8, 16):
        for _ in range(20):
            off = (rng.integers(0, 64, 32) * total).astype(np.uint32)
            for shift in (0, 4, 128, 4 * 1001):  # the same pattern moved by multiples of 4 bytes hits the memo
                moved = off + np.uint32(shift)
                wf, ideal = shared_wavefronts(moved[None, :].astype(np.uint64), total, np.ones((1, 32), dtype=bool))
                assert ops_memory._one_warp_wavefronts(moved, total) == (int(wf[0]), int(ideal[0]))
    assert 0 < len(ops_memory._ONE_WARP) <= 60
