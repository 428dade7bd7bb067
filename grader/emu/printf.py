"""Device printf: `call vprintf(fmt, args)` formatted the way CUDA does, bounded per launch.

NVRTC lowers `printf(fmt, ...)` to `vprintf(fmt, buf)`: `fmt` is a generic pointer to a `.global`
`$str` constant, `buf` a generic pointer to a per-thread `.local` buffer that holds the arguments,
each at its natural alignment (ints and chars as 4 bytes, `long`/`long long`/pointers/`double` as
8, floats already promoted to double). As on the host side of CUDA's printf, the format string
says how to read the buffer.

Output order is deterministic: by block, then thread (linear ids), and a thread's own lines in the
order it printed them. Each call snapshots its argument values (NumPy columns, no Python per lane);
the text is formatted when a chunk of blocks finishes (`PrintfLog.flush`), and only for the calls
that fit under the launch's caps, so a printf in every thread of a big grid costs bounded time.
A `%s` string is read at that point, from the memory as the chunk left it.
"""

from __future__ import annotations

import re
import struct
import sys
from dataclasses import dataclass

import numpy as np

from . import memory

MAX_LINES = 100_000  # printf calls formatted per launch
MAX_BYTES = 1 << 20  # bytes of output per launch
MAX_FIELD = 1 << 16  # widths and precisions are clamped to this (a `%999999999d` costs nothing)
MAX_STRING = 4096  # bytes read for one `%s`
_SEQ_BITS = 24  # sort key: global thread id << 24 | call sequence number

_SPEC = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|L|z|j|t|q)?([diouxXeEfFgGaAcspn%])")
_LONG = {b"l", b"ll", b"z", b"j", b"t", b"q"}


@dataclass(frozen=True)
class Spec:
    """One conversion of a format string."""

    flags: str
    width: int | None  # -1: taken from the arguments (`*`)
    prec: int | None  # -1: taken from the arguments (`.*`)
    length: bytes
    conv: str


@dataclass(frozen=True)
class Format:
    """A parsed format string: literal pieces and Specs, and where each argument lies in the buffer."""

    pieces: tuple  # bytes (literal) or Spec
    args: tuple  # (offset, size) per argument, in order
    kinds: tuple  # per argument: "int", "uint", "float", "str", "ptr", "char", "star", "none"


def parse_format(fmt: bytes) -> Format:
    """Split a C format string and lay its arguments out at their natural alignment."""
    pieces: list = []
    args: list = []
    kinds: list = []
    off = 0

    def arg(size: int, kind: str) -> None:
        nonlocal off
        off = (off + size - 1) // size * size
        args.append((off, size))
        kinds.append(kind)
        off += size

    pos = 0
    for m in _SPEC.finditer(fmt):
        if m.start() > pos:
            pieces.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        conv = conv.decode()
        if conv == "%":
            pieces.append(b"%")
            continue
        if width == b"*":
            arg(4, "star")
        if prec == b"*":
            arg(4, "star")
        length = length or b""
        if conv in "diouxXc":
            kind = "int" if conv in "di" else ("char" if conv == "c" else "uint")
            arg(8 if length in _LONG else 4, kind)
        elif conv in "eEfFgGaA":
            arg(8, "float")
        else:  # s, p, n
            arg(8, {"s": "str", "p": "ptr", "n": "none"}[conv])
        w = -1 if width == b"*" else (int(width) if width else None)
        p = -1 if prec == b"*" else (int(prec or b"0") if prec is not None else None)
        pieces.append(Spec(flags.decode(), w, p, length, conv))
    if pos < len(fmt):
        pieces.append(fmt[pos:])
    return Format(tuple(pieces), tuple(args), tuple(kinds))


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _int_bits(spec: Spec, size: int) -> int:
    return {b"hh": 8, b"h": 16}.get(spec.length, 8 * size)


def _hexfloat(v: float, spec: Spec) -> str:
    if v != v or v in (float("inf"), float("-inf")):
        s = ("%f" % v)
    else:
        s = v.hex()  # '0x1.8000000000000p+0'
        mant, exp = s.split("p")
        if "." in mant:
            mant = mant.rstrip("0").rstrip(".") if spec.prec is None else mant
        s = mant + "p" + (exp if exp.startswith("-") else "+" + exp.lstrip("+"))
    if spec.conv == "A":
        s = s.upper()
    if "+" in spec.flags and not s.startswith("-"):
        s = "+" + s
    w = spec.width or 0
    return s.ljust(w) if "-" in spec.flags else s.rjust(w)


