// A naive matrix multiply C = A*B on the CPU, as a user would bring it: no tunable parameters.
// Kernel Tuner's C backend takes the time the function returns (milliseconds).
#include <chrono>

#ifndef N
#define N 96
#endif

extern "C" float matmul_naive(float *C, const float *A, const float *B)
{
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < N; k++)
                sum += A[i * N + k] * B[k * N + j];
            C[i * N + j] = sum;
        }
    return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
}
