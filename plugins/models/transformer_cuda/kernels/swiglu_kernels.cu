/* swiglu_kernels.cu: the gated MLP activation (as ../../transformer/layers/swiglu.c).
 *
 *   act = silu(g) · u,   silu(g) = g σ(g),   σ(g) = 1 / (1 + e^−g)
 *   d act / d u = silu(g)
 *   d act / d g = u σ(g) (1 + g (1 − σ(g)))
 * gate, up, act, dact, dgate, dup: [n] (n = N·F). Elementwise, one thread
 * per element, grid-stride, 64-bit indices; expf as the CPU layer's plain
 * loop (e^−g = +inf for g < −88.7 gives σ = 0, as there).
 */
#include "kernels/kernels.h"

#define SWIGLU_THREADS 256
#define SWIGLU_MAX_BLOCKS 65536

static unsigned blocks_for(size_t n)
{
    size_t b = (n + SWIGLU_THREADS - 1) / SWIGLU_THREADS;
    return (unsigned)(b < SWIGLU_MAX_BLOCKS ? b : SWIGLU_MAX_BLOCKS);
}

static __global__ void __launch_bounds__(SWIGLU_THREADS)
    swiglu_forward_kernel(float *__restrict__ act, const float *__restrict__ gate,
                          const float *__restrict__ up, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float g = gate[i];
        act[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

static __global__ void __launch_bounds__(SWIGLU_THREADS)
    swiglu_backward_kernel(float *__restrict__ dgate, float *__restrict__ dup,
                           const float *__restrict__ dact, const float *__restrict__ gate,
                           const float *__restrict__ up, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float g = gate[i], sg = 1.0f / (1.0f + expf(-g)), da = dact[i];
        dup[i] = da * g * sg;
        dgate[i] = da * up[i] * sg * (1.0f + g * (1.0f - sg));
    }
}

cudaError_t k_swiglu_forward(cudaStream_t st, float *act, const float *gate, const float *up,
                             size_t n)
{
    if (n == 0)
        return cudaSuccess;
    swiglu_forward_kernel<<<blocks_for(n), SWIGLU_THREADS, 0, st>>>(act, gate, up, n);
    return cudaGetLastError();
}

cudaError_t k_swiglu_backward(cudaStream_t st, float *dgate, float *dup, const float *dact,
                              const float *gate, const float *up, size_t n)
{
    if (n == 0)
        return cudaSuccess;
    swiglu_backward_kernel<<<blocks_for(n), SWIGLU_THREADS, 0, st>>>(dgate, dup, dact, gate, up,
                                                                    n);
    return cudaGetLastError();
}
