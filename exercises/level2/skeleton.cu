// level2: shared-memory tiled matrix multiply, C = A @ B.
//
// A, B and C are N x N matrices of float32, stored row-major: element (r, c) of A is A[r * N + c].
// Launch: block (32, 32), grid (ceil(N/32), ceil(N/32)). Thread (tx, ty) of block (bx, by)
// computes C[row][col] with row = by * 32 + ty and col = bx * 32 + tx.
//
// The kernel walks along k one 32-wide tile at a time. For each tile, the block first copies a
// 32 x 32 piece of A and a 32 x 32 piece of B into shared memory (one element of each per
// thread), then every thread reads 32 values from each tile. Each element loaded from global
// memory is thus reused by 32 threads instead of being fetched 32 times.
//
// Fill in the three TODOs. Do not change the kernel's name or parameters.
// You may #include <cstdio> (for printf), <cstdint>, <cmath>, <cfloat>, <climits>, <cassert>,
// <cuda_runtime.h> or <cuda_fp16.h> as with nvcc; no other header, and the built-ins need none.

#define TILE 32

// __launch_bounds__ promises the compiler at most 1024 threads per block, so it keeps
// register use low enough (64 per thread) for a 32 x 32 block to launch at all.
extern "C" __global__ void __launch_bounds__(TILE * TILE)
matmul_tiled(const float* __restrict__ A,
             const float* __restrict__ B,
             float* __restrict__ C,
             int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int t = 0; t < N; t += TILE) {
        // TODO(1): load this thread's element of each tile into shared memory.
        //   As[ty][tx] should hold A[row][t + tx] and Bs[ty][tx] should hold B[t + ty][col].
        //   When N is not a multiple of 32 the last tiles hang over the edge of the matrix:
        //   an element outside A or B must not be read (it is not yours), and its tile slot
        //   must be set to 0.0f, because the loop below always runs over all 32 k and a
        //   stale value left in shared memory from the previous tile would be added in.

        // TODO(2): wait until every thread of the block has finished its loads.
        //   The loop below reads elements that 31 other warps wrote.

        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);

        // TODO(3): wait again, before the next iteration overwrites the tiles.
        //   A fast warp must not start writing tile t + 32 while a slow warp is
        //   still reading tile t.
    }

    if (row < N && col < N)
        C[row * N + col] = acc;
}
