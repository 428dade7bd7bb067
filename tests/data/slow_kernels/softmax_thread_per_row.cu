// Correct but slow: one thread per row, three serial loops over cols (max, sum of exponentials,
// normalise), no shared memory. The launch keeps the spec's 256-thread blocks and grid of rows, so
// one thread of each block works and the others leave at once: few busy threads, long serial loops.
extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols)
{
    const int r = blockIdx.x;
    if (threadIdx.x != 0 || r >= rows)
        return;
    const float* xr = x + (size_t)r * cols;
    float* yr = y + (size_t)r * cols;
    float m = xr[0];
    for (int j = 1; j < cols; ++j)
        m = fmaxf(m, xr[j]);
    float s = 0.0f;
    for (int j = 0; j < cols; ++j)
        s += expf(xr[j] - m);
    for (int j = 0; j < cols; ++j)
        yr[j] = expf(xr[j] - m) / s;
}
