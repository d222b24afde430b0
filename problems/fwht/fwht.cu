// Batched fast Walsh-Hadamard transform (natural order, unnormalised) of NTRANSFORMS vectors of N = 2^LOGN
// floats, written for Tunesmith: y[k] = sum_j (-1)^popcount(j & k) x[j], computed by LOGN butterfly stages.
//
// A thread block of block_size_x threads transforms block_size_x * elements_per_thread / N consecutive
// vectors, N / elements_per_thread threads each. The block copies its vectors into shared memory (global
// loads of vector_width floats: float, float2 or float4), then runs rounds: in each round a thread reads
// elements_per_thread values whose indices differ in log2(elements_per_thread) adjacent bits, does the
// butterfly stages of those bits in registers (the radix), and writes them back; a barrier separates rounds
// (ceil(LOGN / log2(elements_per_thread)) of them). stage_order = 0 takes the index bits from the lowest up,
// 1 from the highest down (butterfly stages commute: the same answer, other access patterns).
// shared_padding = 1 adds one float after every 32 (fewer bank conflicts when a thread's values are
// adjacent). register_io = 1 skips the copies: the first round loads its values straight from global memory
// into registers and the last round stores them straight from registers (vector loads and stores of
// min(vector_width, elements_per_thread) floats where a thread's values are adjacent, else single floats,
// coalesced across the threads). The values are small integers, so every sum is exact.

#ifndef NTRANSFORMS
#define NTRANSFORMS 16384
#define LOGN 10
#endif
#ifndef block_size_x
#define block_size_x 256
#define elements_per_thread 8
#define vector_width 4
#define shared_padding 1
#define stage_order 0
#define register_io 0
#endif

#define N (1 << LOGN)
#define E elements_per_thread
#if E == 2
#define R 1
#elif E == 4
#define R 2
#elif E == 8
#define R 3
#elif E == 16
#define R 4
#elif E == 32
#define R 5
#else
#error "elements_per_thread must be 2, 4, 8, 16 or 32"
#endif
#define T (N / E)                      // threads per transform
#define TPB (block_size_x / T)         // transforms per block (restrictions: at least 1, at most 8)
#define ROW (N + (N / 32) * shared_padding)
#define PAD(i) ((i) + ((i) >> 5) * shared_padding)
#define NROUNDS ((LOGN + R - 1) / R)
#define NIN (TPB * N / vector_width)   // vectors a block loads
#define IOW (vector_width < E ? vector_width : E)  // register_io: floats a vector access moves

#if vector_width == 4
typedef float4 vec_t;
#elif vector_width == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__device__ __forceinline__ void vec_to_shared(float *sh, int e, vec_t v)  // e: the block's element index
{
#if vector_width == 4
    const float c[4] = {v.x, v.y, v.z, v.w};
#elif vector_width == 2
    const float c[2] = {v.x, v.y};
#else
    const float c[1] = {v};
#endif
#pragma unroll
    for (int k = 0; k < vector_width; k++) {
        const int el = e + k;
        sh[(el / N) * ROW + PAD(el % N)] = c[k];
    }
}

__device__ __forceinline__ vec_t vec_from_shared(const float *sh, int e)
{
    float c[vector_width];
#pragma unroll
    for (int k = 0; k < vector_width; k++) {
        const int el = e + k;
        c[k] = sh[(el / N) * ROW + PAD(el % N)];
    }
#if vector_width == 4
    return make_float4(c[0], c[1], c[2], c[3]);
#elif vector_width == 2
    return make_float2(c[0], c[1]);
#else
    return c[0];
#endif
}

// register_io: a thread's values of one round, straight from or to global memory (v: the thread's transform).
__device__ __forceinline__ void load_round(float (&x)[E], const float *v, int at, int lo)
{
    if (lo == 0) {  // adjacent values, at a multiple of E
#pragma unroll
        for (int q = 0; q < E; q += IOW) {
#if IOW == 4
            const float4 w = *reinterpret_cast<const float4 *>(v + at + q);
            x[q] = w.x; x[q + 1] = w.y; x[q + 2] = w.z; x[q + 3] = w.w;
#elif IOW == 2
            const float2 w = *reinterpret_cast<const float2 *>(v + at + q);
            x[q] = w.x; x[q + 1] = w.y;
#else
            x[q] = v[at + q];
#endif
        }
    } else {
#pragma unroll
        for (int q = 0; q < E; q++)
            x[q] = v[at | (q << lo)];
    }
}

__device__ __forceinline__ void store_round(float *v, const float (&x)[E], int at, int lo)
{
    if (lo == 0) {
#pragma unroll
        for (int q = 0; q < E; q += IOW) {
#if IOW == 4
            *reinterpret_cast<float4 *>(v + at + q) = make_float4(x[q], x[q + 1], x[q + 2], x[q + 3]);
#elif IOW == 2
            *reinterpret_cast<float2 *>(v + at + q) = make_float2(x[q], x[q + 1]);
#else
            v[at + q] = x[q];
#endif
        }
    } else {
#pragma unroll
        for (int q = 0; q < E; q++)
            v[at | (q << lo)] = x[q];
    }
}

extern "C" __global__ void __launch_bounds__(block_size_x)
fwht(float *__restrict__ out, const float *__restrict__ in)
{
    __shared__ float sh[TPB * ROW];
    const size_t mine_g = (size_t)blockIdx.x * TPB * N + (threadIdx.x / T) * N;  // this thread's transform
#if !register_io
    const size_t base = (size_t)blockIdx.x * (TPB * N / vector_width);
    const vec_t *src = reinterpret_cast<const vec_t *>(in) + base;
    vec_t *dst = reinterpret_cast<vec_t *>(out) + base;
    for (int k = threadIdx.x; k < NIN; k += block_size_x)
        vec_to_shared(sh, k * vector_width, src[k]);
    __syncthreads();
#endif

    float *mine = sh + (threadIdx.x / T) * ROW;
    const int t = threadIdx.x % T;
#pragma unroll
    for (int round = 0; round < NROUNDS; round++) {
        // This round's stages are the index bits [a0, a1); the thread's values differ in bits [lo, lo + R).
#if stage_order == 0
        const int a0 = round * R;
        const int a1 = a0 + R < LOGN ? a0 + R : LOGN;
        const int lo = a0 < LOGN - R ? a0 : LOGN - R;
#else
        const int a1 = LOGN - round * R;
        const int a0 = a1 - R > 0 ? a1 - R : 0;
        const int lo = a0;
#endif
        const int at = ((t >> lo) << (lo + R)) | (t & ((1 << lo) - 1));
        float x[E];
        if (register_io && round == 0) {
            load_round(x, in + mine_g, at, lo);
        } else {
#pragma unroll
            for (int q = 0; q < E; q++)
                x[q] = mine[PAD(at | (q << lo))];
        }
#pragma unroll
        for (int b = 0; b < R; b++) {
            if (lo + b < a0 || lo + b >= a1)
                continue;
#pragma unroll
            for (int q = 0; q < E; q++) {
                if (q & (1 << b))
                    continue;
                const float u = x[q], v = x[q | (1 << b)];
                x[q] = u + v;
                x[q | (1 << b)] = u - v;
            }
        }
        if (register_io && round == NROUNDS - 1) {
            store_round(out + mine_g, x, at, lo);
        } else {
#pragma unroll
            for (int q = 0; q < E; q++)
                mine[PAD(at | (q << lo))] = x[q];
            __syncthreads();
        }
    }

#if !register_io
    for (int k = threadIdx.x; k < NIN; k += block_size_x)
        dst[k] = vec_from_shared(sh, k * vector_width);
#endif
}