def format_call(f: Format, values: list, string_at) -> bytes:
    """Format one printf call. `values` are the raw argument words (ints); `string_at(ptr)` reads
    a `%s` argument."""
    out = []
    it = iter(zip(values, f.args, f.kinds))
    for piece in f.pieces:
        if isinstance(piece, bytes):
            out.append(piece.decode("latin-1"))
            continue
        spec = piece
        width, prec = spec.width, spec.prec
        if width == -1:
            v, _, _ = next(it)
            width = _signed(v, 32)
        if prec == -1:
            v, _, _ = next(it)
            prec = _signed(v, 32)
            prec = None if prec < 0 else prec
        flags = spec.flags
        if width is not None and width < 0:  # a negative `*` width means left-justify
            flags, width = flags + "-", -width
        width = min(width, MAX_FIELD) if width is not None else None
        prec = min(prec, MAX_FIELD) if prec is not None else None
        v, (_, size), kind = next(it)
        conv = spec.conv
        if conv == "n":
            continue  # writes through a pointer on a host; nothing to print
        if kind == "float":
            val = struct.unpack("<d", struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF))[0]
            if conv in "aA":
                out.append(_hexfloat(val, Spec(flags, width, prec, spec.length, conv)))
                continue
        elif kind == "int":
            val = _signed(v, _int_bits(spec, size))
            conv = "d"
        elif kind == "uint":
            val = v & ((1 << _int_bits(spec, size)) - 1)
            conv = "d" if conv == "u" else conv
        elif kind == "char":
            val, conv = chr(v & 0xFF), "c"
        elif kind == "str":
            val = string_at(v).decode("latin-1") if v else "(null)"
        else:  # ptr
            val, conv = ("0x%x" % v if v else "(nil)"), "s"
        if conv == "o" and "#" in flags:
            flags = flags.replace("#", "")
            val_s = "%o" % val
            val, conv = ("0" + val_s if not val_s.startswith("0") else val_s), "s"
        pyspec = "%" + flags + (str(width) if width is not None else "") + \
            ("." + str(prec) if prec is not None else "") + conv
        out.append(pyspec % val)
    return "".join(out).encode("latin-1", "replace")


class PrintfLog:
    """The printf calls of one launch: snapshots while it runs, text when a block chunk ends."""

    def __init__(self, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES, stream=None) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.stream = stream
        self.lines = 0  # calls written
        self.bytes = 0
        self.dropped = 0  # calls not written because of a cap
        self.seq = 0
        self._formats: dict[int, Format | None] = {}
        self._batches: list[tuple] = []  # (Format, keys int64, lanes int64, columns [uint64 arrays])
        self._kept = 0
        self._bound: int | None = None  # when set, a key above it can no longer be written
        self._ends_line = True  # whether the output so far ends with a newline

    # ------------------------------------------------------------------ while the chunk runs
    def call(self, x, fmt_addr, buf_addr) -> None:
        """Snapshot one vprintf call for the masked lanes of x."""
        mask = x.mask
        n_calls = int(np.count_nonzero(mask))
        if n_calls == 0:
            return
        room = self.max_lines - self.lines
        if room <= 0 or self.bytes >= self.max_bytes:
            self.dropped += n_calls
            return
        m = x.m
        lanes = x.lanes()[mask]
        fmt = np.broadcast_to(np.asarray(fmt_addr, dtype=np.uint64), mask.shape)[mask]
        buf = np.broadcast_to(np.asarray(buf_addr, dtype=np.uint64), mask.shape)[mask]
        t = lanes % (m.wpb * 32)
        tid = m.block_ids[m.lane_block[lanes]] * m.tpb + t
        keys = (tid << _SEQ_BITS) | min(self.seq, (1 << _SEQ_BITS) - 1)
        self.seq += 1
        for addr in np.unique(fmt):
            f = self._format(m, int(addr))
            sel = fmt == addr
            if f is None:
                self.dropped += int(np.count_nonzero(sel))
                continue
            k, ln, b = keys[sel], lanes[sel], buf[sel]
            if self._bound is not None:
                keep = k <= self._bound
                k, ln, b = k[keep], ln[keep], b[keep]
                self.dropped += int(np.count_nonzero(~keep))
            if not k.size:
                continue
            cols = []
            for off, size in f.args:
                vals, _ = read_words(m, ln, b + np.uint64(off), size)
                cols.append(vals)
            self._batches.append((f, k, ln, cols))
            self._kept += k.size
        if self._kept > 2 * room:
            self._prune(room)

    def _format(self, m, addr: int) -> Format | None:
        if addr not in self._formats:
            raw = read_cstring(m, 0, addr, 1 << 16)
            self._formats[addr] = parse_format(raw) if raw is not None else None
        return self._formats[addr]

    def _prune(self, room: int) -> None:
        """Keep only the `room` calls that sort first; the rest can never be written."""
        keys = np.concatenate([b[1] for b in self._batches])
        if keys.size <= room:
            return
        bound = int(np.partition(keys, room - 1)[room - 1])
        self._bound = bound if self._bound is None else min(self._bound, bound)
        batches = []
        for f, k, ln, cols in self._batches:
            keep = k <= self._bound
            self.dropped += int(np.count_nonzero(~keep))
            if keep.any():
                batches.append((f, k[keep], ln[keep], [c[keep] for c in cols]))
        self._batches = batches
        self._kept = sum(b[1].size for b in batches)

    # ------------------------------------------------------------------ at the end of a chunk
    def flush(self, m) -> None:
        """Format and write the calls of the chunk that ran on machine m, in (block, thread) order."""
        batches, self._batches, self._kept, self._bound = self._batches, [], 0, None
        if not batches:
            return
        keys = np.concatenate([b[1] for b in batches])
        which = np.concatenate([np.full(b[1].size, i, dtype=np.int64) for i, b in enumerate(batches)])
        row = np.concatenate([np.arange(b[1].size, dtype=np.int64) for b in batches])
        order = np.argsort(keys, kind="stable")
        room = max(0, self.max_lines - self.lines)
        self.dropped += max(0, order.size - room)
        order = order[:room]
        cols = [[c.tolist() for c in b[3]] for b in batches]
        lanes = [b[2].tolist() for b in batches]
        out = []
        for n_done, i in enumerate(order.tolist()):
            if self.bytes >= self.max_bytes:
                self.dropped += order.size - n_done
                break
            bi, r = int(which[i]), int(row[i])
            lane = lanes[bi][r]
            text = format_call(batches[bi][0], [c[r] for c in cols[bi]],
                               lambda p, lane=lane: read_cstring(m, lane, p, MAX_STRING) or b"")
            if self.bytes + len(text) > self.max_bytes:
                self.bytes = self.max_bytes  # whole calls only: this one and the rest are dropped
                self.dropped += 1
                continue
            out.append(text)
            self.lines += 1
            self.bytes += len(text)
            self._ends_line = text.endswith(b"\n") if text else self._ends_line
        self._write(b"".join(out))

    def finish(self) -> None:
        """Say how much was dropped, if anything (one line)."""
        if self.dropped:
            self._write((("" if self._ends_line else "\n") +f"[emulator] printf output capped at {self.max_lines:,} lines or "
                         f"{self.max_bytes:,} bytes per launch: {self.dropped:,} more printf calls "
                         f"dropped\n").encode())

    def _write(self, data: bytes) -> None:
        if not data:
            return
        stream = self.stream or sys.stdout
        stream.write(data.decode("utf-8", "replace"))
        stream.flush()


