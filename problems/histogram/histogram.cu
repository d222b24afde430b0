// 256-bin histogram of N bytes, written for Tunesmith.
//
// A thread block of block_size_x threads counts block_size_x * items_per_thread * vector_width consecutive
// bytes: each thread loads items_per_thread words of vector_width bytes (1, 4 or 16: uchar, uint or uint4),
// strided by the block size so that loads are coalesced. use_shared = 0 adds every byte to the global
// histogram with an atomic; use_shared = 1 counts into `replicas` private sub-histograms in shared memory
// (thread t uses copy t % replicas, fewer collisions on popular bins) and adds the block's counts to the
// global histogram at the end. Atomic contention makes the space rugged: the best choice depends on how
// concentrated the data is (here: 64 of the 256 bins are used).

#ifndef NVALUES
#define NVALUES 67108864
#endif
#ifndef block_size_x
#define block_size_x 256
#define items_per_thread 4
#define vector_width 4
#define use_shared 1
#define replicas 2
#endif
#define NBINS 256

#if vector_width == 16
typedef uint4 word_t;
#elif vector_width == 4
typedef unsigned int word_t;
#else
typedef unsigned char word_t;
#endif

__device__ __forceinline__ void count_word(unsigned int *h, unsigned int w)
{
#pragma unroll
    for (int b = 0; b < 4; b++)
        atomicAdd(&h[(w >> (8 * b)) & 0xffu], 1u);
}

__device__ __forceinline__ void count(unsigned int *h, word_t w)
{
#if vector_width == 16
    count_word(h, w.x);
    count_word(h, w.y);
    count_word(h, w.z);
    count_word(h, w.w);
#elif vector_width == 4
    count_word(h, w);
#else
    atomicAdd(&h[w], 1u);
#endif
}

extern "C" __global__ void __launch_bounds__(block_size_x)
histogram(unsigned int *__restrict__ hist, const unsigned char *__restrict__ in)
{
#if use_shared
    __shared__ unsigned int part[replicas * NBINS];
    for (int i = threadIdx.x; i < replicas * NBINS; i += block_size_x)
        part[i] = 0;
    __syncthreads();
    unsigned int *h = part + (threadIdx.x % replicas) * NBINS;
#else
    unsigned int *h = hist;
#endif
    const word_t *w = reinterpret_cast<const word_t *>(in) + (size_t)blockIdx.x * block_size_x * items_per_thread;
#pragma unroll
    for (int t = 0; t < items_per_thread; t++)
        count(h, w[t * block_size_x + threadIdx.x]);
#if use_shared
    __syncthreads();
    for (int bin = threadIdx.x; bin < NBINS; bin += block_size_x) {
        unsigned int s = 0;
#pragma unroll
        for (int r = 0; r < replicas; r++)
            s += part[r * NBINS + bin];
        if (s)
            atomicAdd(&hist[bin], s);
    }
#endif
}
