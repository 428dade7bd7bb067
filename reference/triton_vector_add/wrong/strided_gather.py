# expect: traffic
# why: each program takes every G-th element: right, but a warp's 32 lanes touch 32 sectors instead of 4.
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Each program takes every G-th element (G = the number of programs): right, but every warp's
    # lanes land in different sectors.
    pid = tl.program_id(axis=0)
    G = tl.num_programs(axis=0)
    offsets = pid + G * tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y, out, n):
    BLOCK = 256
    grid = (triton.cdiv(n, BLOCK),)
    add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
