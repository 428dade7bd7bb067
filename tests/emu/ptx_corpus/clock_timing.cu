// clock64()/clock() timing around a loop: the elapsed count is positive; the work is checked.
extern "C" __global__ void timed(const float* in, float* out, long long* cycles, int n) {
  long long t0 = clock64();
  unsigned c0 = clock();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int k = 0; k < 8; ++k) s += in[(i + k) % n];
  out[i] = s;
  long long t1 = clock64();
  unsigned c1 = clock();
  cycles[i] = (t1 > t0 && c1 != c0) ? 1 : 0;
}
