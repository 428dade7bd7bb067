// min/max/abs of int, unsigned, long long and float; fminf/fmaxf; a ternary that becomes selp.
extern "C" __global__ void minmax(const int* a, const int* b, const float* f, int* out, float* outf, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  int* o = out + 7 * i;
  o[0] = min(x, y);
  o[1] = max(x, y);
  o[2] = abs(x);
  o[3] = (int)umin((unsigned)x, (unsigned)y);
  o[4] = (int)(llabs((long long)x * 3) & 0x7fffffff);
  o[5] = (int)llmax((long long)x, (long long)y * 2);
  o[6] = x > y ? x - y : 7;
  outf[2 * i] = fminf(f[i], 0.5f) + fmaxf(f[i], -0.5f);
  outf[2 * i + 1] = fabsf(f[i]) > 1.0f ? f[i] : -f[i];
}
