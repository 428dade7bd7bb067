// expect: memory-safety
// why: there is no bounds check, so when n % 256 != 0 the spare threads of the last block read past x and y and write past out.

extern "C" __global__ void add(const float* __restrict__ x,
                               const float* __restrict__ y,
                               float* __restrict__ out,
                               int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = x[i] + y[i];
}
