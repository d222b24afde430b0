// A naive CUDA transpose out = in^T (NY x NX in, row-major), as a user would bring it: one thread per
// element, coalesced reads and strided writes, no tunable parameters. The same problem as problems/transpose.
#ifndef NX
#define NX 8192
#define NY 8192
#endif

extern "C" __global__ void transpose_naive(float *out, const float *in)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < NY && col < NX)
        out[(size_t)col * NY + row] = in[(size_t)row * NX + col];
}
