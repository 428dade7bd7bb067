// expect: correctness
// also: memory-safety, race
// why: the store guard compares out_row with rows and out_col with cols (swapped), which is right only when rows == cols. When rows != cols two threads then store to one element of out: a race the emulator names.

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
    if (in_row < rows && in_col < cols)
        tile[ty][tx] = in[in_row * cols + in_col];

    __syncthreads();

    // Coalesced write: the block's output tile sits at the swapped block position, and a
    // warp writes 32 consecutive floats of one row of out, reading a column of the tile.
    const int out_col = blockIdx.y * TILE + tx;   // indexes the rows of in
    const int out_row = blockIdx.x * TILE + ty;   // indexes the columns of in
    if (out_row < rows && out_col < cols)
        out[out_row * rows + out_col] = tile[tx][ty];
}
