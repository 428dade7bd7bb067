"""grader.triton.watch: the interpreter's loads and stores, watched in this process (no jail: fast).

One test per rule of the traffic model in docs/emulator.md ("Triton traffic"), with the H200's
measured counts of the lesson's vector add (issue 34) as the expected numbers."""
from __future__ import annotations

import os

import numpy as np
import pytest

from grader.triton import watch as watch_module
from grader.triton.watch import HookMissing, Watch, layout, warp_sectors

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
os.environ.setdefault("TRITON_INTERPRET", "1")
if os.environ["TRITON_INTERPRET"] != "1":
    pytest.skip("the interpreter was not asked for", allow_module_level=True)

import triton.language as tl  # noqa: E402
import triton.runtime.interpreter as interpreter  # noqa: E402

GUARD = 64


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def unmasked_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


@triton.jit
def read_out_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=m) + tl.load(x_ptr + offs, mask=m), mask=m)


@pytest.fixture(scope="module")
def watch():
    w = Watch(os.path.basename(__file__))
    builder = interpreter.InterpreterBuilder
    saved = (builder.create_masked_load, builder.create_masked_store, interpreter.GridExecutor.__call__,
             builder.create_load, builder.create_store, builder.create_icmpSLE, builder.create_icmpULE)
    w.install(interpreter)
    yield w
    (builder.create_masked_load, builder.create_masked_store, interpreter.GridExecutor.__call__,
     builder.create_load, builder.create_store, builder.create_icmpSLE, builder.create_icmpULE) = saved


def guarded(watch, sizes: dict[str, int]):
    """A fresh record and one float32 tensor per name (its element count), each inside NaN guards and
    registered: random inputs, and "out" left NaN."""
    watch.__init__(watch.source_file)
    tensors = []
    for name, n in sizes.items():
        storage = torch.full((n + 2 * GUARD,), float("nan"))
        t = storage[GUARD:GUARD + n]
        if name != "out":
            t.copy_(torch.rand(n))
        watch.register(name, storage.untyped_storage().data_ptr(), storage.numel() * 4, t.data_ptr(), n, 4, name != "out")
        tensors.append(t)
    return tensors


def guarded_tensors(watch, n):
    """The spec's x, y (random) and out (NaN) of n elements each."""
    return guarded(watch, {"x": n, "y": n, "out": n})


def run(watch, kernel, n, block=256, num_warps=None):
    tensors = guarded_tensors(watch, n)
    extra = {"num_warps": num_warps} if num_warps else {}
    kernel[(triton.cdiv(n, block),)](*tensors, n, BLOCK=block, **extra)
    return watch.summary(), tensors


def totals(summary, kind):
    rows = [r for r in summary["traffic"] if r["kind"] == kind]
    return sum(r["requests"] for r in rows), sum(r["sectors"] for r in rows), sum(r["distinct"] for r in rows)


def test_without_divisibility_by_16_each_thread_issues_its_two_elements_apart(watch):
    # H200, n = 1000: 500 load sectors, 250 store sectors, 64 load requests (twice the distinct 250 and 125).
    summary, _ = run(watch, add_kernel, 1000)
    assert totals(summary, "load") == (64, 500, 250)
    assert totals(summary, "store")[1:] == (250, 125)
    assert {r["vector"] for r in summary["traffic"]} == {1}


def test_with_divisibility_by_16_the_pair_is_one_vector_and_sectors_are_the_distinct_ones(watch):
    # H200, n = 4096: 1,024 load sectors, exactly the distinct ones.
    summary, _ = run(watch, add_kernel, 4096)
    requests, sectors, distinct = totals(summary, "load")
    assert sectors == distinct == 1024
    assert {r["vector"] for r in summary["traffic"]} == {2}


@triton.jit
def unmasked_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))


@triton.jit
def short_mask_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n - 1  # a bound whose divisibility the compiler cannot prove
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def test_an_access_without_a_mask_is_one_vector_whatever_n_is(watch):
    # H200, wrong/no_mask.py at n = 1000: ncu counted 256 load sectors in 32 requests (vector loads of
    # the 1,024 elements the 4 programs touch), not twice the distinct ones as a masked access at n = 1000.
    n, block = 1024, 256
    summary, _ = run(watch, unmasked_add_kernel, n, block)
    requests, sectors, distinct = totals(summary, "load")
    assert (sectors, requests) == (256, 32) and sectors == distinct
    assert {r["vector"] for r in summary["traffic"]} == {2}


