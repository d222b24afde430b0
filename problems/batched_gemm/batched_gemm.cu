// Batched small matrix products C_m = A_m B_m, BATCH row-major 32x32 single-precision matrices, written for Tunesmith.
//
// A thread block of block_size_x * block_size_y * block_size_z threads handles block_size_z matrices, one
// per z-slice of threads. The threads of a slice cover the 32x32 output in passes of
// (block_size_y * tile_y) rows by (block_size_x * tile_x) columns; in a pass each thread computes a
// tile_y x tile_x register tile, rows ty, ty + block_size_y, ... and columns tx, tx + block_size_x, ...
// (strided, so neighbouring threads touch neighbouring columns). use_shared=1 first copies the block's A and
// B matrices into shared memory (coalesced; A's rows padded by one float against bank conflicts) and
// computes from there; use_shared=0 reads A and B from global memory (L1/L2 cached). loop_unroll unrolls
// the k loop. The inputs are small integers, so every sum is exact and any order gives the same answer.

#ifndef BATCH
#define BATCH 8192
#endif
#define N 32
#define NN (N * N)
#ifndef block_size_x
#define block_size_x 16
#define block_size_y 8
#define block_size_z 1
#define tile_x 2
#define tile_y 2
#define use_shared 1
#define loop_unroll 4
#endif

#define NTHREADS (block_size_x * block_size_y * block_size_z)
#define STR(x) #x
#define PRAGMA_UNROLL(n) _Pragma(STR(unroll n))

extern "C" __global__ void __launch_bounds__(NTHREADS)
batched_gemm(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B)
{
    const int first = blockIdx.x * block_size_z;  // the block's first matrix
    const int m = first + threadIdx.z;
#if use_shared
    __shared__ float sA[block_size_z][N][N + 1];
    __shared__ float sB[block_size_z][N][N];
    const int tid = threadIdx.x + block_size_x * (threadIdx.y + block_size_y * threadIdx.z);
    for (int i = tid; i < block_size_z * NN; i += NTHREADS) {
        const int mm = i / NN, e = i % NN;
        sA[mm][e / N][e % N] = A[(size_t)(first + mm) * NN + e];
        sB[mm][e / N][e % N] = B[(size_t)(first + mm) * NN + e];
    }
    __syncthreads();
#define A_AT(r, k) sA[threadIdx.z][r][k]
#define B_AT(k, c) sB[threadIdx.z][k][c]
#else
    const float *a = A + (size_t)m * NN;
    const float *b = B + (size_t)m * NN;
#define A_AT(r, k) a[(r) * N + (k)]
#define B_AT(k, c) b[(k) * N + (c)]
#endif
    float *c = C + (size_t)m * NN;
    for (int r0 = threadIdx.y; r0 < N; r0 += block_size_y * tile_y) {
        for (int c0 = threadIdx.x; c0 < N; c0 += block_size_x * tile_x) {
            float acc[tile_y][tile_x];
#pragma unroll
            for (int i = 0; i < tile_y; i++)
#pragma unroll
                for (int j = 0; j < tile_x; j++)
                    acc[i][j] = 0.0f;
            PRAGMA_UNROLL(loop_unroll)
            for (int k = 0; k < N; k++) {
                float av[tile_y], bv[tile_x];
#pragma unroll
                for (int i = 0; i < tile_y; i++)
                    av[i] = A_AT(r0 + i * block_size_y, k);
#pragma unroll
                for (int j = 0; j < tile_x; j++)
                    bv[j] = B_AT(k, c0 + j * block_size_x);
#pragma unroll
                for (int i = 0; i < tile_y; i++)
#pragma unroll
                    for (int j = 0; j < tile_x; j++)
                        acc[i][j] += av[i] * bv[j];
            }
#pragma unroll
            for (int i = 0; i < tile_y; i++)
#pragma unroll
                for (int j = 0; j < tile_x; j++)
                    c[(r0 + i * block_size_y) * N + c0 + j * block_size_x] = acc[i][j];
        }
    }
}
