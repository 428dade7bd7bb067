// __half and __half2 arithmetic: conversions, __hadd/__hmul/__hfma, __hmax, half2 lanes.
#include <cuda_fp16.h>
extern "C" __global__ void half_math(const __half* a, const __half* b, __half* out, __half2* out2, float* outf, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = a[i], y = b[i];
  out[i] = __hfma(x, y, __hadd(x, __float2half(1.0f)));
  __half2 p = __halves2half2(x, y);
  __half2 q = __hmul2(p, __float2half2_rn(0.5f));
  out2[i] = __hadd2(q, __halves2half2(__hmax(x, y), __hmin(x, y)));
  outf[i] = __half2float(x) * __half2float(y) + (__hgt(x, y) ? 1.0f : 0.0f);
}
