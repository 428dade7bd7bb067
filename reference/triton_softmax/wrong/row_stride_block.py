# expect: correctness
# also: memory-safety
# why: rows start at row * BLOCK instead of row * stride: right only when cols is a power of two; otherwise rows read and write the wrong elements, the last ones past the end.
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * BLOCK
    out_row = out_ptr + row * BLOCK
    col = tl.arange(0, BLOCK)
    mask = col < cols
    x = tl.load(x_row + col, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_row + col, num / den, mask=mask)


def softmax(x, out, rows, cols):
    BLOCK = triton.next_power_of_2(cols)
    softmax_kernel[(rows,)](x, out, x.stride(0), out.stride(0), cols, BLOCK=BLOCK)
