// expect: memory-safety
// why: there is no bounds check, so when n % 256 != 0 the spare threads of the last block read past a and b and write past out.

extern "C" __global__ void swiglu(const float* __restrict__ a,
                                  const float* __restrict__ b,
                                  float* __restrict__ out,
                                  int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float v = a[i];
    out[i] = v / (1.0f + expf(-v)) * b[i];
}
