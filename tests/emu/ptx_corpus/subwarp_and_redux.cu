// Sub-warp shuffles (width 16, 8), 64-bit shuffles of double and long long, __reduce_*_sync (redux.sync),
// __syncwarp with a mask, cg::tiled_partition<16> with cg::reduce, cg::coalesced_threads.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void subwarp(const int* in, const double* din, int* out, double* dout, long long* lout) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int* o = out + 8 * i;
  int s16 = v;
  for (int d = 8; d > 0; d >>= 1) s16 += __shfl_down_sync(0xffffffff, s16, d, 16);
  o[0] = s16;
  o[1] = __shfl_sync(0xffffffff, v, 3, 8);
  o[2] = __reduce_add_sync(0xffffffff, v);
  o[3] = __reduce_max_sync(0xffffffff, v);
  o[4] = (int)__reduce_or_sync(0xffffffff, (unsigned)v);
  __syncwarp(0xffffffff);
  cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(cg::this_thread_block());
  o[5] = cg::reduce(t16, v, cg::greater<int>());
  int c = 0;
  if (v % 2 == 0) {
    cg::coalesced_group g = cg::coalesced_threads();
    c = g.size() * 100 + g.thread_rank();
  }
  o[6] = c;
  o[7] = __reduce_min_sync(0xffffffff, v);
  double dv = din[i];
  dout[i] = dv + __shfl_xor_sync(0xffffffff, dv, 1);
  long long lv = (long long)v << 33;
  lout[i] = __shfl_up_sync(0xffffffff, lv, 1);
}
