/* embedding_kernels.cu: token embedding lookup and its gradient (as
 * ../../transformer/layers/embedding.c).
 *
 *   forward:  out[r, j] = E[tokens[r], j]          out [N, D], E [V, D]
 *   backward: dE[tokens[r], j] += dout[r, j]       dE  [V, D], dout [N, D]
 *
 * One thread per element of the [N, D] side, grid-stride over N·D with
 * 64-bit indices. The backward uses float atomicAdd because two rows may
 * carry the same token (so the summation order, and the last bits of dE,
 * depend on scheduling when a token repeats).
 */
#include "kernels/kernels.h"

#define EMB_THREADS 256
#define EMB_MAX_BLOCKS 65536 /* grid-stride covers the rest */

static unsigned blocks_for(size_t total)
{
    size_t b = (total + EMB_THREADS - 1) / EMB_THREADS;
    return (unsigned)(b < EMB_MAX_BLOCKS ? b : EMB_MAX_BLOCKS);
}

static __global__ void __launch_bounds__(EMB_THREADS)
    embedding_forward_kernel(float *__restrict__ out, const int32_t *__restrict__ tokens,
                             const float *__restrict__ e, size_t total, int d)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const size_t r = i / (size_t)d, j = i - r * (size_t)d;
        out[i] = e[(size_t)tokens[r] * d + j];
    }
}

static __global__ void __launch_bounds__(EMB_THREADS)
    embedding_backward_kernel(float *__restrict__ de, const int32_t *__restrict__ tokens,
                              const float *__restrict__ dout, size_t total, int d)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const size_t r = i / (size_t)d, j = i - r * (size_t)d;
        atomicAdd(&de[(size_t)tokens[r] * d + j], dout[i]);
    }
}

cudaError_t k_embedding_forward(cudaStream_t st, float *out, const int32_t *tokens,
                                const float *e, int n, int d)
{
    if (n <= 0 || d <= 0)
        return cudaSuccess;
    const size_t total = (size_t)n * d;
    embedding_forward_kernel<<<blocks_for(total), EMB_THREADS, 0, st>>>(out, tokens, e, total, d);
    return cudaGetLastError();
}

cudaError_t k_embedding_backward(cudaStream_t st, float *de, const int32_t *tokens,
                                 const float *dout, int n, int d)
{
    if (n <= 0 || d <= 0)
        return cudaSuccess;
    const size_t total = (size_t)n * d;
    embedding_backward_kernel<<<blocks_for(total), EMB_THREADS, 0, st>>>(de, tokens, dout, total,
                                                                         d);
    return cudaGetLastError();
}
