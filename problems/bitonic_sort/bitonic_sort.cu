// Segmented sort: every SEG consecutive uint32 keys of `in` sorted ascending into `out` by a bitonic network,
// written for Tunesmith.
//
// A thread block of block_size_x threads sorts block_size_x * items_per_thread keys (one or more whole
// segments); thread t owns the items_per_thread consecutive keys t * items_per_thread + r, in registers,
// loaded and stored vector_width keys at a time (uint or uint4). The network has the usual stages (k, j):
// keys i and i ^ j are compare-exchanged, ascending where (i mod SEG) & k is 0. A stage with j <
// items_per_thread pairs two keys of the same thread (registers only); with use_shuffle=1 a stage with
// j < 32 * items_per_thread pairs keys of two threads of one warp, exchanged by warp shuffles; every other
// stage goes through shared memory (a run of such stages stays there, one barrier per stage), whose
// index is padded by one word per 32 when shared_padding=1 (fewer bank conflicts). The network does not
// depend on the data, so every configuration gives exactly the sorted segments.

#ifndef NKEYS
#define NKEYS 8388608
#define SEG 2048
#define LOG_SEG 11
#endif
#ifndef block_size_x
#define block_size_x 256
#define items_per_thread 8
#define vector_width 4
#define use_shuffle 1
#define shared_padding 1
#endif

#define ITEMS (block_size_x * items_per_thread)  // keys per block: whole segments
#define SIDX(i) ((i) + (shared_padding ? (i) >> 5 : 0))
#define ASCENDING(i, k) ((((i) & (SEG - 1)) & (k)) == 0)

__device__ __forceinline__ void compare_exchange(unsigned int &lo, unsigned int &hi, bool ascending)
{
    const unsigned int a = lo < hi ? lo : hi, b = lo < hi ? hi : lo;
    lo = ascending ? a : b;
    hi = ascending ? b : a;
}

extern "C" __global__ void __launch_bounds__(block_size_x)
bitonic_sort(unsigned int *__restrict__ out, const unsigned int *__restrict__ in)
{
    __shared__ unsigned int s[ITEMS + (shared_padding ? ITEMS / 32 : 0)];
    const int t = threadIdx.x;
    const int first = t * items_per_thread;  // the thread's first key in the block
    const size_t base = (size_t)blockIdx.x * ITEMS + first;
    unsigned int v[items_per_thread];
#if vector_width == 4
#pragma unroll
    for (int r = 0; r < items_per_thread; r += 4) {
        const uint4 w = *reinterpret_cast<const uint4 *>(in + base + r);
        v[r] = w.x; v[r + 1] = w.y; v[r + 2] = w.z; v[r + 3] = w.w;
    }
#else
#pragma unroll
    for (int r = 0; r < items_per_thread; r++)
        v[r] = in[base + r];
#endif

    bool in_shared = false;  // the keys are in s (not in v) between shared-memory stages
#pragma unroll
    for (int lk = 1; lk <= LOG_SEG; lk++) {
        const int k = 1 << lk;
#pragma unroll
        for (int lj = lk - 1; lj >= 0; lj--) {
            const int j = 1 << lj;
            const bool in_thread = j < items_per_thread;
            const bool in_warp = use_shuffle && j < 32 * items_per_thread;
            if (in_thread || in_warp) {
                if (in_shared) {  // the previous stage was in shared memory: fetch the thread's keys
#pragma unroll
                    for (int r = 0; r < items_per_thread; r++)
                        v[r] = s[SIDX(first + r)];
                    in_shared = false;
                }
                if (in_thread) {
#pragma unroll
                    for (int r = 0; r < items_per_thread; r++)
                        if ((r & j) == 0)
                            compare_exchange(v[r], v[r + j], ASCENDING(first + r, k));
                } else {
                    const int lane_mask = j / items_per_thread;  // the partner thread is t ^ lane_mask
                    const bool lower = (t & lane_mask) == 0;
#pragma unroll
                    for (int r = 0; r < items_per_thread; r++) {
                        const unsigned int other = __shfl_xor_sync(0xffffffffu, v[r], lane_mask);
                        const bool keep_min = lower == ASCENDING(first + r, k);
                        v[r] = keep_min == (other < v[r]) ? other : v[r];
                    }
                }
            } else {
                if (!in_shared) {
#pragma unroll
                    for (int r = 0; r < items_per_thread; r++)
                        s[SIDX(first + r)] = v[r];
                    in_shared = true;
                }
                __syncthreads();
                for (int p = t; p < ITEMS / 2; p += block_size_x) {
                    const int i = 2 * p - (p & (j - 1));  // the lower key of pair p (bit lj of i is 0)
                    unsigned int a = s[SIDX(i)], b = s[SIDX(i + j)];
                    compare_exchange(a, b, ASCENDING(i, k));
                    s[SIDX(i)] = a;
                    s[SIDX(i + j)] = b;
                }
                __syncthreads();
            }
        }
    }
    if (in_shared) {
#pragma unroll
        for (int r = 0; r < items_per_thread; r++)
            v[r] = s[SIDX(first + r)];
    }

#if vector_width == 4
#pragma unroll
    for (int r = 0; r < items_per_thread; r += 4)
    {
        uint4 w;
        w.x = v[r]; w.y = v[r + 1]; w.z = v[r + 2]; w.w = v[r + 3];
        *reinterpret_cast<uint4 *>(out + base + r) = w;
    }
#else
#pragma unroll
    for (int r = 0; r < items_per_thread; r++)
        out[base + r] = v[r];
#endif
}
