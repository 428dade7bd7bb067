// Floating-point atomics: atomicAdd on float and double; atomicExch on float (returns the old value).
extern "C" __global__ void atomics_float(const float* in, float* sf, double* sd, float* old, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&sf[blockIdx.x], in[i]);
  atomicAdd(&sd[0], (double)in[i] * 0.5);
  old[i] = atomicExch(&sf[8 + i], in[i] + 1.0f);
}
