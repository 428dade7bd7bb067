// Fast single-precision intrinsics: __expf, __logf, __sinf, __fdividef, rsqrtf, __frcp_rn, fmaf, sqrtf.
extern "C" __global__ void fastmath(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  float* o = out + 7 * i;
  o[0] = __expf(x);
  o[1] = __logf(x + 2.0f);
  o[2] = __sinf(x);
  o[3] = __fdividef(x, 3.0f);
  o[4] = rsqrtf(x + 2.0f);
  o[5] = fmaf(x, x, -1.0f);
  o[6] = sqrtf(x + 2.0f) + __frcp_rn(x + 4.0f);
}
