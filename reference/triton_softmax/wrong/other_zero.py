# expect: correctness
# why: masked lanes load other=0.0, not -inf: in a row whose logits are all negative the max becomes 0, and each masked lane adds exp(0 - max) to the sum. Shows only when cols is not a multiple of BLOCK (not a power of two).
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    col = tl.arange(0, BLOCK)
    mask = col < cols
    x = tl.load(x_row + col, mask=mask, other=0.0)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_row + col, num / den, mask=mask)


def softmax(x, out, rows, cols):
    BLOCK = triton.next_power_of_2(cols)
    softmax_kernel[(rows,)](x, out, x.stride(0), out.stride(0), cols, BLOCK=BLOCK)
