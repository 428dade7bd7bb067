"""SIMT execution: divergence and reconvergence, warp collectives, block reductions, int ops."""

from __future__ import annotations

import numpy as np

from grader.emu import Emulator

DIVERGE = r'''
extern "C" __global__ void collatz(const int* start, int* steps, int* flags, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = start[i], k = 0;
  while (v != 1) {
    if (v & 1) v = 3 * v + 1; else v >>= 1;
    ++k;
    if (k > 500) return;
  }
  steps[i] = k;
  unsigned b = __ballot_sync(__activemask(), k % 2 == 0);
  flags[i] = (int)__popc(b) + 100 * __any_sync(__activemask(), k > 100) + 1000 * __all_sync(__activemask(), k >= 0);
}
'''

WARP_OPS = r'''
extern "C" __global__ void warp_ops(const int* x, int* out) {
  int t = threadIdx.x, v = x[t];
  out[0 * 64 + t] = __shfl_up_sync(0xffffffff, v, 3);
  out[1 * 64 + t] = __shfl_sync(0xffffffff, v, 5, 16);
  out[2 * 64 + t] = __shfl_xor_sync(0xffffffff, v, 9);
  out[3 * 64 + t] = __reduce_add_sync(0xffffffff, v);
  out[4 * 64 + t] = __reduce_max_sync(0xffffffff, v);
  out[5 * 64 + t] = __syncthreads_count(v > 0);
  out[6 * 64 + t] = __syncthreads_or(v == 7);
}
'''

INT_OPS = r'''
extern "C" __global__ void int_ops(const int* a, const int* b, int* out, long long* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  unsigned ux = (unsigned)x, uy = (unsigned)y;
  out[0 * n + i] = x / y;
  out[1 * n + i] = x % y;
  out[2 * n + i] = (int)(ux / uy);
  out[3 * n + i] = __mulhi(x, y);
  out[4 * n + i] = x >> (y & 31);
  out[5 * n + i] = (int)(ux >> (uy & 31));
  out[6 * n + i] = __clz(x) + 100 * __popc(x);
  out[7 * n + i] = (int)__brev(ux);
  out[8 * n + i] = min(x, y) + (ux < uy);
  wide[i] = (long long)x * y + ((long long)ux << 20);
}
'''


def _put(emu, name, arr):
    addr = emu.alloc(arr.nbytes, name=name)
    emu.write(addr, arr)
    return addr


def _collatz(v):
    k = 0
    while v != 1:
        v = 3 * v + 1 if v & 1 else v >> 1
        k += 1
        if k > 500:
            return None
    return k


def test_divergent_loops_and_votes(compile_ptx):
    emu = Emulator(compile_ptx(DIVERGE))
    n = 77
    start = np.arange(1, n + 1, dtype=np.int32)
    steps = _put(emu, "steps", np.full(n, -1, np.int32))
    flags = _put(emu, "flags", np.full(n, -1, np.int32))
    r = emu.launch("collatz", grid=(3,), block=(32,), args=[_put(emu, "start", start), steps, flags, n])
    assert r.status == "ok", r.message
    want = [_collatz(int(v)) for v in start]
    np.testing.assert_array_equal(emu.read(steps, np.int32, n), want)
    got = emu.read(flags, np.int32, n)
    # after the loop the warp has reconverged: the votes see every surviving lane of the warp
    for w in range(3):
        ks = [k for k in want[32 * w: 32 * w + 32]]
        even = sum(1 for k in ks if k % 2 == 0)
        anyb = int(any(k > 100 for k in ks))
        for k, g in zip(ks, got[32 * w: 32 * w + 32]):
            assert g == even + 100 * anyb + 1000


