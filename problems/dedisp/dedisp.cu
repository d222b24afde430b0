// Dedispersion-like kernel, written for Tunesmith (in the style of radio-astronomy dedispersion).
//
// out[dm][s] = sum_c in[c][s + shift(dm, c)], shift(dm, c) = (int)(dm * delay[c]): for every trial
// dispersion measure, sum the channels of a filterbank along a delayed track. A thread block of
// block_size_x (samples) * block_size_y (DMs) threads; each thread computes tile_size_x samples x
// tile_size_y DMs, its samples either contiguous (tile_stride_x = 0) or strided by the block width
// (1, coalesced). loop_unroll_factor_channel unrolls the channel loop (0: compiler's choice);
// blocks_per_sm asks the compiler for that many resident blocks (0: no hint).

#ifndef NCHANS
#define NCHANS 1024
#define NDM 256
#define NSAMP 8192
#define NSAMP_IN (NSAMP + 2048)
#endif
#ifndef block_size_x
#define block_size_x 64
#define block_size_y 4
#define tile_size_x 2
#define tile_size_y 2
#define tile_stride_x 1
#define loop_unroll_factor_channel 0
#define blocks_per_sm 0
#endif

#if tile_stride_x == 1
#define SAMPLE(j) (blockIdx.x * block_size_x * tile_size_x + threadIdx.x + (j) * block_size_x)
#else
#define SAMPLE(j) ((blockIdx.x * block_size_x + threadIdx.x) * tile_size_x + (j))
#endif
#define DM(i) ((blockIdx.y * block_size_y + threadIdx.y) * tile_size_y + (i))

#define STR(x) #x
#define PRAGMA_UNROLL(n) _Pragma(STR(unroll n))

#if blocks_per_sm > 0
#define BOUNDS __launch_bounds__(block_size_x * block_size_y, blocks_per_sm)
#else
#define BOUNDS __launch_bounds__(block_size_x * block_size_y)
#endif

extern "C" __global__ void BOUNDS
dedisp(float *__restrict__ out, const float *__restrict__ in, const float *__restrict__ delay)
{
    float acc[tile_size_y][tile_size_x];
    float dm[tile_size_y];
#pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
        dm[i] = (float)DM(i);
#pragma unroll
        for (int j = 0; j < tile_size_x; j++)
            acc[i][j] = 0.0f;
    }

#if loop_unroll_factor_channel > 0
    PRAGMA_UNROLL(loop_unroll_factor_channel)
#endif
    for (int c = 0; c < NCHANS; c++) {
        const float d = __ldg(&delay[c]);
        const float *row = in + (size_t)c * NSAMP_IN;
#pragma unroll
        for (int i = 0; i < tile_size_y; i++) {
            // delay[] holds multiples of 1/64 below 8 and dm < 256, so the product is exact.
            const int shift = (int)(dm[i] * d);
#pragma unroll
            for (int j = 0; j < tile_size_x; j++)
                acc[i][j] += __ldg(&row[SAMPLE(j) + shift]);
        }
    }

#pragma unroll
    for (int i = 0; i < tile_size_y; i++)
#pragma unroll
        for (int j = 0; j < tile_size_x; j++)
            out[(size_t)DM(i) * NSAMP + SAMPLE(j)] = acc[i][j];
}
