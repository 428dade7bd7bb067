// Double precision: fma, sqrt, division, exp, log, sin, pow (libdevice code in PTX).
extern "C" __global__ void dmath(const double* a, const double* b, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = b[i];
  double* o = out + 7 * i;
  o[0] = fma(x, y, 1.0);
  o[1] = sqrt(fabs(x));
  o[2] = x / (y + 3.0);
  o[3] = exp(x * 0.1);
  o[4] = log(fabs(y) + 1.0);
  o[5] = sin(x);
  o[6] = pow(fabs(x) + 0.5, 1.5);
}
