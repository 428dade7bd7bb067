// Conversions and rounding: __float2int_rn/rz, __float_as_int, __int_as_float, rintf, truncf, floorf, ceilf, __saturatef, (int) and (double) casts.
extern "C" __global__ void fconv(const float* a, int* oi, float* of, double* od, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  oi[4 * i + 0] = __float2int_rn(x);
  oi[4 * i + 1] = __float2int_rz(x);
  oi[4 * i + 2] = __float_as_int(x) ^ 0x80000000;
  oi[4 * i + 3] = (int)x;
  of[5 * i + 0] = rintf(x);
  of[5 * i + 1] = truncf(x);
  of[5 * i + 2] = floorf(x) + ceilf(x);
  of[5 * i + 3] = __saturatef(x);
  of[5 * i + 4] = __int_as_float(0x3f800000 + (i & 7));
  od[i] = (double)x * 3.0 + (double)(unsigned)i;
}
