/* matmul.c: the Linear layers through BLAS (row-major sgemm), split across
 * the instance's thread pool:
 *
 *   forward:  out[N,O] = in[N,I] · W[O,I]^T     blocks of rows of out, or of
 *                                               columns when N is small (decode)
 *   backward: din[N,I] += dout[N,O] · W[O,I]    blocks of rows (or columns) of din
 *             dW[O,I]  += dout[N,O]^T · in[N,I] blocks of rows of dW: no two workers
 *                                               write the same element
 *
 * The blocks are gemm_split's (gemm.h): fixed, so the thread count changes
 * no bit of the results.
 */

#include "layers/gemm.h"
#include "layers/layers.h"
#include "layers/pool.h"

typedef struct mm_job {
    const gemm_ctx *gx;
    float *out, *din, *dw;
    const float *in, *w, *dout;
    int n, i, o;
    float beta; /* forward: 0 to set out, 1 to accumulate */
} mm_job;

/* Row or column blocks by gemm_split: the same bits on any thread count. */
static void forward_part(void *arg, int wk, int nw)
{
    const mm_job *j = arg;
    gemm_split(j->gx, wk, nw, gemm_split_rows(j->n), 0, 1, j->n, j->o, j->i, 1.0f, j->in, j->i,
               j->w, j->i, j->beta, j->out, j->o);
}

void matmul_forward(const gemm_ctx *gx, float *out, const float *in, const float *w, int n, int i, int o,
                    int accumulate)
{
    mm_job j = {.gx = gx, .out = out, .in = in, .w = w, .n = n, .i = i, .o = o,
                .beta = accumulate ? 1.0f : 0.0f};
    pool_run(gx->tp, forward_part, &j);
}

static void backward_part(void *arg, int wk, int nw)
{
    const mm_job *j = arg;
    /* din[N, I] += dout[N, O] W[O, I] */
    if (j->din)
        gemm_split(j->gx, wk, nw, gemm_split_rows(j->n), 0, 0, j->n, j->i, j->o, 1.0f, j->dout,
                   j->o, j->w, j->i, 1.0f, j->din, j->i);
    /* dW[O, I] += dout^T in: rows of dW */
    if (j->dw)
        gemm_split(j->gx, wk, nw, 1, 1, 0, j->o, j->i, j->n, 1.0f, j->dout, j->o, j->in, j->i,
                   1.0f, j->dw, j->i);
}

void matmul_backward(const gemm_ctx *gx, float *din, float *dw, const float *dout, const float *in,
                     const float *w, int n, int i, int o)
{
    mm_job j = {.gx = gx, .din = din, .dw = dw, .dout = dout, .in = in, .w = w, .n = n, .i = i, .o = o};
    pool_run(gx->tp, backward_part, &j);
}
