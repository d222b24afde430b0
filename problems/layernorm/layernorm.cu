// Row-wise layer normalisation of an NROWS x NCOLS single-precision matrix, written for Tunesmith:
// out = (x - mean) / sqrt(var + EPS) * gamma + beta per row, gamma and beta per column.
//
// A thread block is block_size_x x block_size_y threads: block_size_y rows per block, block_size_x threads per
// row (a multiple of the warp size), each loading vector_width floats at a time (float, float2 or float4)
// strided by block_size_x; threads past the row's last vector idle. one_pass = 1 reduces the sum and the sum
// of squares together (var = E[x^2] - mean^2: one reduction, the row read twice in all); one_pass = 0 reduces
// the mean first, then the sum of squared deviations (two reductions, the row read three times). A row's
// warps combine their values by warp shuffles and shared memory. Memory-bound; a small space.

#ifndef NROWS
#define NROWS 16384
#define NCOLS 768
#endif
#ifndef block_size_x
#define block_size_x 128
#define block_size_y 2
#define vector_width 4
#define one_pass 1
#endif
#define EPS 1e-5f

#define NWARPS_ROW (block_size_x / 32)
#define NVEC (NCOLS / vector_width)

#if vector_width == 4
typedef float4 vec_t;
#elif vector_width == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__device__ __forceinline__ void unpack(float (&e)[vector_width], vec_t v)
{
#if vector_width == 4
    e[0] = v.x; e[1] = v.y; e[2] = v.z; e[3] = v.w;
#elif vector_width == 2
    e[0] = v.x; e[1] = v.y;
#else
    e[0] = v;
#endif
}

__device__ __forceinline__ vec_t pack(const float (&e)[vector_width])
{
#if vector_width == 4
    return make_float4(e[0], e[1], e[2], e[3]);
#elif vector_width == 2
    return make_float2(e[0], e[1]);
#else
    return e[0];
#endif
}

// Sum over the row's threads, in every thread; every thread of the block calls it (it may synchronise).
__device__ __forceinline__ float row_sum(float v, float (*sh)[NWARPS_ROW])
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, d);
#if NWARPS_ROW > 1
    if (threadIdx.x % 32 == 0)
        sh[threadIdx.y][threadIdx.x / 32] = v;
    __syncthreads();
    v = 0.0f;
#pragma unroll
    for (int w = 0; w < NWARPS_ROW; w++)
        v += sh[threadIdx.y][w];
    __syncthreads();
#endif
    return v;
}

extern "C" __global__ void __launch_bounds__(block_size_x * block_size_y)
layernorm(float *__restrict__ out, const float *__restrict__ in, const float *__restrict__ gamma,
          const float *__restrict__ beta)
{
    __shared__ float sh_a[block_size_y][NWARPS_ROW];
    __shared__ float sh_b[block_size_y][NWARPS_ROW];
    const size_t row = (size_t)blockIdx.y * block_size_y + threadIdx.y;
    const vec_t *x = reinterpret_cast<const vec_t *>(in + row * NCOLS);
    vec_t *y = reinterpret_cast<vec_t *>(out + row * NCOLS);
    float e[vector_width];
    float sum = 0.0f, sq = 0.0f;
    for (int c = threadIdx.x; c < NVEC; c += block_size_x) {
        unpack(e, x[c]);
#pragma unroll
        for (int j = 0; j < vector_width; j++) {
            sum += e[j];
#if one_pass
            sq += e[j] * e[j];
#endif
        }
    }
    sum = row_sum(sum, sh_a);
    const float mean = sum * (1.0f / NCOLS);
#if one_pass
    sq = row_sum(sq, sh_b);
    const float var = fmaxf(sq * (1.0f / NCOLS) - mean * mean, 0.0f);
#else
    for (int c = threadIdx.x; c < NVEC; c += block_size_x) {
        unpack(e, x[c]);
#pragma unroll
        for (int j = 0; j < vector_width; j++)
            sq += (e[j] - mean) * (e[j] - mean);
    }
    sq = row_sum(sq, sh_b);
    const float var = sq * (1.0f / NCOLS);
#endif
    const float rstd = rsqrtf(var + EPS);
    const vec_t *g = reinterpret_cast<const vec_t *>(gamma);
    const vec_t *b = reinterpret_cast<const vec_t *>(beta);
    for (int c = threadIdx.x; c < NVEC; c += block_size_x) {
        float gg[vector_width], bb[vector_width];
        unpack(e, x[c]);
        unpack(gg, g[c]);
        unpack(bb, b[c]);
#pragma unroll
        for (int j = 0; j < vector_width; j++)
            e[j] = (e[j] - mean) * rstd * gg[j] + bb[j];
        y[c] = pack(e);
    }
}
