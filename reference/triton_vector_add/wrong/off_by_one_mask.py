# expect: memory-safety
# also: traffic
# why: the store's mask is offsets <= n: one element past the end of out is written whenever n % 256 != 0; and Triton cannot prove a `<=` mask uniform over a vector, so the store goes one lane an instruction (on an H200 at n = 4096, twice the reference's store sectors).
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=offsets <= n)


def add(x, y, out, n):
    BLOCK = 256
    grid = (triton.cdiv(n, BLOCK),)
    add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
