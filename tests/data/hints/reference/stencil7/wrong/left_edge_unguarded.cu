// expect: correctness
// also: memory-safety
// why: the left neighbours are not guarded, so block 0's threads 0..2 read x[-3], x[-2] and x[-1], before the start of x.

__constant__ float W[7] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};

extern "C" __global__ void stencil7(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float s = 0.0f;
    for (int k = -3; k <= 3; ++k)
        if (i + k < n)
            s += W[k + 3] * x[i + k];
    out[i] = s;
}
