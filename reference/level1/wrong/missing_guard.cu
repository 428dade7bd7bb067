// expect: memory-safety
// also: correctness, race
// why: there is no bounds check, so when N % 32 != 0 the threads past the edge read past A and B and write past C, and a column past the end of a row lands on the next row's element, which another thread stores to too: a race the emulator names.

extern "C" __global__ void matmul_coalesced(const float* __restrict__ A,
                                            const float* __restrict__ B,
                                            float* __restrict__ C,
                                            int N)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;
    for (int k = 0; k < N; ++k)
        acc = fmaf(A[row * N + k], B[k * N + col], acc);
    C[row * N + col] = acc;
}
