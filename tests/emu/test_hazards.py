"""Shared-memory hazard and uninitialised-read tracking."""

from __future__ import annotations

import numpy as np
import pytest

from grader.emu.hazards import Hazard, SharedShadow, UninitRead


class Block:
    """Drive a SharedShadow the way the emulator does: every warp of every block in one batch."""

    def __init__(self, block_dim, grid_dim, smem):
        self.block_dim = block_dim
        self.grid_dim = grid_dim
        self.nblocks = grid_dim[0] * grid_dim[1] * grid_dim[2]
        self.nthreads = block_dim[0] * block_dim[1] * block_dim[2]
        self.nwarps = (self.nthreads + 31) // 32
        self.shadow = SharedShadow(self.nblocks, smem, block_dim, grid_dim)
        # One row per (block, warp).
        self.block = np.repeat(np.arange(self.nblocks), self.nwarps)
        self.warp = np.tile(np.arange(self.nwarps), self.nblocks)
        tid = self.warp[:, None] * 32 + np.arange(32)
        self.valid = tid < self.nthreads
        bx, by, _ = block_dim
        self.tx, self.ty, self.tz = tid % bx, (tid // bx) % by, tid // (bx * by)

    def access(self, offset_fn, write, line, nbytes=4, where=None):
        offset = np.asarray(offset_fn(self.tx, self.ty, self.tz), dtype=np.int64)
        active = self.valid.copy()
        if where is not None:
            active &= where(self.tx, self.ty, self.tz)
        offset = np.where(active, offset, 0).astype(np.uint64)
        self.shadow.access(self.block, self.warp, offset, nbytes, active, write, line)

    def sync(self):
        self.shadow.barrier(np.arange(self.nblocks))


def kinds(shadow):
    return {(h.kind, h.first_line, h.second_line): h.count for h in shadow.hazards()}


# ---------------------------------------------------------------- transpose


def transpose(barrier: bool, grid=(2, 1, 1)):
    b = Block((32, 32, 1), grid, 32 * 32 * 4)
    b.access(lambda x, y, z: (y * 32 + x) * 4, write=True, line=10)
    if barrier:
        b.sync()
    b.access(lambda x, y, z: (x * 32 + y) * 4, write=False, line=12)
    return b.shadow


def test_transpose_without_barrier_is_raw():
    shadow = transpose(barrier=False)
    # Thread (x, y) reads the element thread (y, x) wrote, which is in warp x; the read is in
    # warp y, so every off-diagonal element is a cross-warp RAW: 992 floats per block.
    expected = (32 * 32 - 32) * 4 * 2
    assert kinds(shadow) == {("RAW", 10, 12): expected}
    (h,) = shadow.hazards()
    assert isinstance(h, Hazard)
    assert h.block == (0, 0, 0)
    assert "line 10" in h.example and "line 12" in h.example and "read" in h.example
    assert shadow.uninit_reads() == ()


def test_transpose_with_barrier_is_clean():
    shadow = transpose(barrier=True)
    assert shadow.hazards() == ()
    assert shadow.uninit_reads() == ()


# ---------------------------------------------------------------- tiled loop / reduction


def tiled_loop(second_barrier: bool, iters=3):
    # Like the matmul k-loop: stage Bs[ty][tx], barrier, every warp reads every row of Bs,
    # (second barrier), next iteration overwrites Bs.
    b = Block((32, 4, 1), (1, 1, 1), 4 * 32 * 4)
    for _ in range(iters):
        b.access(lambda x, y, z: (y * 32 + x) * 4, write=True, line=20)
        b.sync()
        for k in range(4):
            b.access(lambda x, y, z, k=k: (k * 32 + x) * 4 + 0 * y, write=False, line=22)
        if second_barrier:
            b.sync()
    return b.shadow


def test_loop_missing_second_barrier_is_war():
    shadow = tiled_loop(second_barrier=False, iters=3)
    # Iterations 2 and 3 overwrite a row that all 4 warps read: 4 warps x 128 bytes each time.
    assert kinds(shadow) == {("WAR", 22, 20): 2 * 4 * 128}
    assert "several warps" in shadow.hazards()[0].example


def test_loop_with_both_barriers_is_clean():
    shadow = tiled_loop(second_barrier=True)
    assert shadow.hazards() == ()


def tree_reduction(barrier: bool):
    b = Block((128, 1, 1), (1, 1, 1), 128 * 4)
    b.access(lambda x, y, z: x * 4, write=True, line=30)
    b.sync()
    s = 64
    while s > 0:
        live = lambda x, y, z, s=s: x < s  # noqa: E731
        b.access(lambda x, y, z: x * 4, write=False, line=32, where=live)
        b.access(lambda x, y, z, s=s: (x + s) * 4, write=False, line=32, where=live)
        b.access(lambda x, y, z: x * 4, write=True, line=33, where=live)
        if barrier:
            b.sync()
        s //= 2
    return b.shadow


def test_tree_reduction_without_barrier_races():
    # At s=32, warp 0 reads sdata[32..63], which warp 1 wrote at s=64 in the same epoch. Later
    # steps stay inside warp 0, and nobody overwrites what warp 1 read, so there is no WAR.
    assert kinds(tree_reduction(barrier=False)) == {("RAW", 33, 32): 32 * 4}


def test_tree_reduction_with_barrier_is_clean():
    assert tree_reduction(barrier=True).hazards() == ()


# ---------------------------------------------------------------- warp rules


def test_same_warp_accesses_are_not_reported():
    b = Block((32, 1, 1), (1, 1, 1), 256)
    b.access(lambda x, y, z: x * 4, write=True, line=1)
    b.access(lambda x, y, z: (31 - x) * 4, write=False, line=2)
    b.access(lambda x, y, z: ((x + 1) % 32) * 4, write=True, line=3)
    b.access(lambda x, y, z: np.zeros_like(x), write=True, line=4)  # intra-warp same byte
    assert b.shadow.hazards() == ()


def test_waw_between_warps_in_one_batch_and_across_batches():
    b = Block((64, 1, 1), (1, 1, 1), 64)
    b.access(lambda x, y, z: np.zeros_like(x), write=True, line=5)
    # One batch: warps 0 and 1 both write bytes 0..3, one of them loses (32 lanes x 4 bytes).
    assert kinds(b.shadow) == {("WAW", 5, 5): 128}
    b.sync()
    b.access(lambda x, y, z: np.zeros_like(x), write=True, line=6, where=lambda x, y, z: x < 32)
    b.access(lambda x, y, z: np.zeros_like(x), write=True, line=7, where=lambda x, y, z: x >= 32)
    assert kinds(b.shadow) == {("WAW", 5, 5): 128, ("WAW", 6, 7): 128}


def test_war_with_two_reader_warps_is_not_missed():
    # Warps 0 and 1 read word 0; then warp 0 writes it: a WAR against warp 1's read, even though
    # the first reader was warp 0 itself (a single-reader shadow would miss this).
    for batched in (True, False):
        b = Block((64, 1, 1), (1, 1, 1), 64)
        b.access(lambda x, y, z: x * 0 + 16, write=True, line=1, where=lambda x, y, z: x == 0)
        b.sync()
        if batched:
            b.access(lambda x, y, z: x * 0 + 16, write=False, line=2)
        else:
            b.access(lambda x, y, z: x * 0 + 16, write=False, line=2, where=lambda x, y, z: x < 32)
            b.access(lambda x, y, z: x * 0 + 16, write=False, line=3, where=lambda x, y, z: x >= 32)
        b.access(lambda x, y, z: x * 0 + 16, write=True, line=4, where=lambda x, y, z: x == 0)
        assert kinds(b.shadow) == {("WAR", 2, 4): 4}, batched


def test_blocks_are_independent_and_barriers_are_per_block():
    b = Block((64, 1, 1), (2, 1, 1), 256)
    b.access(lambda x, y, z: x * 4, write=True, line=1)
    b.shadow.barrier(np.array([0]))  # only block 0 completes a barrier
    b.access(lambda x, y, z: (63 - x) * 4, write=False, line=2)
    hz = b.shadow.hazards()
    assert kinds(b.shadow) == {("RAW", 1, 2): 64 * 4}  # block 1 only, all lanes cross warps
    assert hz[0].block == (1, 0, 0)


def test_example_names_threads_in_xyz():
    b = Block((8, 8, 1), (1, 2, 1), 256)  # tid = x + 8y: warp 0 is y < 4
    b.access(lambda x, y, z: (y * 8 + x) * 4, write=True, line=9)
    b.access(lambda x, y, z: ((7 - y) * 8 + x) * 4, write=False, line=11)
    (h,) = b.shadow.hazards()
    assert h.kind == "RAW" and h.count == 2 * 64 * 4
    assert h.block == (0, 0, 0)
    # Lane 0 of warp 0 is thread (0, 0, 0); it reads offset 7*8*4 = 224 written by thread (0, 7, 0).
    assert h.example == (
        "thread (0, 7, 0) wrote shared offset 224 at line 9; "
        "thread (0, 0, 0) read it at line 11 with no barrier in between"
    )


# ---------------------------------------------------------------- uninitialised reads


def test_uninitialised_read_detected_and_fresh_per_launch():
    b = Block((32, 1, 1), (1, 2, 1), 128)
    b.access(lambda x, y, z: x * 4, write=True, line=3, where=lambda x, y, z: x < 16)
    b.sync()
    b.access(lambda x, y, z: x * 4, write=False, line=4)
    (u,) = b.shadow.uninit_reads()
    assert isinstance(u, UninitRead)
    assert (u.line, u.block, u.thread, u.offset, u.count) == (4, (0, 0, 0), (16, 0, 0), 64, 2 * 64)
    # A new shadow (a new launch) starts uninitialised again, even where the old one was written.
    again = Block((32, 1, 1), (1, 2, 1), 128)
    again.access(lambda x, y, z: x * 4, write=False, line=7, where=lambda x, y, z: x < 16)
    assert [(u.line, u.count) for u in again.shadow.uninit_reads()] == [(7, 2 * 64)]


def test_sub_word_writes_initialise_only_their_bytes():
    b = Block((32, 1, 1), (1, 1, 1), 128)
    b.access(lambda x, y, z: x * 4, write=True, line=1, nbytes=1)
    b.access(lambda x, y, z: x * 4, write=False, line=2, nbytes=4)
    assert [(u.line, u.count, u.offset) for u in b.shadow.uninit_reads()] == [(2, 32 * 3, 1)]


def test_out_of_range_offsets_are_ignored():
    b = Block((32, 1, 1), (1, 1, 1), 16)
    b.access(lambda x, y, z: x * 4, write=True, line=1)  # lanes 4.. are past the end
    b.access(lambda x, y, z: x * 4 + (1 << 62), write=False, line=2)
    assert b.shadow.hazards() == () and b.shadow.uninit_reads() == ()


def test_findings_are_capped():
    b = Block((64, 1, 1), (1, 1, 1), 4)
    for line in range(300):
        b.access(lambda x, y, z: x * 0, write=True, line=line)
    found = b.shadow.hazards()
    assert len(found) == 100
    assert len(b.shadow.uninit_reads()) == 0


# ---------------------------------------------------------------- random vs a set-based reference


def reference(ops, nblocks, smem):
    """Per-byte reference with full reader sets, processing each batch record by record."""
    last_w = {}  # (block, byte) -> (epoch, warp, line)
    readers = {}  # (block, byte) -> (epoch, set of warps, line of first reader)
    written = set()
    epoch = [1] * nblocks
    found, uninit = {}, {}
    for op in ops:
        if op[0] == "bar":
            for blk in set(op[1]):
                epoch[blk] += 1
            continue
        _, block, warp, offset, nbytes, active, write, line = op
        recs = []
        for w in range(active.shape[0]):
            for lane in range(32):
                if active[w, lane]:
                    for k in range(nbytes):
                        byte = int(offset[w, lane]) + k
                        if byte < smem:
                            recs.append((int(block[w]), int(warp[w]), byte))
        if write:
            for blk, wp, byte in recs:
                e = epoch[blk]
                lw = last_w.get((blk, byte))
                if lw and lw[0] == e and lw[1] != wp:
                    found[("WAW", lw[2], line)] = found.get(("WAW", lw[2], line), 0) + 1
                rd = readers.get((blk, byte))
                if rd and rd[0] == e and (rd[1] - {wp}):
                    found[("WAR", rd[2], line)] = found.get(("WAR", rd[2], line), 0) + 1
            winner = {}
            for blk, wp, byte in recs:
                winner[(blk, byte)] = wp  # the last record of a byte wins
            for blk, wp, byte in recs:
                if winner[(blk, byte)] != wp:
                    found[("WAW", line, line)] = found.get(("WAW", line, line), 0) + 1
            for blk, wp, byte in recs:
                last_w[(blk, byte)] = (epoch[blk], winner[(blk, byte)], line)
                written.add((blk, byte))
        else:
            for blk, wp, byte in recs:
                e = epoch[blk]
                lw = last_w.get((blk, byte))
                if (blk, byte) not in written:
                    uninit[line] = uninit.get(line, 0) + 1
                if lw and lw[0] == e and lw[1] != wp:
                    found[("RAW", lw[2], line)] = found.get(("RAW", lw[2], line), 0) + 1
            for blk, wp, byte in recs:
                e = epoch[blk]
                rd = readers.get((blk, byte))
                if not rd or rd[0] != e:
                    readers[(blk, byte)] = (e, {wp}, line)
                else:
                    rd[1].add(wp)
    return found, uninit


@pytest.mark.parametrize("seed", range(8))
def test_random_batches_match_reference(seed):
    rng = np.random.default_rng(seed)
    nblocks, nwarps, smem = 3, 3, 48
    shadow = SharedShadow(nblocks, smem, (96, 1, 1), (nblocks, 1, 1))
    ops = []
    for _ in range(40):
        if rng.random() < 0.15:
            blocks = rng.choice(nblocks, size=rng.integers(1, nblocks + 1), replace=False)
            ops.append(("bar", blocks.tolist()))
            shadow.barrier(blocks)
            continue
        rows = rng.integers(1, nblocks * nwarps + 1)
        pairs = rng.choice(nblocks * nwarps, size=rows, replace=False)
        block, warp = pairs // nwarps, pairs % nwarps
        nbytes = int(rng.choice([1, 2, 4, 8]))
        offset = rng.integers(0, smem // nbytes + 2, size=(rows, 32)) * nbytes
        if seed % 2:  # misaligned, so some accesses straddle the end of shared memory
            offset += rng.integers(0, nbytes, size=(rows, 32))
        offset = offset.astype(np.uint64)
        active = rng.random((rows, 32)) < rng.choice([0.05, 0.3, 1.0])
        write = bool(rng.random() < 0.5)
        line = int(rng.integers(1, 6))
        ops.append(("acc", block, warp, offset, nbytes, active, write, line))
        shadow.access(block, warp, offset, nbytes, active, write, line)
    found, uninit = reference(ops, nblocks, smem)
    assert kinds(shadow) == found
    assert {u.line: u.count for u in shadow.uninit_reads()} == uninit


def test_an_atomic_on_never_written_shared_memory_is_an_uninitialised_read():
    """atomicAdd reads the old value: private histogram bins never zeroed start from whatever shared
    memory held (on a GPU, different launch to launch), which must read as an uninitialised read, not
    pass unseen. Bins zeroed first are clean."""
    lanes = np.ones((1, 32), dtype=bool)
    offsets = (np.arange(32, dtype=np.uint32) % 8 * 4)[None, :]
    dirty = SharedShadow(1, 64, (32, 1, 1), (1, 1, 1))
    dirty.access(np.zeros(1, np.int64), np.zeros(1, np.int64), offsets, 4, lanes, True, 7, atomic=True)
    (found,) = dirty.uninit_reads()
    assert found.line == 7 and found.count > 0
    clean = SharedShadow(1, 64, (32, 1, 1), (1, 1, 1))
    clean.access(np.zeros(1, np.int64), np.zeros(1, np.int64), (np.arange(32, dtype=np.uint32) % 16 * 4)[None, :], 4,
                 lanes, True, 3)
    clean.barrier(np.zeros(1, np.int64))
    clean.access(np.zeros(1, np.int64), np.zeros(1, np.int64), offsets, 4, lanes, True, 7, atomic=True)
    assert clean.uninit_reads() == ()
