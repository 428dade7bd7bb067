# Right and memory-safe, but slow on a GPU: the launcher walks the vector in a Python loop, one
# launch of 32 programs per 4096 elements, so at n = 2^24 it makes 4,096 launches where the
# reference makes one (each launch costs microseconds of Python and of the driver). The Triton
# performance check must give it fewer points than the reference (tests/gpu/test_triton_gpu.py).
import triton
import triton.language as tl

CHUNK = 4096


@triton.jit
def add_chunk(x_ptr, y_ptr, out_ptr, start, n, BLOCK: tl.constexpr):
    offsets = start + tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y, out, n):
    for start in range(0, n, CHUNK):
        add_chunk[(CHUNK // 128,)](x, y, out, start, n, BLOCK=128)
