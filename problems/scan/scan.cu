// Segmented inclusive prefix sum of NVALUES floats in segments of SEGMENT values, written for Tunesmith.
//
// A thread block of block_size_x threads scans segments_per_block consecutive segments, one after another, in
// chunks of block_size_x * items_per_thread values: each thread loads its items_per_thread consecutive values
// (vector_width floats at a time: float, float2 or float4), scans them in registers, and the block scans the
// threads' totals in shared memory with `algorithm`: 0 = Hillis-Steele (log2 steps, double buffered),
// 1 = Blelloch (work-efficient up-sweep and down-sweep), 2 = warp shuffles plus one warp over the warps'
// totals. A running carry links the chunks of a segment. The values are small integers, so every sum is
// exact in any order.

#ifndef NVALUES
#define NVALUES 16777216
#define SEGMENT 2048
#endif
#ifndef block_size_x
#define block_size_x 256
#define items_per_thread 4
#define vector_width 4
#define algorithm 2
#define segments_per_block 1
#endif

#define CHUNK (block_size_x * items_per_thread)
#define NCHUNKS (SEGMENT / CHUNK)  // exact: powers of two, CHUNK <= SEGMENT (restrictions)
#define NWARPS ((block_size_x + 31) / 32)

#if algorithm == 0
#define SCAN_SMEM (2 * block_size_x)
#elif algorithm == 1
#define SCAN_SMEM block_size_x
#else
#define SCAN_SMEM NWARPS
#endif

// The exclusive prefix of x over the block's threads and the block's total; every thread calls it.
// It ends with a barrier, so the shared memory can be used again at once.
__device__ __forceinline__ void block_scan(float x, float &excl, float &total, float *sh)
{
    const int t = threadIdx.x;
#if algorithm == 0
    sh[t] = x;
    __syncthreads();
    int src = 0;
    for (int d = 1; d < block_size_x; d <<= 1) {
        float y = sh[src * block_size_x + t];
        if (t >= d)
            y += sh[src * block_size_x + t - d];
        sh[(1 - src) * block_size_x + t] = y;
        src = 1 - src;
        __syncthreads();
    }
    excl = sh[src * block_size_x + t] - x;
    total = sh[src * block_size_x + block_size_x - 1];
#elif algorithm == 1
    sh[t] = x;
    __syncthreads();
    for (int d = 1; d < block_size_x; d <<= 1) {
        const int i = (t + 1) * 2 * d - 1;
        if (i < block_size_x)
            sh[i] += sh[i - d];
        __syncthreads();
    }
    total = sh[block_size_x - 1];
    __syncthreads();
    if (t == 0)
        sh[block_size_x - 1] = 0.0f;
    __syncthreads();
    for (int d = block_size_x / 2; d >= 1; d >>= 1) {
        const int i = (t + 1) * 2 * d - 1;
        if (i < block_size_x) {
            const float a = sh[i - d];
            sh[i - d] = sh[i];
            sh[i] += a;
        }
        __syncthreads();
    }
    excl = sh[t];
#else
    const int lane = t % 32, warp = t / 32;
    float y = x;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const float n = __shfl_up_sync(0xffffffffu, y, d);
        if (lane >= d)
            y += n;
    }
    if (lane == 31)
        sh[warp] = y;
    __syncthreads();
    if (warp == 0) {
        float w = lane < NWARPS ? sh[lane] : 0.0f;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const float n = __shfl_up_sync(0xffffffffu, w, d);
            if (lane >= d)
                w += n;
        }
        if (lane < NWARPS)
            sh[lane] = w;
    }
    __syncthreads();
    excl = y - x + (warp > 0 ? sh[warp - 1] : 0.0f);
    total = sh[NWARPS - 1];
#endif
    __syncthreads();
}

__device__ __forceinline__ void load_items(float (&v)[items_per_thread], const float *p)
{
#pragma unroll
    for (int i = 0; i < items_per_thread; i += vector_width) {
#if vector_width == 4
        const float4 t = *reinterpret_cast<const float4 *>(p + i);
        v[i] = t.x; v[i + 1] = t.y; v[i + 2] = t.z; v[i + 3] = t.w;
#elif vector_width == 2
        const float2 t = *reinterpret_cast<const float2 *>(p + i);
        v[i] = t.x; v[i + 1] = t.y;
#else
        v[i] = p[i];
#endif
    }
}

__device__ __forceinline__ void store_items(float *p, const float (&v)[items_per_thread])
{
#pragma unroll
    for (int i = 0; i < items_per_thread; i += vector_width) {
#if vector_width == 4
        *reinterpret_cast<float4 *>(p + i) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
#elif vector_width == 2
        *reinterpret_cast<float2 *>(p + i) = make_float2(v[i], v[i + 1]);
#else
        p[i] = v[i];
#endif
    }
}

extern "C" __global__ void __launch_bounds__(block_size_x)
scan(float *__restrict__ out, const float *__restrict__ in)
{
    __shared__ float sh[SCAN_SMEM];
    for (int seg = 0; seg < segments_per_block; seg++) {
        const size_t base = ((size_t)blockIdx.x * segments_per_block + seg) * SEGMENT;
        float carry = 0.0f;
        for (int chunk = 0; chunk < NCHUNKS; chunk++) {
            const size_t at = base + (size_t)chunk * CHUNK + (size_t)threadIdx.x * items_per_thread;
            float v[items_per_thread];
            load_items(v, in + at);
#pragma unroll
            for (int i = 1; i < items_per_thread; i++)
                v[i] += v[i - 1];
            float excl, total;
            block_scan(v[items_per_thread - 1], excl, total, sh);
            const float add = carry + excl;
#pragma unroll
            for (int i = 0; i < items_per_thread; i++)
                v[i] += add;
            store_items(out + at, v);
            carry += total;
        }
    }
}
