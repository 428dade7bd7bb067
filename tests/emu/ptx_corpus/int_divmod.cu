// Integer division and modulo of every width and signedness: char, short, int, long long and unsigned kinds.
extern "C" __global__ void divmod(const long long* a, const long long* b, long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long x = a[i], y = b[i];
  long long* o = out + 12 * i;
  signed char c = (signed char)x, cd = (signed char)y;
  short s = (short)x, sd = (short)y;
  int w = (int)x, wd = (int)y;
  unsigned u = (unsigned)x, ud = (unsigned)y;
  unsigned long long q = (unsigned long long)x, qd = (unsigned long long)y;
  o[0] = (signed char)(c / cd); o[1] = (signed char)(c % cd);
  o[2] = (short)(s / sd); o[3] = (short)(s % sd);
  o[4] = w / wd; o[5] = w % wd;
  o[6] = u / ud; o[7] = u % ud;
  o[8] = x / y; o[9] = x % y;
  o[10] = (long long)(q / qd); o[11] = (long long)(q % qd);
}
