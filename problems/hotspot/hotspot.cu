// Hotspot-like thermal stencil with temporal tiling, written for Tunesmith (after Rodinia's hotspot).
//
// One launch advances the temperature grid by temporal_tiling_factor time steps. A thread block owns
// a (block_size_y * tile_size_y) x (block_size_x * tile_size_x) tile of the output and stages that
// tile plus a halo of temporal_tiling_factor cells in shared memory (double-buffered), so each extra
// step costs redundant halo work instead of a trip through global memory. Cells at the grid edge use
// themselves as missing neighbours. power_shared stages the power map in shared memory too.

#ifndef GRID_W
#define GRID_W 4096
#define GRID_H 4096
#endif
#ifndef block_size_x
#define block_size_x 32
#define block_size_y 8
#define tile_size_x 2
#define tile_size_y 2
#define temporal_tiling_factor 2
#define power_shared 1
#endif

#define TT temporal_tiling_factor
#define TILE_W (block_size_x * tile_size_x)
#define TILE_H (block_size_y * tile_size_y)
#define SW (TILE_W + 2 * TT)
#define SH (TILE_H + 2 * TT)

extern "C" __global__ void __launch_bounds__(block_size_x * block_size_y)
hotspot(float *__restrict__ out, const float *__restrict__ temp, const float *__restrict__ power,
        const float step_div_cap, const float rx_1, const float ry_1, const float rz_1, const float amb_temp)
{
    __shared__ float st[2][SH][SW];
#if power_shared == 1
    __shared__ float sp[SH][SW];
#endif
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int gx0 = blockIdx.x * TILE_W - TT;  // global coordinates of shared cell (0, 0)
    const int gy0 = blockIdx.y * TILE_H - TT;

    for (int i = ty; i < SH; i += block_size_y) {
        const int gy = min(max(gy0 + i, 0), GRID_H - 1);
        for (int j = tx; j < SW; j += block_size_x) {
            const int gx = min(max(gx0 + j, 0), GRID_W - 1);
            st[0][i][j] = temp[(size_t)gy * GRID_W + gx];
#if power_shared == 1
            sp[i][j] = power[(size_t)gy * GRID_W + gx];
#endif
        }
    }
    __syncthreads();

#pragma unroll
    for (int s = 1; s <= TT; s++) {
        const int src = (s - 1) & 1, dst = s & 1;
        // The valid region shrinks by one cell per step: cells within s of the halo edge are stale.
        for (int i = s + ty; i < SH - s; i += block_size_y) {
            const int gy = gy0 + i;
            for (int j = s + tx; j < SW - s; j += block_size_x) {
                const int gx = gx0 + j;
                if (gy < 0 || gy >= GRID_H || gx < 0 || gx >= GRID_W)
                    continue;
                const float c = st[src][i][j];
                const float n = gy > 0 ? st[src][i - 1][j] : c;
                const float so = gy < GRID_H - 1 ? st[src][i + 1][j] : c;
                const float w = gx > 0 ? st[src][i][j - 1] : c;
                const float e = gx < GRID_W - 1 ? st[src][i][j + 1] : c;
#if power_shared == 1
                const float p = sp[i][j];
#else
                const float p = power[(size_t)gy * GRID_W + gx];
#endif
                st[dst][i][j] = c + step_div_cap * (p + (so + n - 2.0f * c) * ry_1 + (e + w - 2.0f * c) * rx_1
                                                    + (amb_temp - c) * rz_1);
            }
        }
        __syncthreads();
    }

    for (int i = ty; i < TILE_H; i += block_size_y)
        for (int j = tx; j < TILE_W; j += block_size_x)
            out[(size_t)(gy0 + TT + i) * GRID_W + gx0 + TT + j] = st[TT & 1][TT + i][TT + j];
}
