/* logprob_kernels.cu: per-row log-prob of the target token and entropy of
 * the distribution (as ../../transformer/layers/logprob.c), at a temperature given as
 * scale = 1/τ.
 *
 * For a row of logits z [V] (logits [N, V]), z' = s · z (s = scale[r], or 1),
 * target t, and m = max_j z'_j:
 *   S     = Σ_j e^{z'_j − m},  log Z = m + log S
 *   logp  = z'_t − log Z
 *   H     = log Z − Σ_j p_j z'_j = log S − Σ_j e^{z'_j − m} (z'_j − m) / S
 * (the last form keeps m out of the difference, so no cancellation).
 * Backward, with lp_j = z'_j − log Z, p_j = e^{lp_j}:
 *   dz_j = s (dlogp (1[j = t] − p_j) − dH p_j (lp_j + H))
 * Rows with t < 0 get logp = H = 0 and a zero gradient row.
 *
 * One block per row (V is large: 150k for Qwen); passes over the row: max,
 * then the sums (each thread accumulates in float, then a block reduction
 * with warp shuffles + shared memory), then (backward) the write. Indices
 * into logits are 64-bit: N·V passes 2^31.
 */
#include <math.h>

#include "kernels/kernels.h"
#include "kernels/reduce.cuh"

#define LP_THREADS 512 /* a multiple of 32, at most 1024 */

/* The first two passes over a row z' = s · z of both kernels: m = max_j z'_j
 * (over the block: every thread gets it), then this thread's share of
 * se = Σ e^{z'−m} and sed = Σ e^{z'−m} (z'−m), left for the caller to
 * reduce (the backward needs sed only for an entropy gradient). */
static __device__ __forceinline__ void row_partials(const float *z, float s, int v, float *sh,
                                                    float &m, float &se, float &sed)
{
    m = -INFINITY;
    for (int j = threadIdx.x; j < v; j += blockDim.x)
        m = fmaxf(m, s * z[j]);
    m = block_max(m, sh);
    se = 0, sed = 0; /* Σ e^{z'−m}, Σ e^{z'−m} (z'−m) */
    for (int j = threadIdx.x; j < v; j += blockDim.x) {
        const float d = s * z[j] - m, e = expf(d);
        se += e;
        sed += e * d;
    }
}

/* grid: N blocks, one per row */
static __global__ void __launch_bounds__(LP_THREADS)
    logprob_forward_kernel(float *__restrict__ logp, float *__restrict__ ent,
                           const float *__restrict__ logits, const float *__restrict__ scale,
                           const int32_t *__restrict__ target, int v)
{
    __shared__ float sh[32];
    const int r = blockIdx.x;
    const int t = target[r];
    if (t < 0) { /* the whole block leaves: t is the row's */
        if (threadIdx.x == 0) {
            logp[r] = 0;
            if (ent)
                ent[r] = 0;
        }
        return;
    }
    const float *z = logits + (size_t)r * v;
    const float s = scale ? scale[r] : 1.0f;
    float m, se, sed;
    row_partials(z, s, v, sh, m, se, sed);
    se = block_sum(se, sh);
    if (ent) /* uniform over the block */
        sed = block_sum(sed, sh);
    if (threadIdx.x == 0) {
        const float ls = logf(se); /* log Z − m */
        logp[r] = (s * z[t] - m) - ls;
        if (ent)
            ent[r] = ls - sed / se;
    }
}

/* grid: N blocks, one per row. dlogits may equal logits: the max and sums
 * read the whole row, and block_sum's closing barrier guarantees every
 * thread has finished those reads before any thread writes; in the write
 * pass each thread reads z[j] before it writes dz[j], and no other thread
 * touches j. Hence no __restrict__ on dlogits / logits. */
static __global__ void __launch_bounds__(LP_THREADS)
    logprob_backward_kernel(float *dlogits, const float *logits,
                            const float *__restrict__ scale, const int32_t *__restrict__ target,
                            const float *__restrict__ dlogp, const float *__restrict__ dent, int v)
{
    __shared__ float sh[32];
    const int r = blockIdx.x;
    const int t = target[r];
    float *dz = dlogits + (size_t)r * v;
    if (t < 0) {
        for (int j = threadIdx.x; j < v; j += blockDim.x)
            dz[j] = 0;
        return;
    }
    const float *z = logits + (size_t)r * v;
    const float s = scale ? scale[r] : 1.0f;
    const float dl = dlogp[r], de = dent ? dent[r] : 0.0f;
    float m, se, sed;
    row_partials(z, s, v, sh, m, se, sed);
    se = block_sum(se, sh); /* its closing barrier: all reads above are done */
    const float ls = logf(se);
    float H = 0;
    if (de != 0) /* uniform over the block */
        H = ls - block_sum(sed, sh) / se;
    for (int j = threadIdx.x; j < v; j += blockDim.x) {
        const float lp = (s * z[j] - m) - ls, p = expf(lp);
        float g = -dl * p;
        if (de != 0)
            g += de * (-p * (lp + H));
        float out = s * g;
        if (j == t)
            out += s * dl;
        dz[j] = out;
    }
}

cudaError_t k_logprob_forward(cudaStream_t st, float *logp, float *ent, const float *logits,
                              const float *scale, const int32_t *target, int n, int v)
{
    if (n <= 0 || v <= 0)
        return cudaSuccess;
    logprob_forward_kernel<<<n, LP_THREADS, 0, st>>>(logp, ent, logits, scale, target, v);
    return cudaGetLastError();
}

cudaError_t k_logprob_backward(cudaStream_t st, float *dlogits, const float *logits,
                               const float *scale, const int32_t *target, const float *dlogp,
                               const float *dent, int n, int v)
{
    if (n <= 0 || v <= 0)
        return cudaSuccess;
    logprob_backward_kernel<<<n, LP_THREADS, 0, st>>>(dlogits, logits, scale, target, dlogp, dent,
                                                      v);
    return cudaGetLastError();
}
