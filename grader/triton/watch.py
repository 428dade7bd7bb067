"""Watching a Triton kernel's memory in the interpreter (TRITON_INTERPRET=1): every tl.load and tl.store.

Copied, unchanged, into the jailed child's folder as tritonwatch.py (it imports only the standard
library and NumPy; Triton is handed in by the caller), and importable in the grader for tests.

The buffers: the spec's tensors, registered by the grader with their guards (`register`), and every
other torch tensor a launch passes (`begin`): a launcher may allocate its own (Liger's and unsloth's
RMSNorm keep a per-row 1/rms in a `torch.empty(rows)`). Those are buffers of that launch only, their
extent their own (data_ptr, numel, element size), with no guard and no record of what was written:
an access inside one is in bounds; only the spec's tensors are judged for correctness.

The hook is the narrowest one the interpreter offers: its builder's create_masked_load and
create_masked_store (tl.load and tl.store without a mask reach them too, through create_load and
create_store), and GridExecutor.__call__ for what a launch passes (the arguments, num_warps). Each
access is seen as Triton's interpreter sees it: a block of 64-bit addresses, a mask, the program id.
For every active lane the watch finds the buffer the address falls in:

- inside its tensor: fine (a load of an element nobody has written yet is recorded);
- in a tensor's guard region (the poisoned slack the grader allocates around it), or in no buffer at
  all: an out-of-bounds lane, with the tensor, the element offset, the program and the source line.
  A lane in no buffer is masked off before the interpreter touches memory: it would read or write
  the child's own heap. It is named after the nearest tensor only when it lies within NEAR_BYTES of
  it; farther off it is "outside every tensor" (an address far from a tensor says nothing of which);
- an address not a multiple of the element's size: misaligned.

A masked-off lane of a load without `other=` reads the interpreter's 0, as compiled Triton read on
an H200: the course's GPU is the judge of what a kernel computes.

And the sectors (32 bytes) each access costs, as the compiled kernel's warps would issue it
(see `warp_sectors` and docs/emulator.md, "Triton traffic").
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SECTOR = 32
WARP = 32
DEFAULT_WARPS = 4
MAX_FINDINGS = 20
VECTOR_BYTES = 16  # the widest global access one thread issues (128 bits)
DIVISIBILITY = 16  # Triton specialises integer arguments and pointers divisible by 16 ("tt.divisibility=16")
NEAR_BYTES = 4096  # an out-of-bounds lane this close to a tensor is named after it; farther, after none


class HookMissing(RuntimeError):
    """The installed Triton has no hook point this watch knows: the grader's fault, not the student's."""


@dataclass
class Buffer:
    """One guarded allocation: the tensor lies at [start, end) inside the storage [lo, hi)."""

    name: str
    lo: int
    hi: int
    start: int
    end: int
    itemsize: int
    written: np.ndarray  # per element of the tensor: holds a value (an input, or stored by the kernel)
    spec: bool = True  # one of the spec's tensors (guarded, judged); False: a tensor one launch passed


@dataclass
class LaunchInfo:
    """What the launch passed that decides the compiled layout."""

    kernel: str = ""
    num_warps: int = DEFAULT_WARPS
    aligned_ints: bool = True  # every non-constexpr integer argument divisible by 16 (or equal to 1)


@dataclass
class Access:
    """One program's execution of one load or store line, kept until its launch ends: the layout
    the compiler gives a line is one for every program, decided from what all of them show."""

    flat: np.ndarray  # the block's addresses, flattened
    active: np.ndarray
    on: np.ndarray  # the mask's values, flattened (before lanes in no buffer were switched off)
    shape: tuple
    itemsize: int
    program: tuple
    unmasked: bool
    unproven: bool  # its mask was made by a comparison the compiler does not prove constant over a vector


@dataclass
class LineTraffic:
    """The traffic of one source line's loads or stores, summed over programs."""

    requests: int = 0
    sectors: int = 0
    distinct: set = field(default_factory=set)
    programs: set = field(default_factory=set)
    vector: int = 0
    # The same accesses one lane an instruction: what the line costs if the compiler could not prove
    # its mask constant over a vector's lanes (one program's mask changing inside one vector is
    # enough: every program runs the same instructions).
    scalar_requests: int = 0
    scalar_sectors: int = 0
    mask_splits_vector: bool = False

    def totals(self) -> tuple[int, int, int]:
        """(requests, sectors, vector width) of the compiled line."""
        if self.mask_splits_vector:
            return self.scalar_requests, self.scalar_sectors, 1
        return self.requests, self.sectors, self.vector