# ---------------------------------------------------------------------- generic memory reads
def _window(addr: np.ndarray, base: int) -> np.ndarray:
    return (addr >= np.uint64(base)) & (addr < np.uint64(base + memory.WINDOW_SIZE))


def read_words(m, lanes: np.ndarray, addr: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw `size`-byte words at generic addresses, one per lane (uint64), and which were readable."""
    addr = addr.astype(np.uint64)
    n = addr.size
    ok = np.zeros(n, dtype=bool)
    lo, sh = _window(addr, memory.LOCAL_WINDOW), _window(addr, memory.SHARED_WINDOW)
    gl = ~(lo | sh)
    out = np.zeros(n, dtype=np.uint64)
    for sel, space in ((lo, "local"), (sh, "shared"), (gl, "global")):
        if not sel.any():
            continue
        if space == "global":
            good = m.heap.check(addr[sel], size) != memory.OUT_OF_BOUNDS  # misaligned is fine here
            src = m.heap.data
            b = m.heap.byte_index(addr[sel])
        else:
            sp = m.local if space == "local" else m.shared
            base = memory.LOCAL_WINDOW if space == "local" else memory.SHARED_WINDOW
            off = (addr[sel] - np.uint64(base)).astype(np.int64)
            good = (off >= 0) & (off + size <= sp.nbytes)
            owner_base = m.lane_local_base if space == "local" else m.lane_shared_base
            b = owner_base[lanes[sel]] + off
            src = sp.data
        idx = np.flatnonzero(sel)[good]
        if idx.size:
            raw = src[b[good][:, None] + np.arange(size)]
            out[idx] = np.ascontiguousarray(raw).view(memory._UINT[size]).ravel().astype(np.uint64)
        ok[idx] = True
    return out, ok


def read_cstring(m, lane: int, addr: int, limit: int) -> bytes | None:
    """The NUL-terminated string at a generic address as lane `lane` sees it (None if unmapped)."""
    a = int(addr)
    if memory.LOCAL_WINDOW <= a < memory.LOCAL_WINDOW + memory.WINDOW_SIZE:
        off, sp = a - memory.LOCAL_WINDOW, m.local
        start, end = int(m.lane_local_base[lane]) + off, int(m.lane_local_base[lane]) + sp.nbytes
    elif memory.SHARED_WINDOW <= a < memory.SHARED_WINDOW + memory.WINDOW_SIZE:
        off, sp = a - memory.SHARED_WINDOW, m.shared
        base = int(m.lane_shared_base[lane])
        start, end = base + off, base + sp.nbytes
    else:
        heap = m.heap
        i = heap.find(a)
        if i < 0:
            return None
        sp = heap
        start, end = a - memory.HEAP_BASE, heap.ends[i] - memory.HEAP_BASE
        off = 0
    if off < 0 or start >= end:
        return None
    chunk = sp.data[start:min(end, start + limit)].tobytes()
    nul = chunk.find(b"\0")
    return chunk if nul < 0 else chunk[:nul]
