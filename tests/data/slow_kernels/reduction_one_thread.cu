// Correct but slow: one thread of the whole grid sums every element in a serial loop and adds the
// total once; every other thread leaves at once.
extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* out, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    float s = 0.0f;
    for (int i = 0; i < n; ++i)
        s += x[i];
    atomicAdd(out, s);
}
