/* embedding_kernels.cu: token embedding lookup and its gradient (as
 * ../../transformer/layers/embedding.c).
 *
 *   forward:  out[r, j] = E[tokens[r], j]          out [N, D], E [V, D]
 *   backward: dE[tokens[r], j] += dout[r, j]       dE  [V, D], dout [N, D]
 *
 * Forward: one thread per element of the [N, D] side, grid-stride over N·D
 * with 64-bit indices. Backward: two rows may carry the same token, and
 * adding them atomically would sum in the order the threads happen to run
 * (the last bits of dE, and so a run's figures, would change from run to
 * run). Instead the host sorts the rows by token (the batch's tokens are on
 * the host anyway), and one thread per (token, column) adds that token's
 * rows in row order: no atomics, the same bits every run.
 */
#include <stdlib.h>

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

/* grid: (segments, ceil(D / EMB_THREADS)). Segment s holds the rows
 * rows[seg[s] .. seg[s+1]) of token seg_tok[s], in row order. */
static __global__ void __launch_bounds__(EMB_THREADS)
    embedding_backward_kernel(float *__restrict__ de, const int32_t *__restrict__ rows,
                              const int32_t *__restrict__ seg, const int32_t *__restrict__ seg_tok,
                              const float *__restrict__ dout, int d)
{
    const int s = blockIdx.x, j = blockIdx.y * blockDim.x + threadIdx.x;
    if (j >= d)
        return;
    float acc = 0;
    for (int k = seg[s]; k < seg[s + 1]; k++)
        acc += dout[(size_t)rows[k] * d + j];
    de[(size_t)seg_tok[s] * d + j] += acc;
}

typedef struct tok_row {
    int32_t tok, row;
} tok_row;

static int by_token_then_row(const void *a, const void *b)
{
    const tok_row *x = (const tok_row *)a, *y = (const tok_row *)b;
    if (x->tok != y->tok)
        return x->tok < y->tok ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
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

cudaError_t k_embedding_backward(cudaStream_t st, float *de, const int32_t *host_tokens,
                                 const float *dout, int n, int d)
{
    if (n <= 0 || d <= 0)
        return cudaSuccess;
    /* rows sorted by token; one index block: rows[n], seg[segs + 1], seg_tok[segs] */
    tok_row *tr = (tok_row *)malloc((size_t)n * sizeof *tr);
    int32_t *idx = (int32_t *)malloc((3 * (size_t)n + 1) * sizeof *idx);
    if (!tr || !idx) {
        free(tr);
        free(idx);
        return cudaErrorMemoryAllocation;
    }
    for (int r = 0; r < n; r++)
        tr[r] = (tok_row){host_tokens[r], r};
    qsort(tr, (size_t)n, sizeof *tr, by_token_then_row);
    int32_t *rows = idx, *seg = idx + n;
    int segs = 0;
    for (int k = 0; k < n; k++) {
        rows[k] = tr[k].row;
        if (k == 0 || tr[k].tok != tr[k - 1].tok)
            seg[segs++] = k;
    }
    seg[segs] = n;
    int32_t *seg_tok = seg + segs + 1;
    for (int s = 0; s < segs; s++)
        seg_tok[s] = tr[seg[s]].tok;
    const size_t count = (size_t)n + 2 * (size_t)segs + 1;
    int32_t *dev = NULL; /* stream-ordered, freed once the kernel has run */
    cudaError_t err = cudaMallocAsync((void **)&dev, count * sizeof *dev, st);
    /* pageable source: the call returns once idx is staged, so it may be freed */
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(dev, idx, count * sizeof *dev, cudaMemcpyHostToDevice, st);
    free(tr);
    free(idx);
    if (err != cudaSuccess) {
        if (dev)
            cudaFreeAsync(dev, st);
        return err;
    }
    const dim3 grid((unsigned)segs, (unsigned)((d + EMB_THREADS - 1) / EMB_THREADS));
    embedding_backward_kernel<<<grid, EMB_THREADS, 0, st>>>(de, dev, dev + n, dev + n + segs + 1,
                                                            dout, d);
    err = cudaGetLastError();
    cudaError_t f = cudaFreeAsync(dev, st);
    return err != cudaSuccess ? err : f;
}
