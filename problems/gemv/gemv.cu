// Matrix-vector product y = A x, A an NROWS x NCOLS row-major single-precision matrix, written for Tunesmith.
//
// A thread block of block_size_x threads computes rows_per_block consecutive rows: its threads split the
// columns, each loading vector_width floats of x and of every row at a time (float, float2 or float4) and
// keeping one running sum per row in registers; loop_unroll unrolls the loop over columns. The block then
// sums its threads' values per row with warp shuffles and one warp over the warps' sums.
// Memory-bound (each value of A is read once); a small space. The inputs are small integers, so every
// partial sum is exact and any order gives the same answer.

#ifndef NROWS
#define NROWS 8192
#define NCOLS 8192
#endif
#ifndef block_size_x
#define block_size_x 256
#define rows_per_block 2
#define vector_width 4
#define loop_unroll 1
#endif

#if vector_width == 4
typedef float4 vec_t;
#define VDOT(a, b) ((a).x * (b).x + (a).y * (b).y + (a).z * (b).z + (a).w * (b).w)
#elif vector_width == 2
typedef float2 vec_t;
#define VDOT(a, b) ((a).x * (b).x + (a).y * (b).y)
#else
typedef float vec_t;
#define VDOT(a, b) ((a) * (b))
#endif

#define NWARPS ((block_size_x + 31) / 32)
#define NVEC (NCOLS / vector_width)
#define STR(x) #x
#define PRAGMA_UNROLL(n) _Pragma(STR(unroll n))
#define UNROLL_COLS PRAGMA_UNROLL(loop_unroll)

__device__ __forceinline__ float warp_sum(float s)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, d);
    return s;
}

extern "C" __global__ void __launch_bounds__(block_size_x)
gemv(float *__restrict__ y, const float *__restrict__ A, const float *__restrict__ x)
{
    const int row0 = blockIdx.x * rows_per_block;
    const vec_t *xv = reinterpret_cast<const vec_t *>(x);
    float s[rows_per_block];
#pragma unroll
    for (int r = 0; r < rows_per_block; r++)
        s[r] = 0.0f;
    UNROLL_COLS
    for (int c = threadIdx.x; c < NVEC; c += block_size_x) {
        const vec_t xx = xv[c];
#pragma unroll
        for (int r = 0; r < rows_per_block; r++) {
            const vec_t a = reinterpret_cast<const vec_t *>(A + (size_t)(row0 + r) * NCOLS)[c];
            s[r] += VDOT(a, xx);
        }
    }
    __shared__ float warps[rows_per_block][NWARPS];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int r = 0; r < rows_per_block; r++) {
        const float w = warp_sum(s[r]);
        if (lane == 0)
            warps[r][warp] = w;
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int r = 0; r < rows_per_block; r++) {
            const float w = warp_sum(lane < NWARPS ? warps[r][lane] : 0.0f);
            if (lane == 0)
                y[row0 + r] = w;
        }
    }
}
