// Reference solution for level1: one thread per output, coalesced mapping, C = A @ B.
// A, B, C are N x N, row-major float32. Block (32, 32), grid (ceil(N/32), ceil(N/32)).

extern "C" __global__ void matmul_coalesced(const float* __restrict__ A,
                                            const float* __restrict__ B,
                                            float* __restrict__ C,
                                            int N)
{
    // threadIdx.x varies fastest inside a warp, so it picks the column: a warp then reads
    // one A[row][k] (a broadcast) and 32 consecutive B[k][col], and writes 32 consecutive C.
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < N && col < N) {
        const float* a = A + (size_t)row * N;
        const float* b = B + col;
        float acc = 0.0f;
        for (int k = 0; k < N; ++k)
            acc = fmaf(a[k], b[(size_t)k * N], acc);
        C[(size_t)row * N + col] = acc;
    }
}
