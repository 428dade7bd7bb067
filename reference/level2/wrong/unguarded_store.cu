// expect: memory-safety
// also: correctness, race
// why: the store to C has no bounds check, so when N % 32 != 0 the edge threads write past the end of C, and a thread whose column is past the end of its row stores onto the first elements of the next row, which that row's own threads store to too: a race the emulator names (on a GPU the launches disagree).

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
        As[ty][tx] = (row < N && a_col < N) ? A[row * N + a_col] : 0.0f;
        Bs[ty][tx] = (b_row < N && col < N) ? B[b_row * N + col] : 0.0f;
        __syncthreads();   // the tiles are complete before anyone reads them

        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();   // everyone is done reading before the next tile overwrites them
    }

    C[row * N + col] = acc;
}
