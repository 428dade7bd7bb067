# expect: correctness
# why: the grid is n // BLOCK programs, so when n % 256 != 0 the last n % 256 elements are never written (and n < 256 launches none).
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y, out, n):
    BLOCK = 256
    grid = (n // BLOCK,)
    add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
