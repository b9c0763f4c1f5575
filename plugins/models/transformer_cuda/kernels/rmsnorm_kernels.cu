/* rmsnorm_kernels.cu: RMSNorm (as ../../transformer/layers/rmsnorm.c).
 *
 * Forward, per row x [D] of in [N, D]:
 *   rstd = 1 / sqrt(mean(x²) + eps)          rstd [N] (saved for backward)
 *   y    = x · rstd · w                      out [N, D], w [D]
 * Backward, per row (dy = dout row, s = rstd, g = dy ⊙ w):
 *   dx += s · g − x · s³ · (g·x) / D         din [N, D]
 *   dw += dy ⊙ x · s   (summed over rows)    dw [D]
 *
 * Forward and the dx part: one block per row; Σ x² and g·x are summed in
 * double (as the CPU layer does: a long row of squares loses bits in float),
 * per thread then over the block with warp shuffles + shared memory.
 * The dw part: a separate kernel, each thread one column over a chunk of
 * rows (coalesced across the threads), writing its chunk's partial sum;
 * then one thread per column adds the chunks' partials in chunk order
 * (column_parts_sum_kernel). No atomics: dw is the same bits on every run,
 * so a run's figures repeat.
 */
#include "kernels/kernels.h"
#include "kernels/reduce.cuh"

#define RMS_THREADS 256   /* a multiple of 32, at most 1024 */
#define DW_THREADS 256
#define DW_ROWS 32        /* rows per block of the dw kernel (at least) */
#define MAX_GRID_Y 65535

/* grid: N blocks, one per row. out may equal in (every read of the row
 * for Σ x² is done before the block_sum barrier; then each thread reads
 * x[i] before it writes y[i]), so no __restrict__ on them. */
static __global__ void __launch_bounds__(RMS_THREADS)
    rmsnorm_forward_kernel(float *out, float *__restrict__ rstd, const float *in,
                           const float *__restrict__ w, int d, float eps)
{
    __shared__ double sh[32];
    const size_t base = (size_t)blockIdx.x * d;
    const float *x = in + base;
    float *y = out + base;
    double ss = 0;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        ss += (double)x[i] * x[i];
    ss = block_sum(ss, sh);
    const float s = (float)(1.0 / sqrt(ss / d + (double)eps));
    if (threadIdx.x == 0)
        rstd[blockIdx.x] = s;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        y[i] = x[i] * s * w[i];
}

/* grid: N blocks, one per row: din_r += s dy ⊙ w − x · s³ (Σ dy w x) / D */
static __global__ void __launch_bounds__(RMS_THREADS)
    rmsnorm_backward_din_kernel(float *__restrict__ din, const float *__restrict__ dout,
                                const float *__restrict__ in, const float *__restrict__ w,
                                const float *__restrict__ rstd, int d)
{
    __shared__ double sh[32];
    const size_t base = (size_t)blockIdx.x * d;
    const float *x = in + base, *dy = dout + base;
    float *dx = din + base;
    double gx = 0; /* g·x = Σ dy w x */
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        gx += (double)dy[i] * w[i] * x[i];
    gx = block_sum(gx, sh);
    const float s = rstd[blockIdx.x];
    const float k = (float)(gx / d) * s * s * s;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        dx[i] += s * dy[i] * w[i] - k * x[i];
}

/* grid: (ceil(D / DW_THREADS), row chunks). Thread = column j; block y
 * sums rows [y·rows_per, min(N, (y+1)·rows_per)) into part[y, j] (set). */
static __global__ void __launch_bounds__(DW_THREADS)
    rmsnorm_backward_dw_kernel(float *__restrict__ part, const float *__restrict__ dout,
                               const float *__restrict__ in, const float *__restrict__ rstd, int n,
                               int d, long long rows_per)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d)
        return;
    const long long r0 = (long long)blockIdx.y * rows_per;
    const long long r1 = r0 + rows_per < n ? r0 + rows_per : n;
    float acc = 0; /* an empty last chunk writes 0 */
    for (long long r = r0; r < r1; r++) {
        const size_t o = (size_t)r * d + j;
        acc += dout[o] * in[o] * rstd[r];
    }
    part[(size_t)blockIdx.y * d + j] = acc;
}

cudaError_t k_rmsnorm_forward(cudaStream_t st, float *out, float *rstd, const float *in,
                              const float *w, int n, int d, float eps)
{
    if (n <= 0 || d <= 0)
        return cudaSuccess;
    rmsnorm_forward_kernel<<<n, RMS_THREADS, 0, st>>>(out, rstd, in, w, d, eps);
    return cudaGetLastError();
}

cudaError_t k_rmsnorm_backward(cudaStream_t st, float *din, float *dw, const float *dout,
                               const float *in, const float *w, const float *rstd, int n, int d)
{
    if (n <= 0 || d <= 0)
        return cudaSuccess;
    rmsnorm_backward_din_kernel<<<n, RMS_THREADS, 0, st>>>(din, dout, in, w, rstd, d);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess || !dw)
        return err;
    /* chunks of at least DW_ROWS rows, at most MAX_GRID_Y of them */
    long long gy = ((long long)n + DW_ROWS - 1) / DW_ROWS;
    if (gy > MAX_GRID_Y)
        gy = MAX_GRID_Y;
    const long long rows_per = ((long long)n + gy - 1) / gy;
    const unsigned gx = (unsigned)(((long long)d + DW_THREADS - 1) / DW_THREADS);
    float *part = NULL; /* [gy, D], stream-ordered: freed once the sum has run */
    if ((err = cudaMallocAsync((void **)&part, (size_t)gy * d * sizeof(float), st)) !=
        cudaSuccess)
        return err;
    rmsnorm_backward_dw_kernel<<<dim3(gx, (unsigned)gy), DW_THREADS, 0, st>>>(part, dout, in,
                                                                              rstd, n, d,
                                                                              rows_per);
    column_parts_sum_kernel<<<gx, DW_THREADS, 0, st>>>(dw, part, (int)gy, d);
    err = cudaGetLastError();
    cudaError_t f = cudaFreeAsync(part, st);
    return err != cudaSuccess ? err : f;
}
