"""The PTX corpus on a GPU: every launch of tests/emu/test_ptx_corpus.py, replayed with CuPy, writes
what the emulator wrote (bit for bit, except the hardware approximations of the fast-math files)."""

from __future__ import annotations

import numpy as np
import pytest

import test_ptx_corpus as corpus

# Hardware values the emulator models differently on purpose (clocks, SM ids) or launches a GPU
# cannot replay from here (a by-value struct argument).
SKIP = {"test_special_registers", "test_struct_parameter_constant_table_and_switch", "test_every_corpus_file_has_a_test"}
# Files whose .approx instructions (ex2/lg2/sin/cos/rsqrt.approx) the emulator computes exactly
# rounded: the hardware's are within 2**-21 relative, and sin/cos.approx within 2**-20.5 absolute
# over [-pi, pi] (PTX ISA, each instruction's accuracy), which is what decides near their zeros.
APPROX = {"fast_math.cu", "float_math.cu"}
# Buffers whose order depends on the order atomics happen in (slots handed out by atomicAdd): compared sorted.
UNORDERED = {("rounding_intrinsics.cu", 6)}
TESTS = sorted(n for n in dir(corpus) if n.startswith("test_") and n not in SKIP)

_SCALARS = {"u8": np.uint8, "s8": np.int8, "u16": np.uint16, "s16": np.int16, "u32": np.uint32, "s32": np.int32,
            "b32": np.uint32, "u64": np.uint64, "s64": np.int64, "b64": np.uint64, "f32": np.float32, "f64": np.float64}


@pytest.mark.gpu
@pytest.mark.parametrize("test", TESTS)
def test_gpu_writes_what_the_emulator_wrote(test, tmp_path):
    cp = pytest.importorskip("cupy")
    if cp.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("no GPU")
    from grader.compile import compile_source

    corpus.RECORD = []
    try:
        getattr(corpus, test)()
        launches = corpus.RECORD
    finally:
        corpus.RECORD = None
    for name, kname, grid, block, args, shared, emu_outs, params in launches:
        res = compile_source((corpus.CORPUS / name).read_text(), name, arch="sm_90")
        assert res.ok, res.log
        path = tmp_path / f"{name}.cubin"
        path.write_bytes(res.cubin)
        fn = cp.RawModule(path=str(path)).get_function(kname)
        dev, bufs = [], []
        for a, p in zip(args, params):
            if isinstance(a, np.ndarray):
                d = cp.asarray(a)
                dev.append(d)
                bufs.append(d)
            else:
                kind = _SCALARS[p.ptx_type]
                # a negative int for an unsigned parameter is its two's-complement bits, as C passes it
                dev.append(kind(a) if np.dtype(kind).kind == "f" else np.array(a, dtype=np.int64).astype(kind))
        fn(tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block)), tuple(dev), shared_mem=shared)
        cp.cuda.Device().synchronize()
        for k, (d, e) in enumerate(zip(bufs, emu_outs)):
            g = cp.asnumpy(d).reshape(e.shape)
            if (name, k) in UNORDERED:
                g, e = np.sort(g, axis=None), np.sort(e, axis=None)
            if name in APPROX and e.dtype.kind == "f":
                np.testing.assert_allclose(g, e, rtol=2.0 ** -21, atol=2.0 ** -20.5, err_msg=f"{name} buffer {k}")
            else:
                np.testing.assert_array_equal(g.view(np.uint8), e.view(np.uint8), err_msg=f"{name} buffer {k}")
