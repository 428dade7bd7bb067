// expect: traffic
// also: performance
// why: there is no parallel reduction: every thread loops over the whole row to compute the sum of squares itself, so each warp reads the entire row.

extern "C" __global__ void rmsnorm(const float* __restrict__ x,
                                   const float* __restrict__ w,
                                   float* __restrict__ out,
                                   int rows,
                                   int h,
                                   float eps)
{
    const int r = blockIdx.x;
    if (r >= rows)
        return;
    const float* xr = x + (size_t)r * h;
    float* outr = out + (size_t)r * h;

    // Correct, and needs no barrier, but the row is read by all 8 warps (one request per
    // element per warp) instead of once by the block.
    float s = 0.0f;
    for (int j = 0; j < h; ++j)
        s = fmaf(xr[j], xr[j], s);
    const float scale = rsqrtf(s / (float)h + eps);

    for (int j = threadIdx.x; j < h; j += blockDim.x)
        outr[j] = w[j] * (xr[j] * scale);
}
