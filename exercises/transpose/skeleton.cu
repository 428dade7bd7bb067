// transpose: out[c][r] = in[r][c].
//
// in is rows x cols, row-major (in[r * cols + c]); out is cols x rows, row-major (out[c * rows + r]).
// Launch: block (32, 32), grid ((cols + 31) / 32, (rows + 31) / 32). Block (bx, by) handles the
// 32 x 32 tile of in whose top-left element is in[by * 32][bx * 32].
//
// A direct out[c * rows + r] = in[r * cols + c] reads rows of in (coalesced) but writes columns
// of out: 32 sectors per warp store instead of 4. Going through a shared tile lets the block
// read a tile row by row and write it row by row too.
//
// Fill in the four TODOs. Do not change the kernel's name or parameters.
// You may #include <cstdio> (for printf), <cstdint>, <cmath>, <cfloat>, <climits>, <cassert>,
// <cuda_runtime.h> or <cuda_fp16.h> as with nvcc; no other header, and the built-ins need none.

#define TILE 32

// __launch_bounds__ promises the compiler at most 1024 threads per block, so it keeps
// register use low enough (64 per thread) for a 32 x 32 block to launch at all.
extern "C" __global__ void __launch_bounds__(TILE * TILE)
transpose(const float* __restrict__ in,
          float* __restrict__ out,
          int rows,
          int cols)
{
    // TODO(1): pad the tile. Shared memory has 32 banks of 4-byte words; word w is in bank
    //   w % 32. Phase 2 below reads a COLUMN of the tile: with rows of 32 floats, the 32
    //   words of a column are all in one bank and the hardware serialises them into 32
    //   wavefronts. Change the row length so that they land in 32 different banks.
    __shared__ float tile[TILE][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;

    // TODO(2): phase 1, the coalesced read. Let threadIdx.x pick the column of in, so that
    //   a warp reads 32 consecutive floats, and store the element at tile[ty][tx].
    //   Skip elements outside in (rows and cols need not be multiples of 32).

    // TODO(3): a barrier. Phase 2 reads tile elements that other warps wrote in phase 1.

    // TODO(4): phase 2, the coalesced write. This block's tile of out starts at row
    //   bx * 32 and column by * 32 of out (the block position is transposed too).
    //   Let threadIdx.x pick the column of out again, so that a warp writes 32 consecutive
    //   floats; the value comes from tile[tx][ty]. Skip elements outside out.
}
