// Tiny blocked matrix multiply on the CPU (Kernel Tuner's C backend, g++), written for Tunesmith.
// It exists so that CI, which has no GPU, can exercise live tuning end to end: compile, run,
// verify, time. The function returns its own run time in milliseconds, as Kernel Tuner's C
// backend expects. Tunable: the tile sizes, the loop order inside a tile, and the k-loop unroll.
#include <chrono>

#ifndef N
#define N 96
#endif
#ifndef tile_i
#define tile_i 16
#define tile_j 16
#define loop_order 0
#define unroll_k 4
#endif

#define STR(x) #x
#define UNROLL(n) _Pragma(STR(GCC unroll n))

extern "C" float matmul_c(float *C, const float *A, const float *B)
{
    auto start = std::chrono::steady_clock::now();
    for (int ii = 0; ii < N; ii += tile_i)
        for (int jj = 0; jj < N; jj += tile_j) {
#if loop_order == 0
            for (int i = ii; i < ii + tile_i; i++)
                for (int j = jj; j < jj + tile_j; j++) {
                    float sum = 0.0f;
                    UNROLL(unroll_k)
                    for (int k = 0; k < N; k++)
                        sum += A[i * N + k] * B[k * N + j];
                    C[i * N + j] = sum;
                }
#else
            for (int i = ii; i < ii + tile_i; i++) {
                for (int j = jj; j < jj + tile_j; j++)
                    C[i * N + j] = 0.0f;
                UNROLL(unroll_k)
                for (int k = 0; k < N; k++) {
                    const float a = A[i * N + k];
                    for (int j = jj; j < jj + tile_j; j++)
                        C[i * N + j] += a * B[k * N + j];
                }
            }
#endif
        }
    return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
}
