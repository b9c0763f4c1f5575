/* adamw_kernels.cu: the optimizer step on the flat parameter array (as
 * ../../transformer/decoder/adamw.c), in two kernels:
 *
 *   sumsq: *acc += Σ_i g_i²  (double; the caller takes ‖g‖ = sqrt and the
 *          clipping factor k = min(1, clip / ‖g‖) from it)
 *   adamw, elementwise on [n]:
 *     g ← g·k
 *     m ← β1 m + (1 − β1) g,   v ← β2 v + (1 − β2) g²
 *     p ← p·decay − lr (m / bc1) / (sqrt(v / bc2) + eps)
 *   with decay = 1 − lr·wd for matrices (1 otherwise), bc = 1 − β^t, both
 *   precomputed by the caller.
 *
 * sumsq: grid-stride, each thread sums in double, a block reduction (warp
 * shuffles + shared memory) into one partial per block; then one block sums
 * the partials in a fixed order. No atomics: the norm, and so the clipping,
 * are the same bits on every run.
 */
#include "kernels/kernels.h"
#include "kernels/reduce.cuh"

#define SS_THREADS 256   /* a multiple of 32 */
#define SS_MAX_BLOCKS 1024
#define AW_THREADS 256
#define AW_MAX_BLOCKS 65536

static __global__ void __launch_bounds__(SS_THREADS)
    sumsq_kernel(double *__restrict__ part, const float *__restrict__ g, size_t n)
{
    __shared__ double sh[32];
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    double s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        s += (double)g[i] * g[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

/* One block: *acc += Σ part[0 .. parts) (each thread a strided run, then the
 * block's tree: the same order every time). */
static __global__ void __launch_bounds__(SS_THREADS)
    sum_parts_kernel(double *__restrict__ acc, const double *__restrict__ part, int parts)
{
    __shared__ double sh[32];
    double s = 0;
    for (int i = threadIdx.x; i < parts; i += blockDim.x)
        s += part[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0)
        *acc += s;
}

static __global__ void __launch_bounds__(AW_THREADS)
    adamw_kernel(float *__restrict__ p, float *__restrict__ g, float *__restrict__ m,
                 float *__restrict__ v, size_t n, float k, float b1, float b2, float eps, float lr,
                 float decay, float bc1, float bc2)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float gi = g[i] * k;
        g[i] = gi;
        const float mi = b1 * m[i] + (1 - b1) * gi;
        const float vi = b2 * v[i] + (1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * decay - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    }
}

cudaError_t k_sumsq(cudaStream_t st, double *acc, const float *g, size_t n)
{
    if (n == 0)
        return cudaSuccess;
    size_t blocks = (n + SS_THREADS - 1) / SS_THREADS;
    if (blocks > SS_MAX_BLOCKS)
        blocks = SS_MAX_BLOCKS;
    double *part = NULL; /* [blocks], stream-ordered */
    cudaError_t err = cudaMallocAsync((void **)&part, blocks * sizeof(double), st);
    if (err != cudaSuccess)
        return err;
    sumsq_kernel<<<(unsigned)blocks, SS_THREADS, 0, st>>>(part, g, n);
    sum_parts_kernel<<<1, SS_THREADS, 0, st>>>(acc, part, (int)blocks);
    err = cudaGetLastError();
    cudaError_t f = cudaFreeAsync(part, st);
    return err != cudaSuccess ? err : f;
}

cudaError_t k_adamw(cudaStream_t st, float *p, float *g, float *m, float *v, size_t n, float k,
                    float b1, float b2, float eps, float lr, float decay, float bc1, float bc2)
{
    if (n == 0)
        return cudaSuccess;
    size_t blocks = (n + AW_THREADS - 1) / AW_THREADS;
    if (blocks > AW_MAX_BLOCKS)
        blocks = AW_MAX_BLOCKS;
    adamw_kernel<<<(unsigned)blocks, AW_THREADS, 0, st>>>(p, g, m, v, n, k, b1, b2, eps, lr, decay,
                                                         bc1, bc2);
    return cudaGetLastError();
}
