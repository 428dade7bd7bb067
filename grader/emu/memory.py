"""The emulator's memory: a flat global heap, per-block shared memory, per-thread local memory.

Global allocations are 256-byte aligned (as `cudaMalloc` guarantees, so sector counts of offset
patterns match the hardware) and each is followed by an unmapped gap as long as the buffer (at
least MIN_GAP, at most MAX_GAP bytes; the heap starts with MIN_GAP free too): an overrun by up to
the buffer's own length, or an index gone negative, lands on no buffer and is reported as out of
bounds of the nearer buffer, never as a read of its neighbour. Generic addresses map the shared and
local windows to high ranges that the heap never reaches.
"""

from __future__ import annotations

import struct

import numpy as np

from .ptx import ParamInfo, VarDecl

HEAP_BASE = 1 << 32  # above 4 GiB: a pointer truncated to 32 bits never lands in the heap
GUARD = 4096  # the smallest gap after a buffer, and the free space below the first one
MIN_GAP = GUARD
MAX_GAP = 16 * 1024**2
ALIGN = 256
PAGE_BYTES = 4096  # alloc(page_offset=...) fixes an address modulo this: bits 0..11, those the atomic rule reads
SHARED_WINDOW = 0x7F00_0000_0000
LOCAL_WINDOW = 0x7E00_0000_0000
WINDOW_SIZE = 1 << 32

OK, OUT_OF_BOUNDS, MISALIGNED = 0, 1, 2

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SHIFT = {1: 0, 2: 1, 4: 2, 8: 3}  # a shift is several times cheaper than NumPy's floor division


def span_holding(starts: np.ndarray, ends: np.ndarray, addr: np.ndarray, nbytes: int) -> int | None:
    """The index of the span [starts[i], ends[i]) (sorted, disjoint) that holds every access of
    `nbytes` bytes at the (non-empty) `addr`, or None where no one span holds them all: a lane's
    minimum and maximum tell, with no per-lane search."""
    lo, hi = int(addr.min()), int(addr.max())
    i = int(np.searchsorted(starts, np.uint64(lo), side="right")) - 1
    return i if i >= 0 and hi + int(nbytes) <= int(ends[i]) else None


def gap_after(nbytes: int) -> int:
    """The unmapped bytes left after a buffer of `nbytes`: its own length, within [MIN_GAP, MAX_GAP].
    Proportional, so that a whole-row or whole-length overrun still lands on no buffer."""
    return min(MAX_GAP, max(MIN_GAP, nbytes))


def _word_index(byte_index: np.ndarray, size: int) -> np.ndarray:
    shift = _SHIFT[size]
    return byte_index >> shift if shift else byte_index


def gather(data: np.ndarray, byte_index: np.ndarray, size: int) -> np.ndarray:
    """Read `size`-byte words at aligned byte offsets of a flat uint8 array (raw bits)."""
    return data.view(_UINT[size])[_word_index(byte_index, size)]


def scatter(data: np.ndarray, byte_index: np.ndarray, size: int, values: np.ndarray) -> None:
    """Write `size`-byte words at aligned byte offsets; with duplicates the last lane wins."""
    data.view(_UINT[size])[_word_index(byte_index, size)] = values


