// expect: memory-safety
// also: correctness, race
// why: the store of the 8 x 8 results has no bounds checks, so when N % 128 != 0 edge threads write past the end of C, and columns past the end of a row land on the next row's elements, which other threads store to too: a race the emulator names.

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
    float* p = C + (size_t)r * N + c;
    if (vec) {
        *reinterpret_cast<float4*>(p) = v;
        return;
    }
    p[0] = v.x;
    p[1] = v.y;
    p[2] = v.z;
    p[3] = v.w;
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

    // Compute layout: 16 x 16 threads; thread (tr, tc) owns rows tr*4 + {0..3, 64..67} and
    // columns tc*4 + {0..3, 64..67} of the block tile. Splitting the 8 columns into two
    // groups 64 apart makes a warp's float4 reads of Bs consecutive (conflict-free) and its
    // float4 stores to C coalesced.
    const int tr = tid >> 4, tc = tid & 15;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            acc[i][j] = 0.0f;

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
        if (has_next) {   // issue the global loads of the next slice before computing
            a_next = load4(A, N, block_row + a_r, k0 + BK + a_c, vec);
            b_next = load4(B, N, k0 + BK + b_r, block_col + b_c, vec);
        }

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[buf][k][tr * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[buf][k][tr * 4 + 64]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][k][tc * 4]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][k][tc * 4 + 64]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }

        if (has_next) {   // the other buffer was last read before the previous barrier
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

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = block_row + tr * 4 + (i & 3) + (i >> 2) * 64;
        store4(C, N, r, block_col + tc * 4,
               make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), vec);
        store4(C, N, r, block_col + tc * 4 + 64,
               make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]), vec);
    }
}
