// expect: traffic
// also: performance
// why: no shared-memory tiling: each thread reads its whole row of A and column of B from global memory, about 32 times the load traffic of the tiled kernel.

extern "C" __global__ void matmul_tiled(const float* __restrict__ A,
                                        const float* __restrict__ B,
                                        float* __restrict__ C,
                                        int N)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < N; ++k)
            acc = fmaf(A[row * N + k], B[k * N + col], acc);
        C[row * N + col] = acc;
    }
}