def test_a_mask_that_changes_inside_a_vector_makes_its_line_one_lane_an_instruction(watch):
    # n = 4096 is divisible by 16, but the mask ends at 4095: no vector can hold it, so the compiler
    # could not have proved it constant over one; every program runs the same (scalar) instructions.
    summary, _ = run(watch, short_mask_kernel, 4096)
    requests, sectors, distinct = totals(summary, "load")
    assert sectors == 2 * distinct and {r["vector"] for r in summary["traffic"]} == {1}


@triton.jit
def store_le_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=offsets <= n)


def test_a_mask_made_by_less_or_equal_is_not_a_vector_even_where_its_values_allow_one(watch):
    # H200, wrong/off_by_one_mask.py at n = 4096: 1,024 load sectors (vectors) but 1,024 store
    # sectors for 512 distinct: the `<=` store went one lane an instruction.
    summary, _ = run(watch, store_le_kernel, 4096)
    assert totals(summary, "load")[1:] == (1024, 1024)
    assert totals(summary, "store")[1:] == (1024, 512)


def test_elements_per_thread_follow_the_block_and_the_warps():
    assert layout(256, 4, 4, 4, True)[:2] == (2, 2)   # 256 lanes over 128 threads
    assert layout(1024, 4, 4, 4, True)[:2] == (4, 4)  # capped at 16 bytes a thread
    assert layout(1024, 4, 8, 4, True)[:2] == (4, 4)
    assert layout(256, 4, 8, 4, True)[:2] == (1, 1)   # 256 lanes over 256 threads
    assert layout(256, 2, 4, 8, True)[:2] == (2, 2)   # fp16: 8 fit in 16 bytes, 2 a thread here
    assert layout(256, 4, 4, 1, True)[:2] == (1, 1)   # a gather: no contiguity, no vector


def test_num_warps_passed_at_launch_changes_the_requests(watch):
    four, _ = run(watch, add_kernel, 4096, num_warps=4)
    eight, _ = run(watch, add_kernel, 4096, num_warps=8)
    assert totals(four, "load")[0] == 16 * 4 * 2  # 16 programs x 4 warps x 2 loads, one v2 instruction each
    assert totals(eight, "load")[0] == 16 * 8 * 2  # 256 threads hold 256 lanes: one scalar instruction per warp


def test_a_block_smaller_than_the_threads_repeats_its_lanes_on_the_spare_warps():
    addresses = np.arange(64, dtype=np.uint64) * 4 + 4096
    requests, sectors, _ = warp_sectors(addresses, np.ones(64, bool), 4, 4, True, 4)
    assert (requests, sectors) == (4, 16)  # 64 lanes, 2 warps' worth, issued by all 4 warps


def test_a_misaligned_base_is_counted_in_the_sectors_each_lane_straddles():
    addresses = np.arange(32, dtype=np.uint64) * 4 + 4096 + 2
    requests, sectors, _ = warp_sectors(addresses, np.ones(32, bool), 4, 1, False, 1)
    assert (requests, sectors) == (1, 5)


def test_an_unmasked_lane_past_a_tensor_names_the_tensor_offset_program_and_line(watch):
    summary, _ = run(watch, unmasked_kernel, 1000)
    first = summary["out_of_bounds"][0]
    assert (first["tensor"], first["offset"], first["program"], first["kind"]) == ("x", 1000, (3, 0, 0), "load")
    assert first["line"] == unmasked_kernel.fn.__code__.co_firstlineno + 4
    assert summary["counts"]["out_of_bounds"] > 0


def test_lanes_outside_every_buffer_are_switched_off_before_the_interpreter_touches_memory(watch):
    summary, tensors = run(watch, unmasked_kernel, 31)  # 225 lanes past 31 elements, guard 64
    assert summary["counts"]["outside_every_buffer"] > 0
    assert torch.allclose(tensors[2], tensors[0] + tensors[1])


def test_a_load_of_an_output_never_written_is_reported(watch):
    summary, _ = run(watch, read_out_kernel, 300)
    assert summary["uninitialised"] and summary["uninitialised"][0]["tensor"] == "out"


def test_a_correct_kernel_has_no_findings(watch):
    summary, tensors = run(watch, add_kernel, 4099)
    assert summary["counts"] == {"out_of_bounds": 0, "misaligned": 0, "uninitialised": 0, "outside_every_buffer": 0}
    assert torch.equal(tensors[2], tensors[0] + tensors[1])


