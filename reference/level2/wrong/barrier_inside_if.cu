// expect: memory-safety
// also: correctness
// why: the whole tile loop, barriers included, sits inside if (row < N && col < N), so when N % 32 != 0 the edge
// threads skip the loop and exit: they never load their share of the tiles, and the threads inside the guard
// read those slots unwritten. (The barriers themselves hold: PTX releases a barrier that only exited threads
// hold up, and synccheck reports nothing.)

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

    // "Threads outside C have nothing to do" -- but they do: they load part of the tiles,
    // and every thread of the block must reach each __syncthreads().
    if (row < N && col < N) {
        float acc = 0.0f;
        for (int t = 0; t < N; t += TILE) {
            const int a_col = t + tx;
            const int b_row = t + ty;
            As[ty][tx] = (a_col < N) ? A[row * N + a_col] : 0.0f;
            Bs[ty][tx] = (b_row < N) ? B[b_row * N + col] : 0.0f;
            __syncthreads();

            #pragma unroll
            for (int k = 0; k < TILE; ++k)
                acc = fmaf(As[ty][k], Bs[k][tx], acc);
            __syncthreads();
        }
        C[row * N + col] = acc;
    }
}
