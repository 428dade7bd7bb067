// expect: correctness
// why: it accumulates straight into C, which is never zeroed (the grader pre-fills it with NaN, a GPU gives you whatever was there).

extern "C" __global__ void matmul_coalesced(const float* __restrict__ A,
                                            const float* __restrict__ B,
                                            float* __restrict__ C,
                                            int N)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < N && col < N) {
        for (int k = 0; k < N; ++k)
            C[row * N + col] += A[row * N + k] * B[k * N + col];
    }
}
