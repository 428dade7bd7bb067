// expect: correctness
// why: each block remembers in a __device__ array that it has already computed its tile of C and skips the work on every later launch, so a second launch leaves C unwritten.

#define TILE 32
#define MAX_BLOCKS (1 << 16)

// Module-scope device memory lives as long as the loaded module, not as long as one launch.
__device__ unsigned char tile_done[MAX_BLOCKS];

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
    const int block_id = blockIdx.y * gridDim.x + blockIdx.x;

    // "This tile of C is already computed, skip it." True for the first launch only:
    // the next launch has new inputs and a fresh C. The whole block takes the same branch,
    // so the barriers below are not divergent.
    if (block_id < MAX_BLOCKS && tile_done[block_id])
        return;

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

    // Every thread of the block has read tile_done[block_id] before the barrier above.
    if (tx == 0 && ty == 0 && block_id < MAX_BLOCKS)
        tile_done[block_id] = 1;
}
