// each macro expands to ten copies of the one below: 10^9 tokens
#define B0 x+
#define B1 B0 B0 B0 B0 B0 B0 B0 B0 B0 B0
#define B2 B1 B1 B1 B1 B1 B1 B1 B1 B1 B1
#define B3 B2 B2 B2 B2 B2 B2 B2 B2 B2 B2
#define B4 B3 B3 B3 B3 B3 B3 B3 B3 B3 B3
#define B5 B4 B4 B4 B4 B4 B4 B4 B4 B4 B4
#define B6 B5 B5 B5 B5 B5 B5 B5 B5 B5 B5
#define B7 B6 B6 B6 B6 B6 B6 B6 B6 B6 B6
#define B8 B7 B7 B7 B7 B7 B7 B7 B7 B7 B7
#define B9 B8 B8 B8 B8 B8 B8 B8 B8 B8 B8
__device__ int f(int x) { return B9 0; }
#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE) matmul_tiled(const float* __restrict__ A,
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
