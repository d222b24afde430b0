// Sum of N single-precision values into one double, written for Tunesmith.
//
// A thread block of block_size_x threads sums block_size_x * tile_size_x * vector_width consecutive values:
// each thread loads tile_size_x vectors of `vector_width` floats (float, float2 or float4), strided by the
// block size so that loads are coalesced, and sums them in a register. block_reduce picks how the
// block combines its threads' sums: 0 a shared-memory tree, 1 warp shuffles and then one warp over
// the warps' sums, 2 warp shuffles and one atomic add per warp. The block's total goes to out[0]
// with a double atomic add. Memory-bound: one read per value.
// The inputs are small integers, so every partial sum is exact and any order gives the same answer.

#ifndef NVALUES
#define NVALUES 67108864
#endif
#ifndef block_size_x
#define block_size_x 256
#define tile_size_x 4
#define vector_width 4
#define block_reduce 1
#endif

#if vector_width == 4
typedef float4 vec_t;
#define VSUM(v) ((v).x + (v).y + (v).z + (v).w)
#elif vector_width == 2
typedef float2 vec_t;
#define VSUM(v) ((v).x + (v).y)
#else
typedef float vec_t;
#define VSUM(v) (v)
#endif

#define NWARPS ((block_size_x + 31) / 32)

__device__ __forceinline__ float warp_sum(float s)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, d);
    return s;
}

extern "C" __global__ void __launch_bounds__(block_size_x)
reduction(double *__restrict__ out, const float *__restrict__ in)
{
    const vec_t *v = reinterpret_cast<const vec_t *>(in) + (size_t)blockIdx.x * block_size_x * tile_size_x;
    float s = 0.0f;
#pragma unroll
    for (int t = 0; t < tile_size_x; t++) {
        const vec_t x = v[t * block_size_x + threadIdx.x];
        s += VSUM(x);
    }
#if block_reduce == 0
    __shared__ float part[block_size_x];
    part[threadIdx.x] = s;
    __syncthreads();
#pragma unroll
    for (int d = block_size_x / 2; d > 0; d >>= 1) {
        if (threadIdx.x < d)
            part[threadIdx.x] += part[threadIdx.x + d];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, (double)part[0]);
#elif block_reduce == 1
    __shared__ float warps[NWARPS];
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0)
        warps[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < NWARPS ? warps[threadIdx.x] : 0.0f;
        s = warp_sum(s);
        if (threadIdx.x == 0)
            atomicAdd(out, (double)s);
    }
#else
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0)
        atomicAdd(out, (double)s);
#endif
}
