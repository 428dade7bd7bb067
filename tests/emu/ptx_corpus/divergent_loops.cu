// Divergent control flow: data-dependent while loops, early return, continue/break in a warp.
extern "C" __global__ void collatz(const int* in, int* steps, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned v = in[i];
  int s = 0;
  while (v != 1 && s < 500) {
    if (v % 2 == 0) { v /= 2; ++s; continue; }
    v = 3 * v + 1;
    ++s;
    if (v > 1000000u) break;
  }
  steps[i] = s;
}
