// Block-level votes (__syncthreads_count / _and / _or) and a shared-memory Hillis-Steele scan.
extern "C" __global__ void block_scan(const int* in, int* out, int* votes) {
  __shared__ int s[2][256];
  int t = threadIdx.x;
  int v = in[blockIdx.x * blockDim.x + t];
  int cnt = __syncthreads_count(v > 0);
  int all = __syncthreads_and(v > -50);
  int any = __syncthreads_or(v == 3);
  int p = 0;
  s[p][t] = v;
  __syncthreads();
  for (int d = 1; d < blockDim.x; d <<= 1) {
    s[1 - p][t] = s[p][t] + (t >= d ? s[p][t - d] : 0);
    __syncthreads();
    p = 1 - p;
  }
  out[blockIdx.x * blockDim.x + t] = s[p][t];
  if (t == 0) { votes[3 * blockIdx.x] = cnt; votes[3 * blockIdx.x + 1] = all; votes[3 * blockIdx.x + 2] = any; }
}