def layout(numel: int, itemsize: int, num_warps: int, contiguous: int, aligned: bool) -> tuple[int, int, int]:
    """(size per thread, vector width, threads) of a block of `numel` lanes, as Triton lays it out.

    size per thread: the contiguous lanes one thread holds: at most 16 bytes' worth, at most the
    contiguity of the addresses, at most numel / threads (and at least 1). Vector width: the size
    per thread when Triton can prove alignment (pointers and integer arguments divisible by 16),
    else 1 (each lane its own instruction)."""
    threads = WARP * num_warps
    per_thread = max(1, min(VECTOR_BYTES // itemsize, contiguous, numel // threads if numel >= threads else 1))
    per_thread = 1 << (per_thread.bit_length() - 1)  # a power of two
    return per_thread, (per_thread if aligned else 1), threads


def warp_sectors(addresses: np.ndarray, active: np.ndarray, itemsize: int, num_warps: int, aligned: bool,
                 contiguous: int, vector_limit: int | None = None) -> tuple[int, int, int]:
    """(requests, sectors, vector width) of one program's access to the flat lanes `addresses`.

    Thread t holds lanes [t*spt + r*spt*threads, +spt) for each repeat r; one instruction per
    (repeat, vector step) per warp: a warp's request covers the sectors its 32 threads' active lanes
    of that step touch. A block smaller than the program's threads wraps onto the spare threads,
    which repeat lanes and issue their loads too. `contiguous` bounds the size per thread (the
    coalescing's choice); `vector_limit`, where given, the vector width (what this access itself
    allows when a wider size per thread came from another access of its kernel)."""
    n = addresses.size
    if n == 0:
        return 0, 0, 1
    spt, vec, threads = layout(n, itemsize, num_warps, contiguous, aligned)
    if vector_limit is not None:
        vec = max(1, min(vec, vector_limit))
    span = spt * threads
    repeats = max(1, -(-n // span))
    r, t, k = np.meshgrid(np.arange(repeats), np.arange(threads), np.arange(spt), indexing="ij")
    lane = (r * span + t * spt + k).ravel()
    r, t, k = r.ravel(), t.ravel(), k.ravel()
    keep = lane < n if n >= span else np.ones(lane.size, dtype=bool)
    lane = lane % n
    keep &= active[lane]
    lane, r, t, k = lane[keep], r[keep], t[keep], k[keep]
    if lane.size == 0:
        return 0, 0, vec
    instruction = (r * (spt // vec) + k // vec) * num_warps + t // WARP
    a = addresses[lane].astype(np.int64)
    pairs = np.concatenate([np.stack([instruction, a // SECTOR], 1), np.stack([instruction, (a + itemsize - 1) // SECTOR], 1)])
    pairs = np.unique(pairs, axis=0)
    return int(np.unique(instruction).size), int(pairs.shape[0]), vec


def contiguity(addresses: np.ndarray, itemsize: int) -> int:
    """The longest power-of-two run of consecutive elements every aligned group of the block shows
    (as Triton's axis analysis proves for arange-based offsets): 1 for gathers and strided blocks."""
    flat = addresses.astype(np.int64)
    best = 1
    size = 2
    while size <= VECTOR_BYTES // itemsize and size <= flat.size and flat.size % size == 0:
        groups = flat.reshape(-1, size)
        if not np.all(np.diff(groups, axis=1) == itemsize):
            break
        best = size
        size *= 2
    return best


class Watch:
    """The record of one submission's launches: findings and traffic, keyed by the student's lines."""

    def __init__(self, source_file: str):
        self.source_file = source_file
        self.buffers: list[Buffer] = []
        self.launch = LaunchInfo()
        self.launches: list[str] = []
        self.out_of_bounds: list[dict] = []
        self.misaligned: list[dict] = []
        self.uninitialised: list[dict] = []
        self.counts = {"out_of_bounds": 0, "misaligned": 0, "uninitialised": 0, "outside_every_buffer": 0}
        self.traffic: dict[tuple[str, str, int], LineTraffic] = {}
        self.pending: dict[tuple[str, str, int], list[Access]] = {}  # this launch's accesses, until it ends
        self.accesses = 0
        self.count_traffic = True
        self.unmasked = False  # inside tl.load or tl.store without a mask

    # -- buffers --------------------------------------------------------------------------------

    def register(self, name: str, storage_ptr: int, storage_bytes: int, data_ptr: int, numel: int, itemsize: int,
                 written: bool) -> None:
        """A guarded tensor: its storage and where the tensor lies in it; `written` for inputs."""
        self.buffers.append(Buffer(name, storage_ptr, storage_ptr + storage_bytes, data_ptr, data_ptr + numel * itemsize,
                                   itemsize, np.full(numel, written, dtype=bool)))

    def reset(self) -> None:
        """Forget the buffers (the next case allocates its own), keep the findings."""
        self.buffers = []

    def register_launch_tensors(self, values: dict) -> None:
        """The torch tensors one launch passes that are not the spec's: buffers of this launch only
        (the previous launch's are forgotten: their memory may be freed and reused)."""
        self.buffers = [b for b in self.buffers if b.spec]
        for name, value in values.items():
            for tensor in (value if isinstance(value, tuple) else (value,)):
                extent = _extent(tensor)
                if extent is None:
                    continue
                start, end, itemsize = extent
                if any(b.lo <= start and end <= b.hi for b in self.buffers):
                    continue  # a spec tensor or a view into one (or a tensor passed twice)
                self.buffers.append(Buffer(str(name), start, end, start, end, itemsize,
                                           np.ones((end - start) // itemsize, dtype=bool), spec=False))

    # -- the hooks -------------------------------------------------------------------------------

    def install(self, interpreter: Any) -> None:
        """Wrap the interpreter's masked load and store and its launch; HookMissing if they are gone."""
        builder = getattr(interpreter, "InterpreterBuilder", None)
        executor = getattr(interpreter, "GridExecutor", None)
        needed = ("create_masked_load", "create_masked_store")
        if builder is None or executor is None or not all(hasattr(builder, n) for n in needed) \
                or not hasattr(executor, "__call__"):
            raise HookMissing("this Triton's interpreter has no InterpreterBuilder.create_masked_load/"
                              "create_masked_store or GridExecutor: the grader does not know how to watch its memory")
        watch = self
        load, store, call = builder.create_masked_load, builder.create_masked_store, executor.__call__

        def masked_load(self, ptrs, mask, other, *rest, **kw):
            mask = watch.access("load", ptrs, mask, interpreter)
            return load(self, ptrs, mask, other, *rest, **kw)

        def masked_store(self, ptrs, value, mask, *rest, **kw):
            mask = watch.access("store", ptrs, mask, interpreter)
            return store(self, ptrs, value, mask, *rest, **kw)

        def launch(self, *args, **kwargs):
            watch.begin(self, args, kwargs)
            try:
                return call(self, *args, **kwargs)
            finally:
                watch.end()

        builder.create_masked_load, builder.create_masked_store, executor.__call__ = masked_load, masked_store, launch
        # tl.load and tl.store without a mask reach the masked ones through these: such an access's
        # vector width depends on its pointers alone, not on the integer arguments a mask compares with.
        for name in ("create_load", "create_store"):
            plain = getattr(builder, name, None)
            if callable(plain):
                setattr(builder, name, _unmasked(plain, watch))
        # A mask made by `<=` the compiler does not prove constant over a vector, even against a bound
        # divisible by 16 (on an H200, `offsets <= n` at n = 4096 stored one lane an instruction).
        for name in UNPROVEN_COMPARISONS:
            compare = getattr(builder, name, None)
            if callable(compare):
                setattr(builder, name, _tagged(compare))

    def begin(self, executor: Any, args: tuple, kwargs: dict) -> None:
        """A launch: the kernel's name, num_warps and whether its integer arguments are divisible by 16
        (Triton specialises those, and turns one equal to 1 into a constant)."""
        fn = getattr(executor, "fn", None)
        names = list(getattr(executor, "arg_names", ()) or ())
        constexprs = set(getattr(executor, "constexprs", ()) or ())
        values = dict(zip(names, args))
        values.update({k: v for k, v in kwargs.items() if k in names})
        # An integer argument equal to 1 (a unit stride) is specialised as a constant, like a
        # constexpr: it leaves the compiled kernel's alignment proof as it is.
        ints = [v for k, v in values.items() if k not in constexprs and isinstance(v, int) and not isinstance(v, bool)
                and v != 1]
        warps = kwargs.get("num_warps", DEFAULT_WARPS)
        self.launch = LaunchInfo(kernel=getattr(fn, "__name__", "kernel"),
                                 num_warps=warps if isinstance(warps, int) and 0 < warps <= 32 else DEFAULT_WARPS,
                                 aligned_ints=all(v % DIVISIBILITY == 0 for v in ints))
        self.launches.append(self.launch.kernel)
        self.register_launch_tensors(values)

    def _line(self) -> int:
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename.endswith(self.source_file):
                return frame.f_lineno
            frame = frame.f_back
        return 0

    def access(self, kind: str, ptrs: Any, mask: Any, interpreter: Any) -> Any:
        """Record one load or store; return the mask with the lanes that hit no buffer switched off."""
        self.accesses += 1
        addresses = np.asarray(ptrs.data).astype(np.uint64)
        on = np.broadcast_to(np.asarray(mask.data).astype(bool), addresses.shape)
        flat, active = addresses.ravel(), on.ravel()
        itemsize = _itemsize(ptrs)
        line = self._line()
        program = tuple(int(v) for v in getattr(interpreter.interpreter_builder, "grid_idx", (0, 0, 0)))
        safe = active.copy()
        where = np.full(flat.size, -1)
        for i, b in enumerate(self.buffers):
            inside = (flat >= b.lo) & (flat < b.hi)
            where[inside] = i
        lanes = np.nonzero(active)[0]
        # The tensor an access belongs to: the one its first active lane falls in (a pointer plus
        # offsets; lanes that run past it are reported against it, wherever they land).
        owner = int(where[lanes[0]]) if lanes.size and where[lanes[0]] >= 0 else -1
        lost = lanes[where[lanes] < 0]
        if lost.size:
            self.counts["outside_every_buffer"] += int(lost.size)
        safe[where < 0] = False
        misaligned = lanes[(flat[lanes] % np.uint64(itemsize)) != 0]
        if misaligned.size:
            self.counts["misaligned"] += int(misaligned.size)
            if len(self.misaligned) < MAX_FINDINGS:
                self.misaligned.append({"kind": kind, "address_mod": int(flat[misaligned[0]] % np.uint64(itemsize)),
                                        "itemsize": itemsize, "program": program, "line": line, "lanes": int(misaligned.size)})
            safe[misaligned] = False  # the interpreter would read across two elements
        if owner >= 0:
            b = self.buffers[owner]
            a = flat[lanes].astype(np.int64)
            outside = (a < b.start) | (a >= b.end)
            if outside.any():
                n_out = int(np.count_nonzero(outside))
                self.counts["out_of_bounds"] += n_out
                self._oob(kind, b, int(a[outside][0]), program, line, n_out)
        elif lanes.size:
            self.counts["out_of_bounds"] += int(lanes.size)
            self._oob(kind, None, int(flat[lanes[0]]), program, line, int(lanes.size))
        for i, b in enumerate(self.buffers):
            mine = lanes[where[lanes] == i]
            if mine.size == 0:
                continue
            a = flat[mine].astype(np.int64)
            outside = (a < b.start) | (a >= b.end)
            inside = a[~outside & ((a - b.start) % b.itemsize == 0)]
            index = (inside - b.start) // b.itemsize
            if kind == "store":
                b.written[index] = True
            else:
                never = index[~b.written[index]]
                if never.size:
                    self.counts["uninitialised"] += int(never.size)
                    if len(self.uninitialised) < MAX_FINDINGS:
                        self.uninitialised.append({"tensor": b.name, "offset": int(never[0]), "program": program,
                                                   "line": line, "lanes": int(never.size)})
        if self.count_traffic:
            self.pending.setdefault((self.launch.kernel, kind, line), []).append(
                Access(flat.copy(), active.copy(), on.ravel().copy(), tuple(addresses.shape), itemsize, program,
                       self.unmasked, bool(getattr(mask, UNPROVEN_TAG, False))))
        return self._masked(mask, safe, active, on)

    def end(self) -> None:
        """A launch ended: its lines' sectors, as the compiled kernel's warps issue them.

        What the compiler decides once for every program is decided here from all of them. A line's
        own size per thread is at most 16 bytes' worth, the contiguity its addresses show in every
        program, and 1 unless its pointer is provably 16-byte aligned (_provably_aligned). Then
        Triton's coalescing: a load takes the widest size per thread among the accesses of its
        kernel with the same block shape (they feed each other), a store no wider than its own; the
        vector width is at most the line's own size, and 1 where alignment or the mask is unproven."""
        pending, self.pending = self.pending, {}
        if not pending:
            return
        own: dict[tuple, tuple[int, bool]] = {}
        for key, accesses in pending.items():
            itemsize = accesses[0].itemsize
            contiguous = min(contiguity(a.flat, itemsize) for a in accesses)
            aligned = _provably_aligned([a.flat for a in accesses], itemsize)
            own[key] = (max(1, min(VECTOR_BYTES // itemsize, contiguous, VECTOR_BYTES // itemsize if aligned else 1)), aligned)
        widest: dict[tuple, int] = {}
        for key, accesses in pending.items():
            peer = (key[0], accesses[0].shape)
            widest[peer] = max(widest.get(peer, 1), own[key][0])
        for key, accesses in pending.items():
            mine, aligned = own[key]
            wide = widest[(key[0], accesses[0].shape)]
            per_thread = wide if key[1] == "load" else min(wide, mine)
            t = self.traffic.setdefault(key, LineTraffic())
            for a in accesses:
                vector_ok = aligned and (a.unmasked or self.launch.aligned_ints)
                requests, sectors, vec = warp_sectors(a.flat, a.active, a.itemsize, self.launch.num_warps, vector_ok,
                                                      per_thread, vector_limit=mine)
                t.requests += requests
                t.sectors += sectors
                t.vector = max(t.vector, vec)
                if vec > 1:
                    scalar = warp_sectors(a.flat, a.active, a.itemsize, self.launch.num_warps, False, per_thread)
                    t.scalar_requests += scalar[0]
                    t.scalar_sectors += scalar[1]
                    if not a.unmasked and (a.unproven or _splits_vectors(a.on, vec)):
                        t.mask_splits_vector = True
                else:
                    t.scalar_requests += requests
                    t.scalar_sectors += sectors
                t.distinct.update((a.flat[a.active].astype(np.int64) // SECTOR).tolist())
                t.programs.add(a.program)

    @staticmethod
    def _masked(mask: Any, safe: np.ndarray, active: np.ndarray, on: np.ndarray) -> Any:
        if np.array_equal(safe, active):
            return mask
        return type(mask)(safe.reshape(on.shape), mask.dtype) if _is_handle(mask) else mask

    def _oob(self, kind: str, buffer: Buffer | None, address: int, program: tuple, line: int, lanes: int) -> None:
        if len(self.out_of_bounds) >= MAX_FINDINGS:
            return
        if buffer is None:
            def distance(b: Buffer) -> int:
                return b.lo - address if address < b.lo else max(0, address - b.hi + 1)
            nearest = min(self.buffers, key=distance, default=None)
            if nearest is None or distance(nearest) > NEAR_BYTES:
                self.out_of_bounds.append({"kind": kind, "tensor": None, "offset": None, "program": program, "line": line,
                                           "lanes": lanes})
                return
            buffer = nearest
        offset = (address - buffer.start) // buffer.itemsize
        self.out_of_bounds.append({"kind": kind, "tensor": buffer.name, "offset": int(offset),
                                   "numel": int((buffer.end - buffer.start) // buffer.itemsize), "program": program,
                                   "line": line, "lanes": lanes, "launcher": not buffer.spec})

    # -- the summary ------------------------------------------------------------------------------

    def summary(self) -> dict:
        """What the grader reads: findings (capped) and counts, the traffic per kernel, kind and line."""
        return {
            "launches": list(self.launches),
            "accesses": self.accesses,
            "counts": dict(self.counts),
            "out_of_bounds": self.out_of_bounds,
            "misaligned": self.misaligned,
            "uninitialised": self.uninitialised,
            # Per spec tensor, the elements nothing has stored (inputs count as stored): a NaN left in
            # an output is "never written" only where this says so, else the kernel computed it.
            "unwritten": [{"tensor": b.name, "elements": int(np.count_nonzero(~b.written))} for b in self.buffers if b.spec],
            "traffic": [{"kernel": k, "kind": kind, "line": line, "requests": t.totals()[0], "sectors": t.totals()[1],
                         "distinct": len(t.distinct), "programs": len(t.programs), "vector": t.totals()[2]}
                        for (k, kind, line), t in sorted(self.traffic.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1]))],
        }


def _provably_aligned(blocks: list[np.ndarray], itemsize: int) -> bool:
    """Whether Triton's analysis can prove a line's pointer 16-byte aligned in every program: every
    lane element-aligned, the first run of consecutive elements 16-byte aligned, and the runs'
    starts in every program (and every pass of a loop) apart by multiples of 16 elements. An offset
    of `row * stride` with a stride of 1000 is 16-byte aligned at runtime, but Triton specialises
    only arguments divisible by 16: it proves nothing of 1000 and sees 4-byte alignment. A pointer
    the same in every program (a weight vector) is proved aligned from its base."""
    starts = []
    for flat in blocks:
        if flat.size == 0:
            continue
        if np.any(flat % np.uint64(itemsize) != 0):
            return False
        starts.append(flat[::_run(flat, itemsize)].astype(np.int64))
    if not starts:
        return True
    every = np.concatenate(starts)
    if int(every[0]) % DIVISIBILITY:
        return False
    apart = np.abs(every - every[0]) // itemsize
    return int(np.gcd.reduce(apart)) % DIVISIBILITY == 0 if apart.size else True


def _run(flat: np.ndarray, itemsize: int) -> int:
    """The longest power-of-two run of consecutive elements that every aligned group of the block
    shows, uncapped (a row of a 2-D tile; a whole 1-D block)."""
    size = 1
    while flat.size % (size * 2) == 0 and size * 2 <= flat.size:
        groups = flat.astype(np.int64).reshape(-1, size * 2)
        if not np.all(np.diff(groups, axis=1) == itemsize):
            break
        size *= 2
    return size


def _extent(value: Any) -> tuple[int, int, int] | None:
    """(start, end, element size) of the bytes a torch tensor's elements span, or None for anything
    else (duck-typed: this module does not import torch)."""
    try:
        if not all(callable(getattr(value, n, None)) for n in ("data_ptr", "element_size", "stride", "size", "numel")):
            return None
        itemsize = int(value.element_size())
        if int(value.numel()) == 0:
            return None
        start, end = int(value.data_ptr()), int(value.data_ptr())
        for size, stride in zip(value.size(), value.stride()):
            reach = (int(size) - 1) * int(stride) * itemsize
            start, end = (start + reach, end) if reach < 0 else (start, end + reach)
        return start, end + itemsize, itemsize
    except Exception:  # noqa: BLE001 - not a tensor after all (or one the watch cannot measure): not a buffer
        return None


def _itemsize(ptrs: Any) -> int:
    try:
        element = ptrs.get_element_ty()
        bits = getattr(element, "primitive_bitwidth", None) or getattr(element, "bitwidth", None)
        return max(1, int(bits) // 8)
    except Exception:  # noqa: BLE001 - a Triton without these names: assume 4-byte elements
        return 4


UNPROVEN_COMPARISONS = ("create_icmpSLE", "create_icmpULE")
UNPROVEN_TAG = "kernel_grader_unproven_mask"


def _tagged(compare: Any) -> Any:
    """Wrap an interpreter comparison whose mask the compiler cannot prove constant over a vector."""
    def call(self, *args, **kwargs):
        result = compare(self, *args, **kwargs)
        try:
            setattr(result, UNPROVEN_TAG, True)
        except (AttributeError, TypeError):  # a handle that takes no attributes: the values decide
            pass
        return result
    return call


def _unmasked(plain: Any, watch: "Watch") -> Any:
    """Wrap an interpreter entry point for accesses without a mask: the watch knows it is one."""
    def call(self, *args, **kwargs):
        watch.unmasked = True
        try:
            return plain(self, *args, **kwargs)
        finally:
            watch.unmasked = False
    return call


def _splits_vectors(mask: np.ndarray, vec: int) -> bool:
    """Whether a mask changes inside a group of `vec` consecutive lanes (the compiler proves a mask
    constant over a vector, `offs < n` with n divisible by 16; a mask such as `offs <= n` it cannot,
    and such a mask's runtime values change at a lane no vector boundary falls on)."""
    n = mask.size - mask.size % vec
    if n == 0:
        return False
    groups = mask[:n].reshape(-1, vec)
    return bool((groups.any(axis=1) & ~groups.all(axis=1)).any())


def _is_handle(mask: Any) -> bool:
    return hasattr(mask, "data") and hasattr(mask, "dtype")
