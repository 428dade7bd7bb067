// Correct but slow: no register tiles and no shared memory; each of the block's 256 threads computes
// 64 elements of the block's 128 x 128 tile of C one after another, reading A and B from global memory.
extern "C" __global__ void matmul_regtile(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int N)
{
    for (int e = threadIdx.x; e < 128 * 128; e += blockDim.x) {
        const int row = blockIdx.y * 128 + e / 128;
        const int col = blockIdx.x * 128 + e % 128;
        if (row >= N || col >= N)
            continue;
        float acc = 0.0f;
        for (int k = 0; k < N; ++k)
            acc = fmaf(A[row * N + k], B[k * N + col], acc);
        C[row * N + col] = acc;
    }
}
