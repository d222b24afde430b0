// Row-wise softmax of an NROWS x NCOLS single-precision matrix, written for Tunesmith.
//
// A thread block is block_size_x x block_size_y threads: block_size_y rows per block, block_size_x threads per
// row (a multiple of the warp size: warp-per-row at 32, block-per-row at block_size_y = 1). A row's threads
// load vector_width floats at a time (float, float2 or float4), strided by block_size_x so that loads are
// coalesced. online = 0 reduces the row maximum, then the sum of exp(x - max) (two reductions, two passes over
// the row); online = 1 keeps a running (maximum, rescaled sum) pair per thread and reduces the pairs once (one
// pass, two exponentials per element). cache_row = 1 keeps the thread's part of the row in registers (the
// row is read once); cache_row = 0 reads it again from global memory (L2) in every pass. A row's warps
// combine their values through shared memory. Memory-bound; a flat-ish space.

#ifndef NROWS
#define NROWS 16384
#define NCOLS 1024
#endif
#ifndef block_size_x
#define block_size_x 128
#define block_size_y 2
#define vector_width 4
#define cache_row 1
#define online 0
#endif

#define NWARPS_ROW (block_size_x / 32)
#define VPT (NCOLS / (block_size_x * vector_width))  // vectors per thread, exact (restrictions)
#define NEG_BIG (-3.0e38f)

__device__ __forceinline__ void load_vec(float (&e)[vector_width], const float *p)
{
#if vector_width == 4
    const float4 t = *reinterpret_cast<const float4 *>(p);
    e[0] = t.x; e[1] = t.y; e[2] = t.z; e[3] = t.w;
#elif vector_width == 2
    const float2 t = *reinterpret_cast<const float2 *>(p);
    e[0] = t.x; e[1] = t.y;
#else
    e[0] = *p;
#endif
}

__device__ __forceinline__ void store_vec(float *p, const float (&e)[vector_width])
{
#if vector_width == 4
    *reinterpret_cast<float4 *>(p) = make_float4(e[0], e[1], e[2], e[3]);
#elif vector_width == 2
    *reinterpret_cast<float2 *>(p) = make_float2(e[0], e[1]);
#else
    *p = e[0];
#endif
}

// Fold (m2, s2) into the pair (m, s): s is a sum of exp(x - m).
__device__ __forceinline__ void combine(float &m, float &s, float m2, float s2)
{
    const float mn = fmaxf(m, m2);
    s = s * expf(m - mn) + s2 * expf(m2 - mn);
    m = mn;
}

// Maximum over the row's threads; every thread of the block calls it (it may synchronise the block).
__device__ __forceinline__ float row_max(float v, float (*sh)[NWARPS_ROW])
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
#if NWARPS_ROW > 1
    if (threadIdx.x % 32 == 0)
        sh[threadIdx.y][threadIdx.x / 32] = v;
    __syncthreads();
    v = sh[threadIdx.y][0];
#pragma unroll
    for (int w = 1; w < NWARPS_ROW; w++)
        v = fmaxf(v, sh[threadIdx.y][w]);
    __syncthreads();
#endif
    return v;
}

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

__device__ __forceinline__ void row_pair(float &m, float &s, float (*shm)[NWARPS_ROW], float (*shs)[NWARPS_ROW])
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, d);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, d);
        combine(m, s, m2, s2);
    }
#if NWARPS_ROW > 1
    if (threadIdx.x % 32 == 0) {
        shm[threadIdx.y][threadIdx.x / 32] = m;
        shs[threadIdx.y][threadIdx.x / 32] = s;
    }
    __syncthreads();
    m = shm[threadIdx.y][0];
    s = shs[threadIdx.y][0];
#pragma unroll
    for (int w = 1; w < NWARPS_ROW; w++)
        combine(m, s, shm[threadIdx.y][w], shs[threadIdx.y][w]);
    __syncthreads();
#endif
}

extern "C" __global__ void __launch_bounds__(block_size_x * block_size_y)
softmax(float *__restrict__ out, const float *__restrict__ in)
{
    __shared__ float sh_m[block_size_y][NWARPS_ROW];
    __shared__ float sh_s[block_size_y][NWARPS_ROW];
    const size_t row = (size_t)blockIdx.y * block_size_y + threadIdx.y;
    const float *x = in + row * NCOLS;
    float *y = out + row * NCOLS;
#define ELEM(k) (((k) * block_size_x + threadIdx.x) * vector_width)
    float m = NEG_BIG, s = 0.0f;
#if cache_row
    float v[VPT][vector_width];
#pragma unroll
    for (int k = 0; k < VPT; k++)
        load_vec(v[k], x + ELEM(k));
#define VAL(k, j) v[k][j]
#define FOR_ROW(k) _Pragma("unroll") for (int k = 0; k < VPT; k++)
#define FETCH(k)
#else
#define VAL(k, j) e[j]
#define FOR_ROW(k) for (int k = 0; k < VPT; k++)
#define FETCH(k) float e[vector_width]; load_vec(e, x + ELEM(k));
#endif

#if online
    FOR_ROW(k) {
        FETCH(k)
#pragma unroll
        for (int j = 0; j < vector_width; j++) {
            const float mn = fmaxf(m, VAL(k, j));
            s = s * expf(m - mn) + expf(VAL(k, j) - mn);
            m = mn;
        }
    }
    row_pair(m, s, sh_m, sh_s);
#else
    FOR_ROW(k) {
        FETCH(k)
#pragma unroll
        for (int j = 0; j < vector_width; j++)
            m = fmaxf(m, VAL(k, j));
    }
    m = row_max(m, sh_m);
    FOR_ROW(k) {
        FETCH(k)
#pragma unroll
        for (int j = 0; j < vector_width; j++)
            s += expf(VAL(k, j) - m);
    }
    s = row_sum(s, sh_s);
#endif
    const float inv = 1.0f / s;
    FOR_ROW(k) {
        FETCH(k)
        float o[vector_width];
#pragma unroll
        for (int j = 0; j < vector_width; j++)
            o[j] = expf(VAL(k, j) - m) * inv;
        store_vec(y + ELEM(k), o);
    }
}
