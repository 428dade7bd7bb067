"""The grader's own Triton kernel, compiled and launched by a GPU child before the submission loads
(copied into the jail as tritonprobe.py): if it fails, the grading environment cannot compile or
run Triton there, which is the grader's fault. It must be a file: @triton.jit reads its source."""
import triton
import triton.language as tl


@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def chunked_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A loop over a runtime bound, as chunked softmax, RMSNorm and matmul kernels have: Triton 3.6's
    interpreter with NumPy 2.4 cannot run it (it raises converting the bound to an int)."""
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)