class GlobalHeap:
    """The device's global memory: named allocations in one flat byte array."""

    def __init__(self) -> None:
        self.data = np.zeros(0, dtype=np.uint8)
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.names: list[str] = []
        self._top = HEAP_BASE + GUARD
        self._starts_arr = np.zeros(0, dtype=np.uint64)
        self._ends_arr = np.zeros(0, dtype=np.uint64)
        self._freed: list[tuple[int, int, str]] = []  # (start, end, name), for fault messages
        # Outputs watched for reads before any write (OutputWatch); None until one is watched.
        self.outputs: OutputWatch | None = None

    def alloc(self, nbytes: int, name: str = "", align: int = ALIGN, page_offset: int | None = None) -> int:
        """Reserve `nbytes` (zero-filled) and return the device address.

        With `page_offset` (a multiple of `align`), the address is the lowest free one that lies
        `page_offset` bytes past a PAGE_BYTES boundary: the emulator's backend places buffers where the
        GPU backend would have them (grader.backends.emu.GpuBufferPlacement), since the atomic sector
        rule depends on address bits 7..11."""
        align = max(align, ALIGN)
        start = (self._top + align - 1) // align * align
        if page_offset is not None:
            if page_offset % align:
                raise ValueError(f"page offset {page_offset} is not a multiple of the alignment {align}")
            start += (int(page_offset) - start) % PAGE_BYTES
        end = start + int(nbytes)
        self._top = end + gap_after(int(nbytes))
        need = ((self._top - HEAP_BASE) + 15) // 16 * 16
        if need > self.data.size:
            grown = np.zeros(max(need, self.data.size * 2), dtype=np.uint8)
            grown[: self.data.size] = self.data
            self.data = grown
        self.starts.append(start)
        self.ends.append(end)
        self.names.append(name or f"buffer{len(self.names)}")
        self._starts_arr = np.array(self.starts, dtype=np.uint64)
        self._ends_arr = np.array(self.ends, dtype=np.uint64)
        return start

    def free(self, addr: int) -> None:
        """Unmap the allocation that starts at `addr` and zero its bytes, as `cudaFree` does.

        Later accesses to it are out of bounds (the range is never handed out again, so a stale
        pointer cannot reach a newer buffer), and nothing of its contents stays readable.
        Raises ValueError if no live allocation starts at `addr` (a double or wild free).
        """
        addr = int(addr)
        i = self.find(addr)
        if i < 0 or self.starts[i] != addr:
            raise ValueError(f"{addr:#x} is not the start of a live allocation")
        start, end = self.starts[i], self.ends[i]
        self.data[start - HEAP_BASE:end - HEAP_BASE] = 0
        if self.outputs is not None:
            self.outputs.drop(start - HEAP_BASE)
        self._freed.append((start, end, self.names[i]))
        del self.starts[i], self.ends[i], self.names[i]
        self._starts_arr = np.array(self.starts, dtype=np.uint64)
        self._ends_arr = np.array(self.ends, dtype=np.uint64)

    def _span(self, addr: int, nbytes: int) -> slice:
        i = self.find(addr)
        if i < 0 or addr + nbytes > self.ends[i]:
            raise ValueError(f"[{addr:#x}, +{nbytes}) is not inside one allocation")
        return slice(addr - HEAP_BASE, addr - HEAP_BASE + nbytes)

    def find(self, addr: int) -> int:
        """Index of the allocation containing `addr`, or -1."""
        i = int(np.searchsorted(self._starts_arr, np.uint64(addr), side="right")) - 1
        if i >= 0 and addr < self.ends[i]:
            return i
        return -1

    def write(self, addr: int, data: bytes | np.ndarray) -> None:
        """Copy host bytes into device memory."""
        raw = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray) else np.ascontiguousarray(data).tobytes(), dtype=np.uint8)
        self.data[self._span(addr, raw.size)] = raw

    def read(self, addr: int, dtype, count: int) -> np.ndarray:
        """Copy `count` elements of `dtype` out of device memory."""
        dt = np.dtype(dtype)
        return self.data[self._span(addr, dt.itemsize * count)].view(dt).copy()

    def check(self, addr: np.ndarray, size: int) -> np.ndarray:
        """Per lane: OK, OUT_OF_BOUNDS or MISALIGNED for an access of `size` bytes."""
        addr = addr.astype(np.uint64, copy=False)
        res = np.zeros(addr.shape, dtype=np.int8)
        if self._starts_arr.size == 0:
            res[:] = OUT_OF_BOUNDS
            return res
        # Alignment by a mask where the size is a power of two: uint64 % is slow in NumPy.
        offset = addr & np.uint64(size - 1) if size & (size - 1) == 0 else addr % np.uint64(size)
        if addr.size and span_holding(self._starts_arr, self._ends_arr, addr, size) is not None:
            # The usual case: every lane inside one allocation (one instruction reads one array).
            res[offset != 0] = MISALIGNED
            return res
        i = np.searchsorted(self._starts_arr, addr, side="right").astype(np.int64) - 1
        ic = np.maximum(i, 0)
        inside = (i >= 0) & (addr >= self._starts_arr[ic]) & (addr + np.uint64(size) <= self._ends_arr[ic])
        res[~inside] = OUT_OF_BOUNDS
        res[inside & (offset != 0)] = MISALIGNED
        return res

    def describe(self, addr: int, size: int) -> str:
        """Say where a faulting access lies relative to the nearest allocation."""
        for start, end, name in self._freed:
            if start <= addr < end:
                return f"address {addr:#x} is inside the {end - start}-byte buffer {name}, which was freed"
        if not self.starts:
            return f"address {addr:#x}: no buffer is allocated"
        i = int(np.searchsorted(self._starts_arr, np.uint64(addr), side="right")) - 1
        if i >= 0 and addr < self.ends[i] and addr + size <= self.ends[i]:
            return f"address {addr:#x} is not aligned to {size} bytes (buffer {self.names[i]})"
        # In a gap: name the nearer of the buffer below (overrun) and the one above (negative index).
        j = i + 1
        past = addr + size - self.ends[i] if i >= 0 else None
        before = self.starts[j] - addr if j < len(self.starts) else None
        if past is not None and past <= gap_after(self.ends[i] - self.starts[i]) + size and (before is None or past <= before):
            n = self.ends[i] - self.starts[i]
            return f"{past} bytes past the end of the {n}-byte buffer {self.names[i]}"
        if before is not None and before <= max(MIN_GAP, gap_after(self.ends[j] - self.starts[j])):
            n = self.ends[j] - self.starts[j]
            return f"{before} bytes before the start of the {n}-byte buffer {self.names[j]}"
        return f"address {addr:#x} is not inside any buffer"

    def byte_index(self, addr: np.ndarray) -> np.ndarray:
        return (addr.astype(np.uint64) - np.uint64(HEAP_BASE)).astype(np.int64)

    def watch_output(self, addr: int, esize: int) -> None:
        """Watch the allocation at `addr` as a kernel output: which of its `esize`-byte elements the
        kernel writes, and where it reads one it has not written yet (its contents on entry are
        undefined: the grader fills outputs with NaN)."""
        i = self.find(int(addr))
        if i < 0:
            raise ValueError(f"{addr:#x} is not inside an allocation")
        if self.outputs is None:
            self.outputs = OutputWatch()
        self.outputs.add(self.starts[i] - HEAP_BASE, self.ends[i] - HEAP_BASE, self.names[i], esize)


