// A per-thread local array indexed at run time (local memory) and a sort of it.
extern "C" __global__ void local_sort(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v[8];
  for (int k = 0; k < 8; ++k) v[k] = in[(i * 8 + k * 5) % (n * 8)];
  for (int a = 1; a < 8; ++a) {
    int key = v[a], b = a - 1;
    while (b >= 0 && v[b] > key) { v[b + 1] = v[b]; --b; }
    v[b + 1] = key;
  }
  for (int k = 0; k < 8; ++k) out[i * 8 + k] = v[k];
}
