// 2D convolution (cross-correlation) of an image with a FH x FW filter, written for Tunesmith.
//
// out[y][x] = sum_{i,j} in[y + i][x + j] * filter[i][j]; the input is padded by the filter size, so
// every output pixel has a full window. A thread block of block_size_x * block_size_y threads
// computes a (block_size_y * tile_size_y) x (block_size_x * tile_size_x) tile of the output; each
// thread owns tile_size_y x tile_size_x pixels strided by the block size. use_shared stages the input
// window in shared memory (smem_pad adds a column against bank conflicts); read_only routes global
// loads through the read-only cache; filter_shared stages the filter in shared memory too.

#ifndef IMAGE_W
#define IMAGE_W 4096
#define IMAGE_H 4096
#endif
#ifndef FW
#define FW 15
#define FH 15
#endif
#ifndef block_size_x
#define block_size_x 32
#define block_size_y 8
#define tile_size_x 2
#define tile_size_y 2
#define use_shared 1
#define smem_pad 0
#define read_only 0
#define filter_shared 1
#endif

#define INPUT_W (IMAGE_W + FW - 1)
#define TILE_W (block_size_x * tile_size_x)
#define TILE_H (block_size_y * tile_size_y)
#define SH_W (TILE_W + FW - 1)
#define SH_H (TILE_H + FH - 1)

#if read_only == 1
#define LOAD(p) __ldg(p)
#else
#define LOAD(p) (*(p))
#endif

#if filter_shared == 1
#define WEIGHT(i, j) sf[(i) * FW + (j)]
#else
#define WEIGHT(i, j) LOAD(&filter[(i) * FW + (j)])
#endif

extern "C" __global__ void __launch_bounds__(block_size_x * block_size_y)
conv2d(float *__restrict__ out, const float *__restrict__ in, const float *__restrict__ filter)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x0 = blockIdx.x * TILE_W;
    const int y0 = blockIdx.y * TILE_H;

#if filter_shared == 1
    __shared__ float sf[FH * FW];
    for (int e = ty * block_size_x + tx; e < FH * FW; e += block_size_x * block_size_y)
        sf[e] = LOAD(&filter[e]);
#endif
#if use_shared == 1
    __shared__ float sh[SH_H][SH_W + smem_pad];
    for (int i = ty; i < SH_H; i += block_size_y)
        for (int j = tx; j < SH_W; j += block_size_x)
            sh[i][j] = LOAD(&in[(size_t)(y0 + i) * INPUT_W + x0 + j]);
    __syncthreads();
#define PIXEL(y, x) sh[y][x]
#else
#define PIXEL(y, x) LOAD(&in[(size_t)(y0 + (y)) * INPUT_W + x0 + (x)])
#endif
#if filter_shared == 1 && use_shared == 0
    __syncthreads();
#endif

    float acc[tile_size_y][tile_size_x];
#pragma unroll
    for (int ti = 0; ti < tile_size_y; ti++)
#pragma unroll
        for (int tj = 0; tj < tile_size_x; tj++)
            acc[ti][tj] = 0.0f;

    for (int i = 0; i < FH; i++) {
#pragma unroll
        for (int j = 0; j < FW; j++) {
            const float w = WEIGHT(i, j);
#pragma unroll
            for (int ti = 0; ti < tile_size_y; ti++)
#pragma unroll
                for (int tj = 0; tj < tile_size_x; tj++)
                    acc[ti][tj] += PIXEL(ty + ti * block_size_y + i, tx + tj * block_size_x + j) * w;
        }
    }

#pragma unroll
    for (int ti = 0; ti < tile_size_y; ti++)
#pragma unroll
        for (int tj = 0; tj < tile_size_x; tj++)
            out[(size_t)(y0 + ty + ti * block_size_y) * IMAGE_W + x0 + tx + tj * block_size_x] = acc[ti][tj];
}