def test_warp_collectives_and_bar_red(compile_ptx):
    emu = Emulator(compile_ptx(WARP_OPS))
    x = (np.arange(64, dtype=np.int32) * 7) % 23 - 5
    out = _put(emu, "out", np.zeros(7 * 64, np.int32))
    r = emu.launch("warp_ops", grid=(1,), block=(64,), args=[_put(emu, "x", x), out])
    assert r.status == "ok", r.message
    got = emu.read(out, np.int32, 7 * 64).reshape(7, 64)
    lane = np.arange(64) % 32
    base = np.arange(64) - lane
    np.testing.assert_array_equal(got[0], np.where(lane >= 3, x[base + lane - 3], x))
    np.testing.assert_array_equal(got[1], x[base + (lane // 16) * 16 + 5])
    np.testing.assert_array_equal(got[2], x[base + (lane ^ 9)])
    np.testing.assert_array_equal(got[3], np.repeat([x[:32].sum(), x[32:].sum()], 32))
    np.testing.assert_array_equal(got[4], np.repeat([x[:32].max(), x[32:].max()], 32))
    np.testing.assert_array_equal(got[5], np.full(64, (x > 0).sum()))
    np.testing.assert_array_equal(got[6], np.full(64, int((x == 7).any())))


def test_integer_semantics(compile_ptx):
    emu = Emulator(compile_ptx(INT_OPS))
    rng = np.random.default_rng(11)
    n = 200
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    a[:4] = [-7, 7, -2**31, 0]
    b[:4] = [2, -2, 3, 5]
    b[b == 0] = 1
    out = _put(emu, "out", np.zeros(9 * n, np.int32))
    wide = _put(emu, "wide", np.zeros(n, np.int64))
    r = emu.launch("int_ops", grid=(1,), block=(256,), args=[_put(emu, "a", a), _put(emu, "b", b), out, wide, n])
    assert r.status == "ok", r.message
    got = emu.read(out, np.int32, 9 * n).reshape(9, n)
    A, B = a.astype(np.int64), b.astype(np.int64)
    UA, UB = A & 0xFFFFFFFF, B & 0xFFFFFFFF
    q = np.trunc(A / B).astype(np.int64)
    q = np.array([int(x / y) if abs(x) < 2**52 else 0 for x, y in zip(A, B)])
    q = np.array([(abs(x) // abs(y)) * (1 if (x >= 0) == (y >= 0) else -1) for x, y in zip(A.tolist(), B.tolist())])
    np.testing.assert_array_equal(got[0], q.astype(np.int32))
    np.testing.assert_array_equal(got[1], (A - q * B).astype(np.int32))
    np.testing.assert_array_equal(got[2], (UA // UB).astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(got[3], ((A * B) >> 32).astype(np.int32))
    np.testing.assert_array_equal(got[4], (A >> (B & 31)).astype(np.int32))
    np.testing.assert_array_equal(got[5], (UA >> (UB & 31)).astype(np.uint32).view(np.int32))
    clz = np.array([32 - int(v).bit_length() for v in UA.tolist()])
    popc = np.array([bin(int(v)).count("1") for v in UA.tolist()])
    np.testing.assert_array_equal(got[6], clz + 100 * popc)
    brev = np.array([int(f"{int(v):032b}"[::-1], 2) for v in UA.tolist()], dtype=np.uint32)
    np.testing.assert_array_equal(got[7], brev.view(np.int32))
    np.testing.assert_array_equal(got[8], np.minimum(A, B) + (UA < UB))
    np.testing.assert_array_equal(emu.read(wide, np.int64, n), A * B + (UA << 20))


BFE = r'''
extern "C" __global__ void bfe_ops(const long long* a, const int* pos, const int* len, long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int s; unsigned u; long long s64; unsigned long long u64;
  asm("bfe.s32 %0, %1, %2, %3;" : "=r"(s) : "r"((int)a[i]), "r"(pos[i]), "r"(len[i]));
  asm("bfe.u32 %0, %1, %2, %3;" : "=r"(u) : "r"((int)a[i]), "r"(pos[i]), "r"(len[i]));
  asm("bfe.s64 %0, %1, %2, %3;" : "=l"(s64) : "l"(a[i]), "r"(pos[i]), "r"(len[i]));
  asm("bfe.u64 %0, %1, %2, %3;" : "=l"(u64) : "l"(a[i]), "r"(pos[i]), "r"(len[i]));
  out[i] = s; out[n + i] = (long long)u; out[2 * n + i] = s64; out[3 * n + i] = (long long)u64;
}
'''


def _bfe_reference(a: int, pos: int, length: int, signed: bool, width: int) -> int:
    """bfe as the PTX ISA defines it: pos and len are their low 8 bits; the sign bit is bit
    min(pos + len - 1, width - 1) of a (0 when len is 0 or the type is unsigned); bits of d past the
    field, or past the word, take the sign bit. Returned as a signed `width`-bit value."""
    a &= (1 << width) - 1
    pos, length = pos & 0xFF, length & 0xFF
    sbit = 0 if (not signed or length == 0) else (a >> min(pos + length - 1, width - 1)) & 1
    d = 0
    for i in range(width):
        d |= ((a >> (pos + i)) & 1 if i < length and pos + i <= width - 1 else sbit) << i
    return d - (1 << width) if d >> (width - 1) else d


def test_bit_field_extract_signed_and_unsigned(compile_ptx):
    emu = Emulator(compile_ptx(BFE))
    rng = np.random.default_rng(5)
    n = 256
    a = rng.integers(-2**63, 2**63, n, dtype=np.int64)
    pos = rng.integers(0, 72, n).astype(np.int32)
    length = rng.integers(0, 72, n).astype(np.int32)
    # the whole word, the top bit alone, an empty field, a field past the word, bytes that wrap (300 & 0xFF)
    pos[:7], length[:7] = [0, 31, 63, 4, 40, 300, 8], [64, 1, 1, 0, 40, 4, 300]
    out = _put(emu, "out", np.zeros(4 * n, np.int64))
    r = emu.launch("bfe_ops", grid=(1,), block=(256,), args=[_put(emu, "a", a), _put(emu, "pos", pos),
                                                             _put(emu, "len", length), out, n])
    assert r.status == "ok", r.message
    got = emu.read(out, np.int64, 4 * n).reshape(4, n)
    for row, (signed, width) in enumerate(((True, 32), (False, 32), (True, 64), (False, 64))):
        want = [_bfe_reference(int(x), int(p), int(k), signed, width) for x, p, k in zip(a, pos, length)]
        if not signed and width == 32:
            want = [v & 0xFFFFFFFF for v in want]  # the kernel widens the unsigned 32-bit result with zeros
        np.testing.assert_array_equal(got[row], np.array(want, dtype=np.int64), err_msg=f"bfe.{'su'[not signed]}{width}")


BFI_PRMT = r'''
extern "C" __global__ void bfi_prmt(const long long* a, const long long* b, const int* pos, const int* len,
                                    long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned r32, p; unsigned long long r64;
  asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(r32) : "r"((unsigned)a[i]), "r"((unsigned)b[i]), "r"(pos[i]), "r"(len[i]));
  asm("bfi.b64 %0, %1, %2, %3, %4;" : "=l"(r64) : "l"(a[i]), "l"(b[i]), "r"(pos[i]), "r"(len[i]));
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(p) : "r"((unsigned)a[i]), "r"((unsigned)b[i]), "r"((unsigned)(b[i] >> 32)));
  out[i] = (long long)r32; out[n + i] = (long long)r64; out[2 * n + i] = (long long)p;
}
'''


def _bfi_reference(a: int, b: int, pos: int, length: int, width: int) -> int:
    """bfi as the PTX ISA defines it: a's low bits replace bits pos.. of b, within the word."""
    f = b & ((1 << width) - 1)
    pos, length = pos & 0xFF, length & 0xFF
    i = 0
    while i < length and pos + i <= width - 1:
        f = (f & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
        i += 1
    return f


def _prmt_reference(a: int, b: int, c: int) -> int:
    """prmt (default mode): byte k of d is byte (c's nibble k & 7) of {b, a}, or that byte's top bit
    copied into all eight when the nibble's bit 3 is set."""
    both = (a & 0xFFFFFFFF) | ((b & 0xFFFFFFFF) << 32)
    d = 0
    for k in range(4):
        sel = (c >> (4 * k)) & 0xF
        byte = (both >> (8 * (sel & 7))) & 0xFF
        if sel & 8:
            byte = 0xFF if byte & 0x80 else 0
        d |= byte << (8 * k)
    return d


def test_bit_field_insert_and_byte_permute(compile_ptx):
    emu = Emulator(compile_ptx(BFI_PRMT))
    rng = np.random.default_rng(6)
    n = 256
    a = rng.integers(-2**63, 2**63, n, dtype=np.int64)
    b = rng.integers(-2**63, 2**63, n, dtype=np.int64)
    pos = rng.integers(0, 72, n).astype(np.int32)
    length = rng.integers(0, 72, n).astype(np.int32)
    pos[:6], length[:6] = [0, 31, 63, 4, 40, 300], [64, 1, 1, 0, 40, 260]
    out = _put(emu, "out", np.zeros(3 * n, np.int64))
    r = emu.launch("bfi_prmt", grid=(1,), block=(256,), args=[_put(emu, "a", a), _put(emu, "b", b), _put(emu, "pos", pos),
                                                              _put(emu, "len", length), out, n])
    assert r.status == "ok", r.message
    got = emu.read(out, np.int64, 3 * n).reshape(3, n).view(np.uint64)
    A, B = [int(x) & (2**64 - 1) for x in a], [int(x) & (2**64 - 1) for x in b]
    want32 = [_bfi_reference(x, y, int(p), int(k), 32) for x, y, p, k in zip(A, B, pos, length)]
    want64 = [_bfi_reference(x, y, int(p), int(k), 64) for x, y, p, k in zip(A, B, pos, length)]
    wantp = [_prmt_reference(x, y, y >> 32) for x, y in zip(A, B)]
    np.testing.assert_array_equal(got[0], np.array(want32, dtype=np.uint64), err_msg="bfi.b32")
    np.testing.assert_array_equal(got[1], np.array(want64, dtype=np.uint64), err_msg="bfi.b64")
    np.testing.assert_array_equal(got[2], np.array(wantp, dtype=np.uint64), err_msg="prmt.b32")


ATOMICS = r'''
extern "C" __global__ void atomics(unsigned* counters, int* lo_hi, unsigned* bits, int* taken, const int* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicInc(&counters[0], 9u);              // wraps to 0 after 9
  atomicDec(&counters[1], 9u);              // from 0 wraps to 9
  atomicMin(&lo_hi[0], v[i]);
  atomicMax(&lo_hi[1], v[i]);
  atomicMin(&counters[2], (unsigned)v[i]);  // unsigned: negatives are huge
  atomicAnd(&bits[0], ~(1u << (i % 32)));
  atomicOr(&bits[1], 1u << (i % 29));
  atomicXor(&bits[2], (unsigned)v[i]);
  // every thread tries to claim slot i % 7 once: exactly one claim per slot succeeds
  taken[7 + i] = atomicCAS(&taken[i % 7], 0, i + 1) == 0;
}
'''


def test_atomics_agree_with_any_serial_order(compile_ptx):
    """Results that every serial order of the atomics gives alike, over several warps and blocks."""
    emu = Emulator(compile_ptx(ATOMICS))
    rng = np.random.default_rng(8)
    n = 300
    v = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    counters = _put(emu, "counters", np.array([0, 0, 0xFFFFFFFF], np.uint32))
    lo_hi = _put(emu, "lo_hi", np.array([2**31 - 1, -2**31], np.int32))
    bits = _put(emu, "bits", np.array([0xFFFFFFFF, 0, 0], np.uint32))
    taken = _put(emu, "taken", np.zeros(7 + n, np.int32))
    r = emu.launch("atomics", grid=(3,), block=(128,), args=[counters, lo_hi, bits, taken, _put(emu, "v", v), n])
    assert r.status == "ok", r.message
    c = emu.read(counters, np.uint32, 3)
    assert c[0] == n % 10                      # inc: 0, 1, ..., 9, 0, ...
    assert c[1] == (10 - n % 10) % 10          # dec from 0: 9, 8, ..., 0, 9, ...
    assert c[2] == v.view(np.uint32).min()
    assert list(emu.read(lo_hi, np.int32, 2)) == [v.min(), v.max()]
    xor = np.bitwise_xor.reduce(v.view(np.uint32))
    assert list(emu.read(bits, np.uint32, 3)) == [0, (1 << 29) - 1, xor]
    t = emu.read(taken, np.int32, 7 + n)
    assert all(1 <= t[k] <= n and (t[k] - 1) % 7 == k for k in range(7))  # a thread of that slot claimed it
    assert t[7:].sum() == 7 and all(t[7 + t[k] - 1] == 1 for k in range(7))  # that thread, and only it, was told so


SHF = r'''
extern "C" __global__ void funnel(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  asm("shf.l.wrap.b32 %0, %1, %2, %3;" : "=r"(out[i]) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
  asm("shf.l.clamp.b32 %0, %1, %2, %3;" : "=r"(out[n + i]) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
  asm("shf.r.wrap.b32 %0, %1, %2, %3;" : "=r"(out[2 * n + i]) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
  asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(out[3 * n + i]) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
  out[4 * n + i] = (a[i] << (c[i] & 31)) | (a[i] >> ((32 - (c[i] & 31)) & 31));  // a rotate, as C writes it
}
'''


def test_funnel_shifts_and_rotates(compile_ptx):
    """shf as the PTX ISA defines it: the pair [b, a] shifted by c & 31 (.wrap) or min(c, 32) (.clamp),
    keeping the high word (.l) or the low word (.r)."""
    emu = Emulator(compile_ptx(SHF))
    rng = np.random.default_rng(9)
    n = 256
    a, b = (rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    c = rng.integers(0, 80, n).astype(np.uint32)
    c[:4] = [0, 31, 32, 33]
    out = _put(emu, "out", np.zeros(5 * n, np.uint32))
    r = emu.launch("funnel", grid=(1,), block=(256,), args=[_put(emu, "a", a), _put(emu, "b", b), _put(emu, "c", c), out, n])
    assert r.status == "ok", r.message
    got = emu.read(out, np.uint32, 5 * n).reshape(5, n)
    for row, (left, clamp) in enumerate(((True, False), (True, True), (False, False), (False, True))):
        want = []
        for x, y, k in zip(a.tolist(), b.tolist(), c.tolist()):
            s = min(k, 32) if clamp else k & 31
            pair = (y << 32) | x
            want.append(((pair << s) >> 32) & 0xFFFFFFFF if left else (pair >> s) & 0xFFFFFFFF)
        np.testing.assert_array_equal(got[row], np.array(want, dtype=np.uint32), err_msg=f"row {row}")
    rot = [((x << (k & 31)) | (x >> ((32 - (k & 31)) & 31))) & 0xFFFFFFFF for x, k in zip(a.tolist(), c.tolist())]
    np.testing.assert_array_equal(got[4], np.array(rot, dtype=np.uint32))


SAD = r'''
extern "C" __global__ void sad(const int* a, const int* b, const unsigned* c, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = __sad(a[i], b[i], c[i]);
    out[n + i] = __usad((unsigned)a[i], (unsigned)b[i], c[i]);
  }
}
'''


def test_sum_of_absolute_difference(compile_ptx):
    emu = Emulator(compile_ptx(SAD))
    rng = np.random.default_rng(10)
    n = 256
    a, b = (rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32) for _ in range(2))
    c = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    a[0], b[0] = 2**31 - 1, -2**31  # |a - b| = 2^32 - 1: wraps in 32 bits
    out = _put(emu, "out", np.zeros(2 * n, np.uint32))
    r = emu.launch("sad", grid=(1,), block=(256,), args=[_put(emu, "a", a), _put(emu, "b", b), _put(emu, "c", c), out, n])
    assert r.status == "ok", r.message
    got = emu.read(out, np.uint32, 2 * n).reshape(2, n)
    signed = [(abs(x - y) + z) & 0xFFFFFFFF for x, y, z in zip(a.tolist(), b.tolist(), c.tolist())]
    unsigned = [(abs((x & 0xFFFFFFFF) - (y & 0xFFFFFFFF)) + z) & 0xFFFFFFFF for x, y, z in zip(a.tolist(), b.tolist(), c.tolist())]
    np.testing.assert_array_equal(got[0], np.array(signed, dtype=np.uint32))
    np.testing.assert_array_equal(got[1], np.array(unsigned, dtype=np.uint32))


BFIND = r'''
extern "C" __global__ void k(const unsigned* a, const long long* b, int* out, int n) {
  int i = threadIdx.x;
  if (i < n) {
    unsigned r0, r1, r2, r3;
    asm("bfind.u32 %0, %1;" : "=r"(r0) : "r"(a[i]));
    asm("bfind.shiftamt.u32 %0, %1;" : "=r"(r1) : "r"(a[i]));
    asm("bfind.s32 %0, %1;" : "=r"(r2) : "r"((int)a[i]));
    asm("bfind.s64 %0, %1;" : "=r"(r3) : "l"(b[i]));
    out[6 * i] = r0; out[6 * i + 1] = r1; out[6 * i + 2] = r2; out[6 * i + 3] = r3;
    out[6 * i + 4] = __ffs((int)a[i]); out[6 * i + 5] = __ffsll(b[i]);
  }
}
'''


def _bfind(v: int, width: int, signed: bool) -> int:
    """The PTX ISA's bfind: position of the most significant non-sign bit, or 0xFFFFFFFF."""
    if signed and v < 0:
        v = ~v
    v &= (1 << width) - 1
    return v.bit_length() - 1 if v else 0xFFFFFFFF


def test_bfind_and_ffs_against_the_ptx_isa(compile_ptx):
    rng = np.random.default_rng(3)
    a = np.r_[np.array([0, 1, 2, 0x80000000, 0xFFFFFFFF, 0x7FFFFFFF, 0x00010000], dtype=np.uint32),
              rng.integers(0, 2**32, 25, dtype=np.uint64).astype(np.uint32)]
    b = np.r_[np.array([0, -1, 1, -2**63, 2**62, -5, 12], dtype=np.int64), rng.integers(-2**63, 2**63 - 1, 25)]
    n = a.size
    emu = Emulator(compile_ptx(BFIND))
    aa, ba, oa = emu.alloc(4 * n), emu.alloc(8 * n), emu.alloc(24 * n)
    emu.write(aa, a)
    emu.write(ba, b)
    report = emu.launch("k", grid=1, block=n, args=[aa, ba, oa, n])
    assert report.status == "ok", report.message
    got = emu.read(oa, np.uint32, 6 * n).reshape(n, 6)
    for i in range(n):
        u, s64 = int(a[i]), int(b[i])
        s32 = u - (1 << 32) if u >= 1 << 31 else u
        pos = _bfind(u, 32, False)
        assert got[i, 0] == pos
        assert got[i, 1] == (0xFFFFFFFF if pos == 0xFFFFFFFF else 31 - pos)
        assert got[i, 2] == _bfind(s32, 32, True)
        assert got[i, 3] == _bfind(s64, 64, True)
        assert got[i, 4] == ((u & -u).bit_length())  # __ffs: 1 + index of the lowest set bit, 0 for 0
        assert got[i, 5] == ((s64 & -s64) & (2**64 - 1)).bit_length()


NAMED = r'''
extern "C" __global__ void k(float* out) {
  __shared__ float s[128];
  int t = threadIdx.x;
  s[t] = t;
  if (t < 64) {
    asm volatile("bar.sync 1, 64;");   // warps 0 and 1 only
    out[t] = s[63 - t];
  } else {
    asm volatile("bar.sync 2, 64;");   // warps 2 and 3 only
    out[t] = s[191 - t];
  }
  asm volatile("bar.sync 0, 128;");    // the whole block, with its thread count
  out[128 + t] = s[127 - t];
}
'''


def test_named_barriers_with_a_thread_count(compile_ptx):
    emu = Emulator(compile_ptx(NAMED))
    out = emu.alloc(4 * 256)
    report = emu.launch("k", grid=1, block=128, args=[out])
    assert report.status == "ok", report.message
    assert report.hazards == () and report.barrier_errors == ()
    got = emu.read(out, np.float32, 256)
    t = np.arange(128)
    assert np.array_equal(got[:128], np.where(t < 64, 63 - t, 191 - t))
    assert np.array_equal(got[128:], 127 - t)


def test_a_named_barrier_nobody_else_reaches_deadlocks(compile_ptx):
    src = NAMED.replace('asm volatile("bar.sync 2, 64;");', 'asm volatile("bar.sync 2, 96;");')
    emu = Emulator(compile_ptx(src))
    report = emu.launch("k", grid=1, block=128, args=[emu.alloc(4 * 256)])
    assert report.status == "deadlock"
