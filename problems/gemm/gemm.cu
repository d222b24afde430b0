// Tiled single-precision matrix multiply C = A * B (row-major, N x N), written for Tunesmith.
//
// A thread block of block_size_x * block_size_y threads computes a (block_size_y * tile_size_y) x
// (block_size_x * tile_size_x) tile of C; each thread keeps tile_size_y x tile_size_x accumulators in
// registers. Per step of tile_k along K, the block stages an A tile (stored transposed) and a B tile
// in shared memory; smem_pad adds one column against bank conflicts, tile_layout chooses whether a
// thread's outputs are contiguous (0) or strided by the block size (1, coalesced stores and loads).
// Kernel Tuner prepends the tunable parameters as #defines.

#ifndef N
#define N 2048
#endif
#ifndef block_size_x
#define block_size_x 16
#define block_size_y 16
#define tile_size_x 4
#define tile_size_y 4
#define tile_k 16
#define smem_pad 1
#define tile_layout 1
#endif

#define BM (block_size_y * tile_size_y)
#define BN (block_size_x * tile_size_x)
#define NTHREADS (block_size_x * block_size_y)

#if tile_layout == 1
#define ROW(i) (threadIdx.y + (i) * block_size_y)
#define COL(j) (threadIdx.x + (j) * block_size_x)
#else
#define ROW(i) (threadIdx.y * tile_size_y + (i))
#define COL(j) (threadIdx.x * tile_size_x + (j))
#endif

extern "C" __global__ void __launch_bounds__(NTHREADS)
gemm(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B)
{
    __shared__ float sA[tile_k][BM + smem_pad];
    __shared__ float sB[tile_k][BN + smem_pad];

    const int tid = threadIdx.y * block_size_x + threadIdx.x;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    float acc[tile_size_y][tile_size_x];
#pragma unroll
    for (int i = 0; i < tile_size_y; i++)
#pragma unroll
        for (int j = 0; j < tile_size_x; j++)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < N; k0 += tile_k) {
        // Consecutive threads read consecutive k of one row of A: coalesced in chunks of tile_k.
        for (int e = tid; e < BM * tile_k; e += NTHREADS) {
            const int m = e / tile_k, k = e % tile_k;
            sA[k][m] = A[(size_t)(row0 + m) * N + k0 + k];
        }
        for (int e = tid; e < tile_k * BN; e += NTHREADS) {
            const int k = e / BN, c = e % BN;
            sB[k][c] = B[(size_t)(k0 + k) * N + col0 + c];
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < tile_k; k++) {
            float a[tile_size_y], b[tile_size_x];
#pragma unroll
            for (int i = 0; i < tile_size_y; i++)
                a[i] = sA[k][ROW(i)];
#pragma unroll
            for (int j = 0; j < tile_size_x; j++)
                b[j] = sB[k][COL(j)];
#pragma unroll
            for (int i = 0; i < tile_size_y; i++)
#pragma unroll
                for (int j = 0; j < tile_size_x; j++)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < tile_size_y; i++)
#pragma unroll
        for (int j = 0; j < tile_size_x; j++)
            C[(size_t)(row0 + ROW(i)) * N + col0 + COL(j)] = acc[i][j];
}
