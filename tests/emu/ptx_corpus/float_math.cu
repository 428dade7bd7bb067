// Single-precision math library: expf, logf, sinf, cosf, powf, tanhf, erff, atan2f (libdevice in PTX).
extern "C" __global__ void fmath(const float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  float* o = out + 8 * i;
  o[0] = expf(x);
  o[1] = logf(x + 2.0f);
  o[2] = sinf(x);
  o[3] = cosf(x);
  o[4] = powf(x + 2.0f, 1.7f);
  o[5] = tanhf(x);
  o[6] = erff(x);
  o[7] = atan2f(x, 1.5f);
}
