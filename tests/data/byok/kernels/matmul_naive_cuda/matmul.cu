// A naive CUDA matrix multiply C = A*B (row-major, N x N), as a user would bring it: one thread per
// element of C, no shared memory, no tunable parameters. The same problem as problems/gemm.
#ifndef N
#define N 2048
#endif

extern "C" __global__ void matmul_naive(float *C, const float *A, const float *B)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= N || col >= N)
        return;
    float sum = 0.0f;
    for (int k = 0; k < N; k++)
        sum += A[row * N + k] * B[k * N + col];
    C[row * N + col] = sum;
}
