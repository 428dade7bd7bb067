"""The optimised SharedShadow against a frozen copy of the original eager, byte-granular one.

The fast paths (loads skip the writer check where nothing can be found, deferred reader-set
updates, log expiry at barriers) must never change a report: counts, examples and the block
first seen must all be identical.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import shadow_reference

from grader.emu import hazards
from grader.emu.hazards import SharedShadow


def report(shadow) -> tuple:
    """Everything a shadow reports, as plain tuples (the two modules have their own classes)."""
    return (
        tuple(dataclasses.astuple(h)[:6] for h in shadow.hazards()),  # the fields both shadows have
        tuple(dataclasses.astuple(u) for u in shadow.uninit_reads()),
    )


class Pair:
    """Drive the optimised shadow and the reference one with the same calls."""

    def __init__(self, nblocks: int, smem: int, block_dim, max_findings: int = 100) -> None:
        grid = (nblocks, 1, 1)
        self.fast = SharedShadow(nblocks, smem, block_dim, grid, max_findings=max_findings)
        self.ref = shadow_reference.SharedShadow(nblocks, smem, block_dim, grid, max_findings=max_findings)

    def access(self, block, warp, offset, nbytes, active, write, line) -> None:
        # Fresh copies for each, so neither can see what the other did to its inputs. The
        # emulator passes uint32 offsets; the fast shadow gets those whenever they fit.
        fast_offset = offset.astype(np.uint32) if int(offset.max()) < 2**32 else offset.copy()
        self.fast.access(block.copy(), warp.copy(), fast_offset, nbytes, active.copy(), write, line)
        self.ref.access(block.copy(), warp.copy(), offset.copy(), nbytes, active.copy(), write, line)

    def barrier(self, blocks) -> None:
        self.fast.barrier(np.array(blocks))
        self.ref.barrier(np.array(blocks))

    def check(self) -> None:
        assert report(self.fast) == report(self.ref)


def random_ops(pair: Pair, rng, nblocks: int, nwarps: int, smem: int, steps: int) -> None:
    """Random batches biased toward the patterns the fast paths care about."""
    for _ in range(steps):
        r = rng.random()
        if r < 0.15:
            blocks = rng.choice(nblocks, size=rng.integers(1, nblocks + 1), replace=False)
            pair.barrier(blocks.tolist())
            continue
        rows = int(rng.integers(1, nblocks * nwarps + 1))
        pairs = np.sort(rng.choice(nblocks * nwarps, size=rows, replace=False))
        block, warp = pairs // nwarps, pairs % nwarps
        nbytes = int(rng.choice([1, 2, 4, 4, 4, 8, 16]))
        pattern = rng.random()
        if pattern < 0.3:  # a tile: lane -> consecutive words
            base = rng.integers(0, max(1, smem // nbytes - 31))
            offset = np.broadcast_to((base + np.arange(32)) * nbytes, (rows, 32)).copy()
        elif pattern < 0.5:  # a broadcast: every lane of a warp at one word
            offset = np.repeat(rng.integers(0, smem // nbytes, size=(rows, 1)) * nbytes, 32, axis=1)
        else:
            offset = rng.integers(0, smem // nbytes + 2, size=(rows, 32)) * nbytes
        if rng.random() < 0.2:  # misaligned, some straddling the end
            offset = offset + rng.integers(0, nbytes, size=(rows, 32))
        if rng.random() < 0.1:  # far outside (only the reference sees 64-bit offsets)
            offset = np.where(rng.random((rows, 32)) < 0.3, offset + (1 << 40), offset)
        active = rng.random((rows, 32)) < rng.choice([0.1, 0.6, 1.0, 1.0])
        write = bool(rng.random() < 0.35)
        line = int(rng.integers(1, 7))
        pair.access(block, warp, offset.astype(np.uint64), nbytes, active, write, line)


@pytest.mark.parametrize("seed", range(24))
def test_random_batches_match_original_shadow(seed):
    rng = np.random.default_rng(1000 + seed)
    nblocks, nwarps, smem = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.choice([20, 64, 130]))
    pair = Pair(nblocks, smem, (32 * nwarps, 1, 1), max_findings=int(rng.choice([3, 100])))
    random_ops(pair, rng, nblocks, nwarps, smem, steps=60)
    pair.check()


def tiled(pair: Pair, nblocks: int, rounds: int, second_barrier: bool, write_all: bool) -> None:
    """The matmul pattern: stage a tile, barrier, every warp reads, barrier (or not)."""
    block = np.repeat(np.arange(nblocks), 4)
    warp = np.tile(np.arange(4), nblocks)
    lane = np.arange(32)
    all_on = np.ones((block.size, 32), dtype=bool)
    for _ in range(rounds):
        rows = (warp[:, None] * 32 + lane) * 4
        active = all_on if write_all else all_on & (warp[:, None] < 3)
        pair.access(block, warp, rows.astype(np.uint64), 4, active, True, 10)
        pair.barrier(range(nblocks))
        for k in range(8):
            pair.access(block, warp, np.full((block.size, 32), 4 * k, dtype=np.uint64), 4, all_on, False, 12)
            pair.access(block, warp, ((k % 4) * 128 + lane * 4 + 0 * warp[:, None]).astype(np.uint64), 4,
                        all_on, False, 12)
        if second_barrier:
            pair.barrier(range(nblocks))


@pytest.mark.parametrize("second_barrier", [True, False])
@pytest.mark.parametrize("write_all", [True, False])
def test_tiled_pattern_matches_original_shadow(second_barrier, write_all):
    pair = Pair(3, 4 * 128 + 8, (128, 1, 1))
    tiled(pair, 3, rounds=3, second_barrier=second_barrier, write_all=write_all)
    pair.check()
    if second_barrier:
        # Every logged load expired at the barrier that closed its epoch: nothing is kept.
        assert pair.fast._pending == []


def test_deferred_loads_are_replayed_when_the_log_is_full(monkeypatch):
    monkeypatch.setattr(hazards, "_MAX_PENDING_LANES", 64)
    for seed in range(6):
        rng = np.random.default_rng(seed)
        pair = Pair(2, 64, (64, 1, 1))
        random_ops(pair, rng, 2, 2, 64, steps=50)
        pair.check()
        assert pair.fast._pending_lanes <= 64


def test_loads_after_full_initialisation_skip_the_writer_shadow():
    # Once every byte is written and the epoch has no store, a load cannot find anything, and
    # the shadow must not even look (the writer array is swapped for one that would fail).
    shadow = SharedShadow(1, 128, (32, 1, 1), (1, 1, 1))
    block, warp = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    words = (np.arange(32) * 4).astype(np.uint64)[None, :]
    shadow.access(block, warp, words, 4, np.ones((1, 32), dtype=bool), True, 1)
    shadow.barrier(np.array([0]))
    assert shadow._unwritten.tolist() == [0]
    saved, shadow._w = shadow._w, None
    shadow.access(block, warp, words, 4, np.ones((1, 32), dtype=bool), False, 2)
    shadow._w = saved
    assert shadow.hazards() == () and shadow.uninit_reads() == ()
