import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # TODO: the grouped ordering: GROUP_M rows of tiles at a time, down each column of the group
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    # TODO: the rows of A and C and the columns of B and C this program's tile covers
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # TODO: walk K in steps of BLOCK_K, moving a_ptrs and b_ptrs on by BLOCK_K columns of A and rows
    # of B each step. The last step may run past K: mask it, and give the masked lanes a value that
    # adds nothing to the sum (other=); rows past M and columns past N too
    a = tl.load(a_ptrs)
    b = tl.load(b_ptrs)
    # TODO: accumulate every step's tl.dot in the fp32 accumulator
    acc = tl.dot(a, b)
    # TODO: store under a mask: the tile may reach past the last row or column of C
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc)


def matmul(a, b, c, M, N, K):
    """c = a @ b; a is M x K, b is K x N, c is M x N, float32 torch tensors, row-major."""
    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 32, 32, 32, 8
    # TODO: one program per tile of C, the last partial row and column of tiles included
    grid = (1,)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M)