def test_a_triton_without_the_hook_points_is_the_graders_fault():
    class Bare:
        InterpreterBuilder = type("InterpreterBuilder", (), {})
        GridExecutor = type("GridExecutor", (), {})

    with pytest.raises(HookMissing, match="grader does not know"):
        Watch("x.py").install(Bare)
    assert watch_module.DIVISIBILITY == 16


@triton.jit
def scratch_kernel(x_ptr, y_ptr, out_ptr, scratch_ptr, n, BLOCK: tl.constexpr, PAST: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(scratch_ptr + pid + PAST, tl.load(x_ptr + pid * BLOCK))  # one value per program: its first x
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=m), mask=m)


def run_with_scratch(watch, n, past, block=256):
    """The spec's x, y, out (guarded) and a launcher that allocates a per-program scratch tensor."""
    tensors = guarded_tensors(watch, n)
    programs = triton.cdiv(n, block)
    scratch = torch.empty(programs)  # as Liger's and unsloth's RMSNorm allocate their per-row 1/rms
    scratch_kernel[(programs,)](*tensors, scratch, n, BLOCK=block, PAST=past)
    return watch.summary(), tensors, scratch


def test_a_tensor_the_launcher_allocates_is_a_buffer_of_that_launch(watch):
    summary, (x, y, out), scratch = run_with_scratch(watch, 1000, past=0)
    assert summary["counts"]["out_of_bounds"] == summary["counts"]["outside_every_buffer"] == 0
    assert not summary["out_of_bounds"] and not summary["uninitialised"]
    assert torch.allclose(out, x + y)
    assert torch.equal(scratch, x[::256])
    assert all(b.spec for b in watch.buffers if b.name in ("x", "y", "out"))
    assert [b.name for b in watch.buffers if not b.spec] == ["scratch_ptr"]


def test_a_store_past_the_launchers_tensor_names_that_tensor(watch):
    summary, _, scratch = run_with_scratch(watch, 1000, past=1)  # program 3 stores scratch[4] of 4
    first = summary["out_of_bounds"][0]
    assert (first["tensor"], first["offset"], first["numel"], first["program"], first["kind"]) == \
        ("scratch_ptr", 4, 4, (3, 0, 0), "store")
    assert first["launcher"] is True
    assert summary["counts"]["outside_every_buffer"] == 1  # switched off: the interpreter never wrote there


def test_an_address_far_from_every_tensor_is_named_after_none(watch):
    far = 1 << 20  # elements: 4 MiB past the scratch tensor
    summary, _, _ = run_with_scratch(watch, 1000, past=far)
    assert {f["tensor"] for f in summary["out_of_bounds"]} == {None}
    assert watch_module.NEAR_BYTES < far * 4


@triton.jit
def tile_kernel(x_ptr, out_ptr, stride_r, stride_c, BLOCK: tl.constexpr):
    # One BLOCK x BLOCK tile per program, down the rows: a matmul's tile of A, its strides passed in.
    r = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.arange(0, BLOCK)
    offs = r[:, None] * stride_r + c[None, :] * stride_c
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_a_unit_stride_argument_is_a_constant_and_a_tile_row_is_one_vector_per_thread(watch):
    # Triton specialises an integer argument equal to 1 as a constant: a tile whose column stride is
    # passed as 1 vectorises (4 floats a thread) and costs its distinct sectors, one row's 128 bytes
    # in 4 sectors, not 16 bytes of every lane's own instruction.
    watch.__init__(watch.source_file)
    n = 64 * 32
    tensors = []
    for name in ("x", "out"):
        storage = torch.full((n + 2 * GUARD,), float("nan"))
        t = storage[GUARD:GUARD + n]
        if name == "x":
            t.copy_(torch.rand(n))
        watch.register(name, storage.untyped_storage().data_ptr(), storage.numel() * 4, t.data_ptr(), n, 4, name == "x")
        tensors.append(t)
    tile_kernel[(2,)](tensors[0], tensors[1], 32, 1, BLOCK=32)
    summary = watch.summary()
    requests, sectors, distinct = totals(summary, "load")
    assert {r["vector"] for r in summary["traffic"]} == {4}
    assert sectors == distinct == n * 4 // 32
    assert torch.equal(tensors[1], tensors[0])


@triton.jit
def masked_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, OTHER: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if OTHER:
        x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x)


