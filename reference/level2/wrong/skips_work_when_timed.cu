// expect: performance
// why: right at every size it is checked at, but at a large size only its first launch computes anything: a launch counter in a __device__ variable makes every later launch return at once, so the timed calls would be timed doing nothing.

#define TILE 32

// Module-scope device memory outlives a launch: the blocks of every launch at a large size draw
// tickets from it, and only the first launch's tickets are below its block count.
__device__ unsigned int large_tickets;

extern "C" __global__ void matmul_tiled(const float* __restrict__ A,
                                        const float* __restrict__ B,
                                        float* __restrict__ C,
                                        int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    __shared__ unsigned int ticket;

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    if (N >= 1536) {
        if (tx == 0 && ty == 0)
            ticket = atomicAdd(&large_tickets, 1u);
        __syncthreads();
        if (ticket >= gridDim.x * gridDim.y)
            return;   // not the first launch at this size: skip the work
    }
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int t = 0; t < N; t += TILE) {
        const int a_col = t + tx;
        const int b_row = t + ty;
        As[ty][tx] = (row < N && a_col < N) ? A[row * N + a_col] : 0.0f;
        Bs[ty][tx] = (b_row < N && col < N) ? B[b_row * N + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }

    if (row < N && col < N)
        C[row * N + col] = acc;
}
