# expect: traffic
# why: three passes over the row in chunks of 256 (the max, then the sum of exp, then the output): right, but each row is read from global memory three times instead of once.
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, cols, CHUNK: tl.constexpr):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    col = tl.arange(0, CHUNK)
    m = tl.full((CHUNK,), -float("inf"), tl.float32)
    for start in range(0, cols, CHUNK):
        m = tl.maximum(m, tl.load(x_row + start + col, mask=start + col < cols, other=-float("inf")))
    row_max = tl.max(m, axis=0)
    s = tl.zeros((CHUNK,), tl.float32)
    for start in range(0, cols, CHUNK):
        v = tl.load(x_row + start + col, mask=start + col < cols, other=-float("inf"))
        s += tl.exp(v - row_max)
    den = tl.sum(s, axis=0)
    for start in range(0, cols, CHUNK):
        v = tl.load(x_row + start + col, mask=start + col < cols, other=-float("inf"))
        tl.store(out_row + start + col, tl.exp(v - row_max) / den, mask=start + col < cols)


def softmax(x, out, rows, cols):
    softmax_kernel[(rows,)](x, out, x.stride(0), out.stride(0), cols, CHUNK=256)
