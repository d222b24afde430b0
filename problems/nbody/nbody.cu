// All-pairs gravitational accelerations of N bodies (single precision), written for Tunesmith.
//
// acc[i] = G sum_j m_j (p_j - p_i) / (|p_j - p_i|^2 + EPS2)^(3/2), bodies as float4 (x, y, z, mass),
// G = 1 / NBODIES so that accelerations are of order one whatever N.
// Compute-bound: about 20 flops per pair, N^2 pairs. A thread block of block_size_x threads; each
// thread computes tile_size_x bodies, strided by the block size. use_shared = 1 stages the other
// bodies in shared memory, block_size_x at a time; 0 reads them through the read-only cache.
// loop_unroll_factor_j unrolls the inner loop over other bodies (0: the compiler's choice);
// use_rsqrt computes the inverse distance with rsqrtf instead of 1 / sqrtf; blocks_per_sm asks
// the compiler for that many resident blocks per multiprocessor (0: no hint).

#ifndef NBODIES
#define NBODIES 16384
#define EPS2 0.01f
#endif
#ifndef block_size_x
#define block_size_x 256
#define tile_size_x 2
#define use_shared 1
#define loop_unroll_factor_j 4
#define use_rsqrt 1
#define blocks_per_sm 0
#endif

#define STR(x) #x
#define PRAGMA_UNROLL(n) _Pragma(STR(unroll n))
#if loop_unroll_factor_j > 0
#define UNROLL_J PRAGMA_UNROLL(loop_unroll_factor_j)
#else
#define UNROLL_J
#endif
#if blocks_per_sm > 0
#define BOUNDS __launch_bounds__(block_size_x, blocks_per_sm)
#else
#define BOUNDS __launch_bounds__(block_size_x)
#endif

__device__ __forceinline__ void interact(float3 &a, const float4 pi, const float4 pj)
{
    const float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
    const float d2 = dx * dx + dy * dy + dz * dz + EPS2;
#if use_rsqrt == 1
    const float inv = rsqrtf(d2);
#else
    const float inv = 1.0f / sqrtf(d2);
#endif
    const float s = pj.w * inv * inv * inv;
    a.x += dx * s;
    a.y += dy * s;
    a.z += dz * s;
}

extern "C" __global__ void BOUNDS
nbody(float *__restrict__ acc, const float4 *__restrict__ pos)
{
    float4 me[tile_size_x];
    float3 a[tile_size_x];
#pragma unroll
    for (int t = 0; t < tile_size_x; t++) {
        me[t] = pos[blockIdx.x * block_size_x * tile_size_x + t * block_size_x + threadIdx.x];
        a[t] = make_float3(0.0f, 0.0f, 0.0f);
    }
#if use_shared == 1
    __shared__ float4 other[block_size_x];
    for (int j0 = 0; j0 < NBODIES; j0 += block_size_x) {
        other[threadIdx.x] = pos[j0 + threadIdx.x];
        __syncthreads();
        UNROLL_J
        for (int j = 0; j < block_size_x; j++) {
            const float4 pj = other[j];
#pragma unroll
            for (int t = 0; t < tile_size_x; t++)
                interact(a[t], me[t], pj);
        }
        __syncthreads();
    }
#else
    UNROLL_J
    for (int j = 0; j < NBODIES; j++) {
        const float4 pj = __ldg(&pos[j]);
#pragma unroll
        for (int t = 0; t < tile_size_x; t++)
            interact(a[t], me[t], pj);
    }
#endif
#pragma unroll
    for (int t = 0; t < tile_size_x; t++) {
        const int i = blockIdx.x * block_size_x * tile_size_x + t * block_size_x + threadIdx.x;
        acc[3 * i] = a[t].x * (1.0f / NBODIES);
        acc[3 * i + 1] = a[t].y * (1.0f / NBODIES);
        acc[3 * i + 2] = a[t].z * (1.0f / NBODIES);
    }
}
