// __match_any_sync and __match_all_sync: lanes grouped by equal keys.
extern "C" __global__ void match(const int* keys, unsigned* any_mask, unsigned* all_mask, int* all_pred) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int k = keys[i];
  any_mask[i] = __match_any_sync(0xffffffff, k);
  int pred;
  all_mask[i] = __match_all_sync(0xffffffff, k / 1000, &pred);
  all_pred[i] = pred;
}
