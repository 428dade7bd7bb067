"""The global heap, the shared/local layout and parameter packing."""

from __future__ import annotations

import struct

import numpy as np

from grader.emu import memory
from grader.emu.ptx import ParamInfo, VarDecl


def test_allocations_are_aligned_with_guard_gaps():
    h = memory.GlobalHeap()
    a = h.alloc(4356, "C")
    b = h.alloc(10, "D")
    assert a % 256 == 0 and b % 256 == 0 and b >= a + 4356 + memory.GUARD
    h.write(a, np.arange(1089, dtype=np.float32))
    np.testing.assert_array_equal(h.read(a, np.float32, 1089), np.arange(1089))
    addr = np.array([a, a + 4352, a + 4356, a + 2, b + 8, b + 6], dtype=np.uint64)
    assert h.check(addr, 4).tolist() == [memory.OK, memory.OK, memory.OUT_OF_BOUNDS, memory.MISALIGNED,
                                         memory.OUT_OF_BOUNDS, memory.MISALIGNED]
    assert h.describe(a + 4356, 4) == "4 bytes past the end of the 4356-byte buffer C"
    assert "before the start" in h.describe(b - 4, 4)
    assert h.check(np.array([0], dtype=np.uint64), 4)[0] == memory.OUT_OF_BOUNDS


def test_shared_layout_keeps_alignment_and_puts_dynamic_last():
    decls = [VarDecl("a", "shared", 4, "b8", 10), VarDecl("b", "shared", 8, "b8", 64)]
    ext = [VarDecl("dyn", "shared", 16, "b8", 0, extern=True)]
    off, total = memory.layout_shared(decls, ext, 100)
    assert off["a"] == 0 and off["b"] == 16 and off["dyn"] == 80 and total == 180


def test_pack_params():
    ps = (ParamInfo("p", "u64", 8, 8, 0), ParamInfo("n", "u32", 4, 4, 8), ParamInfo("e", "f32", 4, 4, 12))
    raw = memory.pack_params(ps, [0x1_0000_0100, -1, 0.5])
    assert struct.unpack_from("<QIf", raw) == (0x1_0000_0100, 0xFFFFFFFF, 0.5)


def test_free_unmaps_and_zeroes():
    import pytest

    h = memory.GlobalHeap()
    a = h.alloc(64, "A")
    b = h.alloc(64, "B")
    h.write(a, np.full(16, 7, np.int32))
    h.write(b, np.full(16, 9, np.int32))
    h.free(a)
    assert h.find(a) == -1 and h.find(a + 60) == -1
    assert h.check(np.array([a, a + 60, b], dtype=np.uint64), 4).tolist() == [
        memory.OUT_OF_BOUNDS, memory.OUT_OF_BOUNDS, memory.OK]
    assert not h.data[a - memory.HEAP_BASE:a - memory.HEAP_BASE + 64].any()
    np.testing.assert_array_equal(h.read(b, np.int32, 16), 9)
    assert h.describe(a + 8, 4) == f"address {a + 8:#x} is inside the 64-byte buffer A, which was freed"
    with pytest.raises(ValueError):
        h.read(a, np.int32, 1)
    with pytest.raises(ValueError):
        h.free(a)  # twice
    with pytest.raises(ValueError):
        h.free(b + 4)  # not the start of an allocation
    c = h.alloc(64, "C")
    assert c > b  # the freed range is never handed out again: a stale pointer reaches nothing


def test_an_allocation_can_be_placed_at_an_offset_in_a_4k_page():
    h = memory.GlobalHeap()
    a = h.alloc(100, "A")
    b = h.alloc(9216, "B", page_offset=512)
    c = h.alloc(10, "C", page_offset=0)
    assert b % memory.PAGE_BYTES == 512 and c % memory.PAGE_BYTES == 0
    assert b >= a + 100 + memory.GUARD and c >= b + 9216 + memory.GUARD
    assert h.check(np.array([b - 4, b, b + 9216, c], dtype=np.uint64), 4).tolist() == [
        memory.OUT_OF_BOUNDS, memory.OK, memory.OUT_OF_BOUNDS, memory.OK]
    assert h.describe(b + 9216, 4) == "4 bytes past the end of the 9216-byte buffer B"


def test_check_of_lanes_inside_one_allocation_still_finds_a_misaligned_one():
    """The one-allocation path (every lane between one buffer's start and end) against a per-lane
    reference: aligned batches are OK, a misaligned lane inside the buffer is MISALIGNED, and
    batches reaching another buffer, the guard gap or past the end are sorted out lane by lane."""
    h = memory.GlobalHeap()
    a, b = h.alloc(4096, "A"), h.alloc(64, "B")
    starts, ends = [a, b], [a + 4096, b + 64]

    def expected(addr, size):
        out = []
        for x in addr.tolist():
            inside = any(s <= x and x + size <= e for s, e in zip(starts, ends))
            out.append(memory.OUT_OF_BOUNDS if not inside else memory.MISALIGNED if x % size else memory.OK)
        return out

    rng = np.random.default_rng(3)
    for size in (1, 2, 4, 8, 16, 12):
        aligned = ((a + 16 + rng.integers(0, 4096 - 48, size=64)) // size * size).astype(np.uint64)
        assert h.check(aligned, size).tolist() == expected(aligned, size) == [memory.OK] * 64
        cases = [aligned.copy() for _ in range(3)]
        cases[0][5] += np.uint64(1)  # misaligned, still inside A
        cases[1][9] = np.uint64(b)  # one lane in B
        cases[2][0] = np.uint64(a + 4096)  # one lane just past A's end
        for addr in cases:
            assert h.check(addr, size).tolist() == expected(addr, size), (size, addr)


def test_the_gap_after_a_buffer_grows_with_it_and_an_overrun_is_named_against_the_nearer_buffer():
    """An overrun of x by its whole length lands in no buffer (not in y, allocated next), and an
    index gone negative is named against the buffer it ran below."""
    h = memory.GlobalHeap()
    x = h.alloc(64 * 1024, "x")
    y = h.alloc(64 * 1024, "y")
    assert y >= x + 2 * 64 * 1024  # the gap is as long as x
    assert h.check(np.array([x + 64 * 1024 + 60 * 1024], dtype=np.uint64), 4)[0] == memory.OUT_OF_BOUNDS
    assert h.describe(x + 64 * 1024 + 20 * 1024, 4) == f"{20 * 1024 + 4} bytes past the end of the 65536-byte buffer x"
    assert h.describe(x + 64 * 1024 + 60 * 1024, 4) == "4096 bytes before the start of the 65536-byte buffer y"  # nearer
    assert h.describe(y - 12, 4) == "12 bytes before the start of the 65536-byte buffer y"
    assert h.describe(x - 12, 4) == "12 bytes before the start of the 65536-byte buffer x"  # below the first buffer
    assert memory.gap_after(10) == memory.MIN_GAP and memory.gap_after(1 << 30) == memory.MAX_GAP
