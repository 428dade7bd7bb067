// Votes and shuffles over a partial member mask: the lanes of a sub-group (from a ballot) vote among
// themselves; a half-warp reduction with mask 0x0000ffff.
extern "C" __global__ void partial_votes(const int* in, unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32;
  int v = in[i];
  unsigned group = __ballot_sync(0xffffffff, v >= 0);
  unsigned* o = out + 5 * i;
  o[0] = o[1] = o[2] = o[3] = o[4] = 0xdeadbeef;
  if (v >= 0) {
    o[0] = __ballot_sync(group, v % 2 == 0);
    o[1] = __all_sync(group, v < 90);
    o[2] = __any_sync(group, v == 5);
  }
  if (lane < 16) {
    int s = v;
    for (int d = 8; d > 0; d >>= 1) s += __shfl_xor_sync(0x0000ffff, s, d);
    o[3] = s;
    o[4] = __popc(__ballot_sync(0x0000ffff, v > 10));
  }
}
