// level3: register-tiled matrix multiply, C = A @ B.
//
// A, B and C are N x N float32 matrices, row-major (A[r * N + c]).
// Launch: block (256), grid (ceil(N/128), ceil(N/128)). Block (bx, by) computes the 128 x 128
// tile of C whose top-left element is C[by * 128][bx * 128]; each of its 256 threads computes
// 8 x 8 = 64 outputs and keeps them in registers (acc[8][8]) for the whole run.
//
// Why: in level2 every FMA needed two shared-memory loads, and shared memory, not the FMA
// units, set the speed. Here a thread loads 8 values of A and 8 of B per k step and combines
// them into 64 FMAs (an outer product): 4 FMAs per shared load.
//
// The k dimension is walked in slices of BK = 8: the block stages a 128 x 8 slice of A and an
// 8 x 128 slice of B in shared memory, then every thread accumulates 8 outer products.
//
// Fill in the two TODOs. Do not change the kernel's name or parameters.
// You may #include <cstdio> (for printf), <cstdint>, <cmath>, <cfloat>, <climits>, <cassert>,
// <cuda_runtime.h> or <cuda_fp16.h> as with nvcc; no other header, and the built-ins need none.

#define BM 128
#define BN 128
#define BK 8

// Given: elements (r, c .. c+3) of the N x N matrix M as a float4, with 0 for any element
// outside the matrix. When N % 4 == 0 it is one aligned 16-byte load (c is always a multiple
// of 4 here); otherwise four guarded scalar loads, since a float4 load from an address that is
// not a multiple of 16 bytes is an error.
__device__ __forceinline__ float4 load4(const float* __restrict__ M, int N, int r, int c, bool vec)
{
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

// Given: store v to elements (r, c .. c+3) of C, skipping those outside the matrix.
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
    __shared__ __align__(16) float As[BK][BM];   // A slice, TRANSPOSED: As[k][m] = A[block_row + m][k0 + k]
    __shared__ __align__(16) float Bs[BK][BN];   // B slice: Bs[k][n] = B[k0 + k][block_col + n]

    const int tid = threadIdx.x;
    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const bool vec = (N & 3) == 0;

    // Loaders. A slice: 128 rows x 8 floats; thread tid loads row a_r, columns a_c .. a_c+3
    // (two threads per row, i.e. one full 32-byte sector). B slice: 8 rows x 128 floats;
    // thread tid loads row b_r, columns b_c .. b_c+3 (a warp reads 512 consecutive bytes).
    const int a_r = tid >> 1, a_c = (tid & 1) * 4;
    const int b_r = tid >> 5, b_c = (tid & 31) * 4;

    // Compute layout: 16 x 16 threads; thread (tr, tc) owns
    //   rows    tr*4 + {0,1,2,3}  and  tr*4 + 64 + {0,1,2,3}   (acc[i][.], i = 0..3 and 4..7)
    //   columns tc*4 + {0,1,2,3}  and  tc*4 + 64 + {0,1,2,3}   (acc[.][j], j = 0..3 and 4..7)
    // of the block tile. Two groups of 4, 64 apart, rather than 8 in a row: then the 16
    // threads of a half-warp read 16 consecutive float4 of a shared row (no bank conflicts)
    // and write 16 consecutive float4 of C (coalesced).
    const int tr = tid >> 4, tc = tid & 15;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < N; k0 += BK) {
        const float4 a = load4(A, N, block_row + a_r, k0 + a_c, vec);   // A[row a_r][k0 + a_c .. +3]
        const float4 b = load4(B, N, k0 + b_r, block_col + b_c, vec);   // B[k0 + b_r][col b_c .. +3]

        // TODO(1): store the loaded values into the shared slices.
        //   a holds A[block_row + a_r][k0 + a_c + 0..3]; As is transposed (k first), so its
        //   four values go to four different rows of As, column a_r. Storing A transposed is
        //   what lets TODO(2) read 4 consecutive rows of A as one float4.
        //   b holds B[k0 + b_r][block_col + b_c + 0..3]: four consecutive floats of row b_r of Bs
        //   (one float4 store: &Bs[b_r][b_c] is 16-byte aligned).
        //   load4 already put 0 in any element outside the matrix: store those zeros too.

        __syncthreads();   // the slices are complete before anyone reads them

        // TODO(2): the register accumulation. For each k in 0..BK-1:
        //   - load this thread's 8 values of A, As[k][tr*4 + 0..3] and As[k][tr*4 + 64 + 0..3],
        //     and its 8 values of B, Bs[k][tc*4 + 0..3] and Bs[k][tc*4 + 64 + 0..3], into
        //     registers (four float4 loads: reinterpret_cast<const float4*>(&As[k][...]));
        //   - then acc[i][j] += a[i] * b[j] for all 64 (i, j) (fmaf).
        //   Use #pragma unroll on these loops: acc must stay in registers, and an array
        //   indexed by a runtime variable would go to (slow) local memory.

        __syncthreads();   // everyone is done reading before the next slice overwrites them
    }

    // Write the 8 x 8 results: row i of acc is output row tr*4 + (i & 3) + (i >> 2) * 64.
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = block_row + tr * 4 + (i & 3) + (i >> 2) * 64;
        store4(C, N, r, block_col + tc * 4,
               make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), vec);
        store4(C, N, r, block_col + tc * 4 + 64,
               make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]), vec);
    }
}
