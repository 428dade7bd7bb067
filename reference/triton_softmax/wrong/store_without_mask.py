# expect: memory-safety
# also: correctness
# why: the store has no mask: the last row's BLOCK - cols spare lanes write past the end of out (earlier rows' spare lanes land on the next row, which its own program also stores: on the CPU's interpreter, which runs the programs in order, the row's own store comes last; on a GPU the programs run at once and the spare lanes' values can land last, so correctness fails there too).
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    col = tl.arange(0, BLOCK)
    mask = col < cols
    x = tl.load(x_row + col, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_row + col, num / den)


def softmax(x, out, rows, cols):
    BLOCK = triton.next_power_of_2(cols)
    softmax_kernel[(rows,)](x, out, x.stride(0), out.stride(0), cols, BLOCK=BLOCK)
