// Flash-attention-like kernel: O = softmax(Q K^T / sqrt(D)) V per head, single precision, written for Tunesmith.
//
// Q, K, V and O are HEADS x NQ (or NK) x D row-major. A thread block has block_size_y queries of one head
// (NQ is a multiple of block_size_y, so a block never spans two heads) and block_size_x threads per
// query: thread x of a query owns the head dimensions x, x + block_size_x, ... (D / block_size_x of them)
// of the query and of its output accumulator, in registers. The block walks over the keys in tiles of
// block_k keys: it copies the tile's K and V rows into shared memory (coalesced), then every query takes
// the tile's keys one by one: partial dot products, summed over the query's threads by warp shuffles
// (block_size_x divides 32, so a query's threads are in one warp and all get the same score), and an
// online softmax (running maximum m, running sum l, output rescaled when m grows). loop_unroll unrolls
// the loop over a tile's keys. Inputs are in [-1, 1]: scores stay within [-8, 8] and the output is a
// weighted mean of V, so single-precision rounding stays far below the tolerance.

#ifndef HEADS
#define HEADS 16
#define NQ 1024
#define NK 1024
#define D 64
#endif
#ifndef block_size_x
#define block_size_x 4
#define block_size_y 32
#define block_k 32
#define loop_unroll 1
#endif

#define NTHREADS (block_size_x * block_size_y)
#define DPT (D / block_size_x)  // head dimensions per thread
#define STR(x) #x
#define PRAGMA_UNROLL(n) _Pragma(STR(unroll n))

extern "C" __global__ void __launch_bounds__(NTHREADS)
attention(float *__restrict__ O, const float *__restrict__ Q, const float *__restrict__ K,
          const float *__restrict__ V)
{
    __shared__ float sK[block_k][D];
    __shared__ float sV[block_k][D];
    const int tx = threadIdx.x;
    const int row = blockIdx.x * block_size_y + threadIdx.y;  // head * NQ + query
    const int head = (blockIdx.x * block_size_y) / NQ;
    const float *k = K + (size_t)head * NK * D;
    const float *v = V + (size_t)head * NK * D;
    const int tid = tx + block_size_x * threadIdx.y;

    float q[DPT], o[DPT];
#pragma unroll
    for (int i = 0; i < DPT; i++) {
        q[i] = Q[(size_t)row * D + tx + i * block_size_x] * 0.125f;  // 1 / sqrt(64), exact
        o[i] = 0.0f;
    }
    float m = __int_as_float(0xff800000), l = 0.0f;  // -infinity

    for (int t = 0; t < NK; t += block_k) {
        __syncthreads();  // the previous tile is no longer read
        for (int e = tid; e < block_k * D; e += NTHREADS) {
            sK[e / D][e % D] = k[(size_t)t * D + e];
            sV[e / D][e % D] = v[(size_t)t * D + e];
        }
        __syncthreads();
        PRAGMA_UNROLL(loop_unroll)
        for (int j = 0; j < block_k; j++) {
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < DPT; i++)
                s += q[i] * sK[j][tx + i * block_size_x];
#pragma unroll
            for (int d = block_size_x / 2; d > 0; d >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, d);
            const float m_new = fmaxf(m, s);
            const float corr = __expf(m - m_new);  // 0 on the first key (m = -inf)
            const float p = __expf(s - m_new);
            l = l * corr + p;
#pragma unroll
            for (int i = 0; i < DPT; i++)
                o[i] = o[i] * corr + p * sV[j][tx + i * block_size_x];
            m = m_new;
        }
    }
    const float inv = 1.0f / l;
#pragma unroll
    for (int i = 0; i < DPT; i++)
        O[(size_t)row * D + tx + i * block_size_x] = o[i] * inv;
}
