// expect: correctness
// why: B is indexed with row instead of col, so every output of a row gets the same value.

extern "C" __global__ void matmul_coalesced(const float* __restrict__ A,
                                            const float* __restrict__ B,
                                            float* __restrict__ C,
                                            int N)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < N && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < N; ++k)
            acc = fmaf(A[row * N + k], B[k * N + row], acc);
        C[row * N + col] = acc;
    }
}
