// __nv_bfloat16 arithmetic and conversions.
#include <cuda_bf16.h>
extern "C" __global__ void bf16_math(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, float* outf, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_bfloat16 x = a[i], y = b[i];
  out[i] = __hfma(x, y, __float2bfloat16(0.25f));
  outf[i] = __bfloat162float(__hmul(x, y)) + __bfloat162float(__hsub(x, y));
}
