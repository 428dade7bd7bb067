// cooperative_groups: thread_block, tiled_partition<32>, cg::reduce with cg::plus, tile.any/ballot.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void cg_sum(const int* in, int* out, unsigned* ballots) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int v = in[block.group_index().x * block.size() + block.thread_rank()];
  int s = cg::reduce(tile, v, cg::plus<int>());
  unsigned b = tile.ballot(v % 3 == 0);
  if (tile.thread_rank() == 0) {
    atomicAdd(&out[block.group_index().x], s);
    ballots[block.group_index().x * (block.size() / 32) + tile.meta_group_rank()] = b;
  }
}
