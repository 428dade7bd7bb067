// Half-precision atomics: atomicAdd on __half2, __half and __nv_bfloat16 (sm_70+/sm_80+).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void atomics_half(const float* in, __half2* h2, __half* h, __nv_bfloat16* bf, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&h2[i % 4], __floats2half2_rn(in[i], 2.0f * in[i]));
  atomicAdd(&h[i % 4], __float2half(in[i]));
  atomicAdd(&bf[i % 4], __float2bfloat16(in[i]));
}
