/* elementwise_kernels.cu: small kernels over flat arrays.
 *
 *   bias forward:  out[r, j] += b[j]             out [N, O], b [O]
 *   bias backward: db[j] += Σ_r dout[r, j]       db [O], dout [N, O]
 *   add:           y[i] += x[i]                  [n]
 *   to_bf16:       out[i] = bf16(in[i])          round to nearest even
 *
 * Elementwise ones: one thread per element, grid-stride, 64-bit indices.
 * Bias backward: thread = column j (coalesced across the threads), block y
 * sums a chunk of rows into its row of partials; then one thread per column
 * adds the partials in chunk order (column_parts_sum_kernel). No atomics:
 * db is the same bits on every run.
 */
#include <cuda_bf16.h>

#include "kernels/kernels.h"
#include "kernels/reduce.cuh"

#define EW_THREADS 256
#define EW_MAX_BLOCKS 65536
#define DB_THREADS 256
#define DB_ROWS 32        /* rows per block of the bias backward (at least) */
#define MAX_GRID_Y 65535

static unsigned blocks_for(size_t n)
{
    size_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return (unsigned)(b < EW_MAX_BLOCKS ? b : EW_MAX_BLOCKS);
}

static __global__ void __launch_bounds__(EW_THREADS)
    bias_forward_kernel(float *__restrict__ out, const float *__restrict__ b, size_t total, int o)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride)
        out[i] += b[i % (size_t)o];
}

/* grid: (ceil(O / DB_THREADS), row chunks of rows_per rows); part[y, j] (set) */
static __global__ void __launch_bounds__(DB_THREADS)
    bias_backward_kernel(float *__restrict__ part, const float *__restrict__ dout, int n, int o,
                         long long rows_per)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= o)
        return;
    const long long r0 = (long long)blockIdx.y * rows_per;
    const long long r1 = r0 + rows_per < n ? r0 + rows_per : n;
    float acc = 0; /* an empty last chunk writes 0 */
    for (long long r = r0; r < r1; r++)
        acc += dout[(size_t)r * o + j];
    part[(size_t)blockIdx.y * o + j] = acc;
}

/* y may equal x (then y doubles): each thread reads and writes only index i */
static __global__ void __launch_bounds__(EW_THREADS)
    add_kernel(float *y, const float *x, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] += x[i];
}

/* __float2bfloat16_rn: round to nearest even, NaN stays NaN */
static __global__ void __launch_bounds__(EW_THREADS)
    to_bf16_kernel(uint16_t *__restrict__ out, const float *__restrict__ in, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
}

cudaError_t k_bias_forward(cudaStream_t st, float *out, const float *b, int n, int o)
{
    if (n <= 0 || o <= 0)
        return cudaSuccess;
    const size_t total = (size_t)n * o;
    bias_forward_kernel<<<blocks_for(total), EW_THREADS, 0, st>>>(out, b, total, o);
    return cudaGetLastError();
}

cudaError_t k_bias_backward(cudaStream_t st, float *db, const float *dout, int n, int o)
{
    if (n <= 0 || o <= 0)
        return cudaSuccess;
    /* chunks of at least DB_ROWS rows, at most MAX_GRID_Y of them */
    long long gy = ((long long)n + DB_ROWS - 1) / DB_ROWS;
    if (gy > MAX_GRID_Y)
        gy = MAX_GRID_Y;
    const long long rows_per = ((long long)n + gy - 1) / gy;
    const unsigned gx = (unsigned)(((long long)o + DB_THREADS - 1) / DB_THREADS);
    float *part = NULL; /* [gy, O], stream-ordered */
    cudaError_t err = cudaMallocAsync((void **)&part, (size_t)gy * o * sizeof(float), st);
    if (err != cudaSuccess)
        return err;
    bias_backward_kernel<<<dim3(gx, (unsigned)gy), DB_THREADS, 0, st>>>(part, dout, n, o,
                                                                        rows_per);
    column_parts_sum_kernel<<<gx, DB_THREADS, 0, st>>>(db, part, (int)gy, o);
    err = cudaGetLastError();
    cudaError_t f = cudaFreeAsync(part, st);
    return err != cudaSuccess ? err : f;
}

cudaError_t k_add(cudaStream_t st, float *y, const float *x, size_t n)
{
    if (n == 0)
        return cudaSuccess;
    add_kernel<<<blocks_for(n), EW_THREADS, 0, st>>>(y, x, n);
    return cudaGetLastError();
}

cudaError_t k_to_bf16(cudaStream_t st, uint16_t *out, const float *in, size_t n)
{
    if (n == 0)
        return cudaSuccess;
    to_bf16_kernel<<<blocks_for(n), EW_THREADS, 0, st>>>(out, in, n);
    return cudaGetLastError();
}