class OutputWatch:
    """Per element of each watched output: whether the kernel has written it; and where an element
    was read before any write.

    Exact where a value test cannot be: an element the kernel wrote with a NaN it computed (say
    `beta * C` with C never written) is written, not untouched; and a read of an output element
    before any write names its source line. Memory is one flag per output element, whatever the
    heap holds besides.
    """

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int, str, int, np.ndarray]] = []  # (first byte, end byte, name, element size, written)
        self.early_reads: dict[tuple[str, int], int] = {}  # (buffer, line) -> elements read before written

    def add(self, first: int, end: int, name: str, esize: int) -> None:
        self.ranges.append((first, end, name, esize, np.zeros(max(1, -(-(end - first) // esize)), dtype=bool)))

    def drop(self, first: int) -> None:
        """Stop watching the output that starts at byte `first` (it was freed)."""
        self.ranges = [r for r in self.ranges if r[0] != first]

    def access(self, bidx: np.ndarray, nbytes: int, write: bool, line: int) -> None:
        """Note an access of `nbytes` bytes at each byte index (in-bounds lanes only)."""
        if not bidx.size:
            return
        for first, end, name, esize, written in self.ranges:
            inside = bidx[(bidx >= first) & (bidx < end)]
            if not inside.size:
                continue
            element = (inside - first) // esize
            if write:  # a store of nbytes covers every element its bytes reach
                for offset in range(0, nbytes, min(esize, nbytes)):
                    written[np.minimum((inside + offset - first) // esize, written.size - 1)] = True
                continue
            early = element[~written[element]]
            if early.size:
                key = (name, int(line or 0))
                self.early_reads[key] = self.early_reads.get(key, 0) + int(np.unique(early).size)

    def unwritten(self) -> dict[str, int]:
        """Elements of each watched output the kernel never wrote."""
        return {name: int(np.count_nonzero(~written)) for _, _, name, _, written in self.ranges}

def layout_shared(decls: list[VarDecl], extern: list[VarDecl], dynamic_bytes: int) -> tuple[dict[str, int], int]:
    """Offsets of static shared arrays, then extern (dynamic) ones; returns (offsets, total bytes).

    By the bank-rotation invariance of the wavefront model, any layout that keeps each array's
    alignment gives the same counters; aligning to 16 bytes keeps vector accesses legal.
    """
    offsets: dict[str, int] = {}
    top = 0
    # Module-scope shared arrays that are not extern (a __shared__ array declared in a __device__
    # function lands at module scope in the PTX) are static, like the kernel's own.
    static = [d for d in decls if not d.extern] + [d for d in extern if not d.extern and d.size]
    for d in static:
        a = max(d.align, 16)
        top = (top + a - 1) // a * a
        offsets[d.name] = top
        top += d.size
    top = (top + 15) // 16 * 16
    for d in [d for d in extern if d.extern or not d.size] + [d for d in decls if d.extern]:
        offsets[d.name] = top
    return offsets, top + int(dynamic_bytes)


def layout_local(decls: list[VarDecl]) -> tuple[dict[str, int], int]:
    """Offsets of a kernel's `.local` arrays in each thread's local window."""
    offsets: dict[str, int] = {}
    top = 0
    for d in decls:
        a = max(d.align, 16)
        top = (top + a - 1) // a * a
        offsets[d.name] = top
        top += d.size
    return offsets, top


class BlockedSpace:
    """Per-owner byte arrays (shared: one per block; local: one per thread) in one flat array."""

    def __init__(self, owners: int, nbytes: int, fill: int) -> None:
        self.nbytes = int(nbytes)
        self.stride = max(16, (self.nbytes + 15) // 16 * 16)
        self.data = np.full(owners * self.stride, fill, dtype=np.uint8)

    def check(self, offset: np.ndarray, size: int) -> np.ndarray:
        """Per lane: OK, OUT_OF_BOUNDS or MISALIGNED."""
        off = offset.astype(np.int64)
        res = np.zeros(off.shape, dtype=np.int8)
        res[(off < 0) | (off + size > self.nbytes)] = OUT_OF_BOUNDS
        res[(res == OK) & (off % size != 0)] = MISALIGNED
        return res

    def byte_index(self, owner: np.ndarray, offset: np.ndarray) -> np.ndarray:
        return owner.astype(np.int64) * self.stride + offset.astype(np.int64)


def pack_params(params: tuple[ParamInfo, ...], args: list) -> bytes:
    """Pack launch arguments by the kernel's PTX parameter types (natural alignment)."""
    if len(args) != len(params):
        raise ValueError(f"kernel takes {len(params)} arguments, got {len(args)}")
    size = max((p.offset + p.size for p in params), default=0)
    buf = bytearray((size + 7) // 8 * 8)
    for p, a in zip(params, args):
        if isinstance(a, (bytes, bytearray, np.ndarray)) and p.size != 0 and not np.isscalar(a):
            raw = bytes(a) if not isinstance(a, np.ndarray) else a.tobytes()
            buf[p.offset : p.offset + p.size] = raw[: p.size].ljust(p.size, b"\0")
            continue
        t = p.ptx_type
        if t == "f32":
            raw = struct.pack("<f", float(a))
        elif t == "f64":
            raw = struct.pack("<d", float(a))
        else:
            if isinstance(a, (float, np.floating)):
                raw = struct.pack("<f" if p.size == 4 else "<d", float(a))
            else:
                raw = (int(a) & ((1 << (8 * p.size)) - 1)).to_bytes(p.size, "little")
        buf[p.offset : p.offset + p.size] = raw
    return bytes(buf)
