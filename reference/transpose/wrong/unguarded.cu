// expect: memory-safety
// also: correctness, race
// why: neither the read of in nor the write of out is bounds-checked, so when rows or cols is not a multiple of 32 the edge blocks read past in and write past out, and an out-of-range index lands on an element of the next row of out that another thread stores to too: a race the emulator names.

#define TILE 32

extern "C" __global__ void transpose(const float* __restrict__ in,
                                     float* __restrict__ out,
                                     int rows,
                                     int cols)
{
    // One extra column: row r of the tile starts at word 33 * r, so the 32 words of a
    // tile column fall in 32 different banks.
    __shared__ float tile[TILE][TILE + 1];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;

    // Coalesced read: a warp (fixed ty) reads 32 consecutive floats of one row of in.
    const int in_col = blockIdx.x * TILE + tx;
    const int in_row = blockIdx.y * TILE + ty;
    tile[ty][tx] = in[in_row * cols + in_col];

    __syncthreads();

    // Coalesced write: the block's output tile sits at the swapped block position, and a
    // warp writes 32 consecutive floats of one row of out, reading a column of the tile.
    const int out_col = blockIdx.y * TILE + tx;   // indexes the rows of in
    const int out_row = blockIdx.x * TILE + ty;   // indexes the columns of in
    out[out_row * rows + out_col] = tile[tx][ty];
}
