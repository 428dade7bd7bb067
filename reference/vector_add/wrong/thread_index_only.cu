// expect: correctness
// why: the index is threadIdx.x alone, so every block writes elements 0..255 and the rest of out is never written (wrong whenever n > 256).

extern "C" __global__ void add(const float* __restrict__ x,
                               const float* __restrict__ y,
                               float* __restrict__ out,
                               int n)
{
    const int i = threadIdx.x;
    if (i < n)
        out[i] = x[i] + y[i];
}
