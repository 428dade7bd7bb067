// expect: memory-safety
// also: correctness, race
// why: the loops run over whole chunks of 256 without checking j < cols, so when cols % 256 != 0 they read and write past the row (and past x, y and the shared row cache on the last row); the stores past the row land on the next row's elements of y, which the next block stores to too: a race the emulator names.

#define NEG_INF __int_as_float(0xff800000)

__device__ float warp_max(float v)
{
    for (int k = 16; k > 0; k >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, k));
    return v;
}

__device__ float warp_sum(float v)
{
    for (int k = 16; k > 0; k >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, k);
    return v;
}

extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols)
{
    extern __shared__ float row[];      // cols floats
    __shared__ float partial[32];       // one value per warp
    __shared__ float stat;              // the row max, then the row sum

    const int r = blockIdx.x;
    if (r >= rows)
        return;
    const float* xr = x + (size_t)r * cols;
    float* yr = y + (size_t)r * cols;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nwarps = (blockDim.x + 31) >> 5;

    // 1. Read the row once (coalesced), keep it in shared memory, and take the max.
    float m = NEG_INF;
    const int padded = (cols + 255) / 256 * 256;
    for (int j = tid; j < padded; j += blockDim.x) {
        const float v = xr[j];
        row[j] = v;
        m = fmaxf(m, v);
    }
    m = warp_max(m);
    if (lane == 0)
        partial[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = warp_max(lane < nwarps ? partial[lane] : NEG_INF);
        if (lane == 0)
            stat = m;
    }
    __syncthreads();                    // the max, before anyone reads it
    m = stat;

    // 2. Exponentials of x - max (never above 1: no overflow), kept in place, and their sum.
    float s = 0.0f;
    for (int j = tid; j < cols; j += blockDim.x) {
        const float e = expf(row[j] - m);
        row[j] = e;
        s += e;
    }
    s = warp_sum(s);
    // partial[] was last read by warp 0 and stat by everyone before the barrier above: no barrier
    // is needed before they are overwritten (the next writes come after it).
    if (lane == 0)
        partial[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum(lane < nwarps ? partial[lane] : 0.0f);
        if (lane == 0)
            stat = s;
    }
    __syncthreads();                    // the sum, before anyone reads it

    // 3. Scale and write the row once.
    const float inv = 1.0f / stat;
    for (int j = tid; j < padded; j += blockDim.x)
        yr[j] = row[j] * inv;
}
