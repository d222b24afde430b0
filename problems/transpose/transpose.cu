// Out-of-place matrix transpose out = in^T (single precision, rows x cols = NY x NX), written for Tunesmith.
//
// A thread block of block_size_x * block_size_y threads moves a tile of (block_size_y * tile_size_y)
// rows x block_size_x columns; each thread handles tile_size_y rows, strided by block_size_y.
// use_shared = 0: every thread writes its elements straight to the transposed place (coalesced
// reads, strided writes); 1: the tile is staged in shared memory and written back row by row of
// the output (coalesced both ways), smem_pad adding one column against bank conflicts.
// Memory-bound: one read and one write per element.

#ifndef NX
#define NX 8192
#define NY 8192
#endif
#ifndef block_size_x
#define block_size_x 32
#define block_size_y 8
#define tile_size_y 4
#define use_shared 1
#define smem_pad 1
#endif

#define TILE_H (block_size_y * tile_size_y)
#define NTHREADS (block_size_x * block_size_y)

extern "C" __global__ void __launch_bounds__(NTHREADS)
transpose(float *__restrict__ out, const float *__restrict__ in)
{
    const int col0 = blockIdx.x * block_size_x;
    const int row0 = blockIdx.y * TILE_H;
#if use_shared == 0
#pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
        const int row = row0 + threadIdx.y + i * block_size_y;
        const int col = col0 + threadIdx.x;
        out[(size_t)col * NY + row] = in[(size_t)row * NX + col];
    }
#else
    __shared__ float tile[TILE_H][block_size_x + smem_pad];
#pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
        const int r = threadIdx.y + i * block_size_y;
        tile[r][threadIdx.x] = in[(size_t)(row0 + r) * NX + col0 + threadIdx.x];
    }
    __syncthreads();
    // The output tile is block_size_x rows of TILE_H columns: consecutive threads take consecutive columns.
    const int tid = threadIdx.y * block_size_x + threadIdx.x;
#pragma unroll
    for (int e = tid; e < block_size_x * TILE_H; e += NTHREADS) {
        const int r = e / TILE_H, c = e % TILE_H;
        out[(size_t)(col0 + r) * NY + row0 + c] = tile[c][r];
    }
#endif
}
