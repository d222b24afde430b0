// One explicit step of a 7-point 3D stencil (heat-equation-like, single precision), written for Tunesmith.
//
// out = C0 * in + C1 * (sum of the six face neighbours), a missing neighbour at the edge being the
// cell itself. A thread block of block_size_x * block_size_y threads covers a (block_size_y *
// tile_size_y) x (block_size_x * tile_size_x) patch of the x-y plane (each thread's points strided
// by the block size) and marches through tile_size_z planes in z, keeping the planes below and
// above in registers. use_shared = 1 stages each plane of the patch plus a halo in shared memory for
// the x and y neighbours (else they are read from global memory through the caches);
// blocks_per_sm asks the compiler for that many resident blocks (0: no hint). Memory-bound.

#ifndef NX
#define NX 256
#define NY 256
#define NZ 256
#define C0 0.4f
#define C1 0.1f
#endif
#ifndef block_size_x
#define block_size_x 32
#define block_size_y 4
#define tile_size_x 2
#define tile_size_y 2
#define tile_size_z 8
#define use_shared 1
#define blocks_per_sm 0
#endif

#define TW (block_size_x * tile_size_x)
#define TH (block_size_y * tile_size_y)
#define NTHREADS (block_size_x * block_size_y)
#define IDX(z, y, x) (((size_t)(z) * NY + (y)) * NX + (x))

#if blocks_per_sm > 0
#define BOUNDS __launch_bounds__(NTHREADS, blocks_per_sm)
#else
#define BOUNDS __launch_bounds__(NTHREADS)
#endif

__device__ __forceinline__ int clampi(int v, int n) { return min(max(v, 0), n - 1); }

extern "C" __global__ void BOUNDS
stencil3d(float *__restrict__ out, const float *__restrict__ in)
{
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH, z0 = blockIdx.z * tile_size_z;
    float below[tile_size_y][tile_size_x], here[tile_size_y][tile_size_x], above[tile_size_y][tile_size_x];
#pragma unroll
    for (int j = 0; j < tile_size_y; j++)
#pragma unroll
        for (int i = 0; i < tile_size_x; i++) {
            const int y = y0 + threadIdx.y + j * block_size_y, x = x0 + threadIdx.x + i * block_size_x;
            below[j][i] = in[IDX(clampi(z0 - 1, NZ), y, x)];
            here[j][i] = in[IDX(z0, y, x)];
        }
#if use_shared == 1
    __shared__ float plane[TH + 2][TW + 2];
    const int tid = threadIdx.y * block_size_x + threadIdx.x;
#endif
    for (int k = 0; k < tile_size_z; k++) {
        const int z = z0 + k;
#if use_shared == 1
        __syncthreads();  // the previous plane is no longer read
        for (int e = tid; e < (TH + 2) * (TW + 2); e += NTHREADS) {
            const int r = e / (TW + 2), c = e % (TW + 2);
            plane[r][c] = in[IDX(z, clampi(y0 - 1 + r, NY), clampi(x0 - 1 + c, NX))];
        }
        __syncthreads();
#endif
#pragma unroll
        for (int j = 0; j < tile_size_y; j++)
#pragma unroll
            for (int i = 0; i < tile_size_x; i++) {
                const int ly = threadIdx.y + j * block_size_y, lx = threadIdx.x + i * block_size_x;
                const int y = y0 + ly, x = x0 + lx;
                above[j][i] = in[IDX(clampi(z + 1, NZ), y, x)];
#if use_shared == 1
                const float sides = plane[ly + 1][lx] + plane[ly + 1][lx + 2] + plane[ly][lx + 1] + plane[ly + 2][lx + 1];
#else
                const float sides = in[IDX(z, y, clampi(x - 1, NX))] + in[IDX(z, y, clampi(x + 1, NX))]
                                  + in[IDX(z, clampi(y - 1, NY), x)] + in[IDX(z, clampi(y + 1, NY), x)];
#endif
                out[IDX(z, y, x)] = C0 * here[j][i] + C1 * (sides + below[j][i] + above[j][i]);
                below[j][i] = here[j][i];
                here[j][i] = above[j][i];
            }
    }
}
