// expect: memory-safety
// also: correctness, race
// why: the scaling pass walks the row in whole chunks of 256 without checking j < h, so when h % 256 != 0 it writes past the row, and for the last row past the end of out (and reads past x and w); the stores past a row land on the next row's elements, which the next block stores to too: a race the emulator names.

extern "C" __global__ void rmsnorm(const float* __restrict__ x,
                                   const float* __restrict__ w,
                                   float* __restrict__ out,
                                   int rows,
                                   int h,
                                   float eps)
{
    __shared__ float warp_sums[32];   // one partial sum per warp (at most 1024 threads)
    __shared__ float inv_rms;

    const int r = blockIdx.x;
    if (r >= rows)                    // whole block leaves together: no divergent barrier
        return;
    const float* xr = x + (size_t)r * h;
    float* outr = out + (size_t)r * h;

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int nwarps = (blockDim.x + 31) >> 5;

    // 1. Each thread: sum of squares over a strided slice of the row (coalesced: the warp
    //    reads 32 consecutive floats per step). Any h works, including h < blockDim.x.
    float s = 0.0f;
    for (int j = tid; j < h; j += blockDim.x) {
        const float v = xr[j];
        s = fmaf(v, v, s);
    }

    // 2. Warp reduction in registers, then one value per warp through shared memory.
    for (int offset = 16; offset > 0; offset >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, offset);
    if (lane == 0)
        warp_sums[warp] = s;
    __syncthreads();                  // all warp sums written before warp 0 reads them

    if (warp == 0) {
        s = (lane < nwarps) ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, offset);
        if (lane == 0)
            inv_rms = rsqrtf(s / (float)h + eps);
    }
    __syncthreads();                  // inv_rms written before anyone reads it

    // 3. Scaling pass: reads x a second time (from L2 for typical h) and w once.
    const float scale = inv_rms;
    for (int base = 0; base < h; base += blockDim.x) {
        const int j = base + tid;
        outr[j] = w[j] * (xr[j] * scale);
    }
}
