// Sparse matrix-vector product y = A x, A in CSR form (row_ptr, col_idx, vals), written for Tunesmith.
//
// A group of threads_per_row consecutive threads of a block works on one row at a time: its threads
// split the row's nonzeros (thread l takes nonzeros l, l + threads_per_row, ...), and combine their
// sums with warp shuffles (threads_per_row divides 32, so a group never spans two warps). Each group
// handles rows_per_thread consecutive rows one after the other; a block of block_size_x threads thus
// covers (block_size_x / threads_per_row) * rows_per_thread rows. loop_unroll unrolls the loop over
// a row's nonzeros; use_ldg=1 reads the matrix, the row pointers and x through the read-only cache
// (__ldg). The rows are irregular (1 to 64 nonzeros) and the columns random, so x is gathered.
// The values are small integers: every row's sum is exact and any order gives the same answer.

#ifndef NROWS
#define NROWS 524288
#endif
#ifndef block_size_x
#define block_size_x 256
#define threads_per_row 4
#define rows_per_thread 1
#define loop_unroll 1
#define use_ldg 1
#endif

#if use_ldg
#define LOAD(p) __ldg(&(p))
#else
#define LOAD(p) (p)
#endif

#define STR(x) #x
#define PRAGMA_UNROLL(n) _Pragma(STR(unroll n))

extern "C" __global__ void __launch_bounds__(block_size_x)
spmv(float *y, const int *row_ptr, const int *col_idx, const float *vals, const float *x)
{
    const int lane = threadIdx.x % threads_per_row;
    const int group = (blockIdx.x * block_size_x + threadIdx.x) / threads_per_row;
    for (int r = 0; r < rows_per_thread; r++) {
        const int row = group * rows_per_thread + r;
        float s = 0.0f;
        if (row < NROWS) {
            const int end = LOAD(row_ptr[row + 1]);
            PRAGMA_UNROLL(loop_unroll)
            for (int k = LOAD(row_ptr[row]) + lane; k < end; k += threads_per_row)
                s += LOAD(vals[k]) * LOAD(x[LOAD(col_idx[k])]);
        }
        // Every thread of the warp gets here (no early exit), so full-mask shuffles are safe.
#pragma unroll
        for (int d = threads_per_row / 2; d > 0; d >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, d);
        if (lane == 0 && row < NROWS)
            y[row] = s;
    }
}