@pytest.mark.parametrize("dtype, other, spare", [
    # Without other=: 0, as the interpreter fills and as compiled Triton read on an H200 (a
    # held-out production RMSNorm sums such lanes and is right there): the course's GPU is the judge.
    (torch.float32, False, 0.0),
    (torch.float32, True, 0.0),     # other= given: its value
    (torch.int32, False, 0),
])
def test_a_masked_off_lane_reads_what_a_gpu_reads(watch, dtype, other, spare):
    watch.__init__(watch.source_file)
    x, out = torch.ones(16, dtype=dtype), torch.zeros(16, dtype=dtype)
    masked_copy_kernel[(1,)](x, out, 4, BLOCK=16, OTHER=other)
    assert torch.equal(out[:4], x[:4])
    if spare == "nan":
        assert torch.isnan(out[4:]).all()
    else:
        assert (out[4:] == spare).all()


def test_the_summary_counts_the_elements_nothing_stored(watch):
    summary, _ = run(watch, add_kernel, 1000, block=256)
    assert {r["tensor"]: r["elements"] for r in summary["unwritten"]} == {"x": 0, "y": 0, "out": 0}
    watch.__init__(watch.source_file)
    tensors = []
    for name in ("x", "y", "out"):
        storage = torch.full((1000 + 2 * GUARD,), float("nan"))
        t = storage[GUARD:GUARD + 1000]
        watch.register(name, storage.untyped_storage().data_ptr(), storage.numel() * 4, t.data_ptr(), 1000, 4, name != "out")
        tensors.append(t)
    add_kernel[(1000 // 256,)](*tensors, 1000, BLOCK=256)  # the grid misses the last 232 elements
    assert {r["tensor"]: r["elements"] for r in watch.summary()["unwritten"]}["out"] == 1000 - 3 * 256


@triton.jit
def row_softmax_kernel(x_ptr, out_ptr, x_stride, out_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK)
    # The reference's loads and stores (its max and sums left out: the traffic is in these two lines,
    # and tl.max and tl.sum are jitted helpers this module may have imported before the interpreter).
    x = tl.load(x_ptr + row * x_stride + col, mask=col < cols, other=-float("inf"))
    tl.store(out_ptr + row * out_stride + col, tl.exp(x), mask=col < cols)


@triton.jit
def row_rmsnorm_kernel(x_ptr, w_ptr, out_ptr, x_stride, out_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_stride + col, mask=col < cols, other=0.0)
    w = tl.load(w_ptr + col, mask=col < cols, other=0.0)
    tl.store(out_ptr + row * out_stride + col, x * w, mask=col < cols)


def row_tensors(watch, rows, cols, names):
    return guarded(watch, {name: cols if name == "w" else rows * cols for name in names})


@pytest.mark.parametrize("cols, loads, stores", [(1000, 4000, 4000), (1024, 4096, 4096)])
def test_a_row_pointer_whose_stride_is_not_divisible_by_16_is_one_element_a_thread(watch, cols, loads, stores):
    # H200 (Nsight Compute), the softmax reference at 32 x 1000: 4,000 load and 4,000 store sectors in
    # 1,024 load requests, the distinct ones: row * 1000 is 16-byte aligned at runtime, but Triton does
    # not specialise 1000 and proves 4 bytes, so each thread holds one element and a warp's 32
    # consecutive elements are one 128-byte request. At 32 x 1024, vectors of 4: again the distinct.
    x, out = row_tensors(watch, 32, cols, ("x", "out"))
    row_softmax_kernel[(32,)](x, out, cols, cols, cols, BLOCK=1024)
    summary = watch.summary()
    assert totals(summary, "load")[1] == loads and totals(summary, "store")[1] == stores
    assert totals(summary, "load")[0] == (1024 if cols == 1000 else 256)


@pytest.mark.parametrize("cols, loads, stores", [(1000, 32000, 4000), (1024, 8192, 4096)])
def test_a_load_takes_the_widest_elements_a_thread_of_its_kernel_and_a_store_its_own(watch, cols, loads, stores):
    # H200 (Nsight Compute), the RMSNorm reference at 32 x 1000: 32,000 load sectors, 4,000 store
    # sectors. The weight's pointer is the same in every program and provably aligned: 4 elements a
    # thread. Triton's coalescing gives the row's load, which feeds the same values, the weight's 4
    # elements a thread (not a vector: its pointer is not proved aligned), 16 sectors a request for
    # both; the store keeps its own one element a thread.
    x, w, out = row_tensors(watch, 32, cols, ("x", "w", "out"))
    row_rmsnorm_kernel[(32,)](x, w, out, cols, cols, cols, BLOCK=1024)
    summary = watch.summary()
    assert totals(summary, "load")[1] == loads and totals(summary, "store")[1] == stores
