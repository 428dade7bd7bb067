// expect: performance
// why: shared-memory tiling without 2D register blocking: each thread computes one column of 64 outputs and reads an A value from shared memory for every FMA, so it is bound by shared-memory bandwidth.

#define BM 128
#define BN 128
#define BK 8

__device__ __forceinline__ float4 load4(const float* __restrict__ M, int N, int r, int c, bool vec)
{
    // Elements (r, c .. c+3) of the N x N matrix M, 0 outside it. When N % 4 == 0, c is a
    // multiple of 4, so the four floats are 16-byte aligned and either all in or all out.
    if (vec) {
        if (r < N && c < N)
            return __ldg(reinterpret_cast<const float4*>(M + (size_t)r * N + c));
        return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float4 v;
    const bool row_ok = r < N;
    const float* p = M + (size_t)r * N + c;
    v.x = (row_ok && c + 0 < N) ? p[0] : 0.0f;
    v.y = (row_ok && c + 1 < N) ? p[1] : 0.0f;
    v.z = (row_ok && c + 2 < N) ? p[2] : 0.0f;
    v.w = (row_ok && c + 3 < N) ? p[3] : 0.0f;
    return v;
}

__device__ __forceinline__ void store4(float* __restrict__ C, int N, int r, int c, float4 v, bool vec)
{
    if (r >= N)
        return;
    float* p = C + (size_t)r * N + c;
    if (vec) {
        if (c < N)
            *reinterpret_cast<float4*>(p) = v;
        return;
    }
    if (c + 0 < N) p[0] = v.x;
    if (c + 1 < N) p[1] = v.y;
    if (c + 2 < N) p[2] = v.z;
    if (c + 3 < N) p[3] = v.w;
}

extern "C" __global__ void __launch_bounds__(256, 2)
matmul_regtile(const float* __restrict__ A,
               const float* __restrict__ B,
               float* __restrict__ C,
               int N)
{
    __shared__ __align__(16) float As[2][BK][BM];   // A slice, transposed: As[k][m]
    __shared__ __align__(16) float Bs[2][BK][BN];   // B slice: Bs[k][n]

    const int tid = threadIdx.x;
    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const bool vec = (N & 3) == 0;

    // Loaders. A slice: 128 rows x 8 floats, two threads per row (one 32-byte sector).
    // B slice: 8 rows x 128 floats, a warp per row (four full sectors per 128 bytes).
    const int a_r = tid >> 1, a_c = (tid & 1) * 4;
    const int b_r = tid >> 5, b_c = (tid & 31) * 4;

    // Each thread owns one column of the block tile and 64 rows: C[r0 + 2*o][c], o = 0..63.
    // The B value of a k step is reused from a register for all 64 rows, but every A value
    // is read from shared memory for a single FMA: no 2D register blocking.
    const int c_local = tid & 127;
    const int r0 = tid >> 7;

    float acc[64];
#pragma unroll
    for (int o = 0; o < 64; ++o)
        acc[o] = 0.0f;

    // Prologue: slice 0 into buffer 0.
    float4 a_next = load4(A, N, block_row + a_r, a_c, vec);
    float4 b_next = load4(B, N, b_r, block_col + b_c, vec);
    As[0][a_c + 0][a_r] = a_next.x;
    As[0][a_c + 1][a_r] = a_next.y;
    As[0][a_c + 2][a_r] = a_next.z;
    As[0][a_c + 3][a_r] = a_next.w;
    *reinterpret_cast<float4*>(&Bs[0][b_r][b_c]) = b_next;
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < N; k0 += BK) {
        const bool has_next = k0 + BK < N;
        if (has_next) {
            a_next = load4(A, N, block_row + a_r, k0 + BK + a_c, vec);
            b_next = load4(B, N, k0 + BK + b_r, block_col + b_c, vec);
        }

#pragma unroll
        for (int o = 0; o < 64; ++o)
#pragma unroll
            for (int k = 0; k < BK; ++k)
                acc[o] = fmaf(As[buf][k][r0 + 2 * o], Bs[buf][k][c_local], acc[o]);

        if (has_next) {
            const int nb = buf ^ 1;
            As[nb][a_c + 0][a_r] = a_next.x;
            As[nb][a_c + 1][a_r] = a_next.y;
            As[nb][a_c + 2][a_r] = a_next.z;
            As[nb][a_c + 3][a_r] = a_next.w;
            *reinterpret_cast<float4*>(&Bs[nb][b_r][b_c]) = b_next;
        }
        __syncthreads();
        buf ^= 1;
    }

    const int c = block_col + c_local;
#pragma unroll
    for (int o = 0; o < 64; ++o) {
        const int r = block_row + r0 + 2 * o;
        if (r < N && c < N)
            C[(size_t)r * N + c] = acc[o];
    }
}
