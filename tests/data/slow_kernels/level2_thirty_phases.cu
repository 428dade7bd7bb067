// Correct but slow: every tile is loaded, synchronised on and multiplied 30 times (the result of
// the last pass is kept), so the kernel runs about 30 times the reference's phases. It must be
// graded in full, never stopped as a hang. __launch_bounds__: without it the 30-pass loop needs more
// registers than a 1,024-thread block allows on an H200, and the launch is refused.
#define TILE 32
#define PASSES 30

extern "C" __global__ void __launch_bounds__(TILE * TILE) matmul_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < N; t += TILE) {
        float part = 0.0f;
        for (int pass = 0; pass < PASSES; ++pass) {
            const int a_col = t + tx;
            const int b_row = t + ty;
            As[ty][tx] = (row < N && a_col < N) ? A[row * N + a_col] : 0.0f;
            Bs[ty][tx] = (b_row < N && col < N) ? B[b_row * N + col] : 0.0f;
            __syncthreads();
            part = 0.0f;
            #pragma unroll
            for (int k = 0; k < TILE; ++k)
                part = fmaf(As[ty][k], Bs[k][tx], part);
            __syncthreads();
        }
        acc += part;
    }
    if (row < N && col < N)
        C[row * N + col] = acc;
}
