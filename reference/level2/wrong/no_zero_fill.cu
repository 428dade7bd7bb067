// expect: correctness
// also: memory-safety
// why: past the edge of the matrix the tile loads are skipped without writing 0, so stale values of the previous tile are added in; wrong only when N % 32 != 0.

#define TILE 32

extern "C" __global__ void matmul_tiled(const float* __restrict__ A,
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
        // Each thread stages one element of each tile. A warp (fixed ty, tx = 0..31)
        // reads 32 consecutive floats of a row of A and of B: coalesced.
        // Past the edge of the matrix the tile is filled with 0 so the full-tile
        // inner loop below adds nothing for the missing k.
        const int a_col = t + tx;
        const int b_row = t + ty;
        if (row < N && a_col < N) As[ty][tx] = A[row * N + a_col];
        if (b_row < N && col < N) Bs[ty][tx] = B[b_row * N + col];
        __syncthreads();   // the tiles are complete before anyone reads them

        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();   // everyone is done reading before the next tile overwrites them
    }

    if (row < N && col < N)
        C[row * N + col] = acc;
}
