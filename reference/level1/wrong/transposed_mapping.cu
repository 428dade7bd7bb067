// expect: traffic
// also: performance
// why: threadIdx.x picks the row, so a warp reads 32 different rows of A (32 sectors per request) and writes a column of C, instead of a broadcast of A and consecutive B and C.

extern "C" __global__ void matmul_coalesced(const float* __restrict__ A,
                                            const float* __restrict__ B,
                                            float* __restrict__ C,
                                            int N)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < N && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < N; ++k)
            acc = fmaf(A[row * N + k], B[k * N + col], acc);
        C[row * N + col] = acc;
    }
}
