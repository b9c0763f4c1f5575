/* conv1d.c: GPT-2's Conv1D layers (weights stored [in, out], as in the HF
 * files) through BLAS (row-major sgemm), split across the thread pool like
 * matmul.c:
 *
 *   forward:  out[N,O] = in[N,I] · W[I,O]         blocks of rows of out, or of
 *                                                 columns when N is small (decode)
 *   backward: din[N,I] += dout[N,O] · W[I,O]^T    blocks of rows (or columns) of din
 *             dW[I,O]  += in[N,I]^T · dout[N,O]   blocks of columns of dW: no two
 *                                                 workers write the same element
 * (gemm_split's fixed blocks: the thread count changes no bit)
 *
 * W's rows are `ld` floats apart, so q, k and v are read and their gradients
 * written as column blocks of c_attn [D, 3D] without copies.
 */

#include "layers/gemm.h"
#include "layers/layers.h"
#include "layers/pool.h"

typedef struct c1_job {
    const gemm_ctx *gx;
    float *out, *din, *dw;
    const float *in, *w, *dout;
    int n, i, o, ld;
    float beta; /* forward: 0 to set out, 1 to accumulate */
} c1_job;

/* as matmul.c: gemm_split's fixed blocks */
static void forward_part(void *arg, int wk, int nw)
{
    const c1_job *j = arg;
    gemm_split(j->gx, wk, nw, gemm_split_rows(j->n), 0, 0, j->n, j->o, j->i, 1.0f, j->in, j->i,
               j->w, j->ld, j->beta, j->out, j->o);
}

void conv1d_forward(const gemm_ctx *gx, float *out, const float *in, const float *w, int ld, int n, int i,
                    int o, int accumulate)
{
    c1_job j = {.gx = gx, .out = out, .in = in, .w = w, .n = n, .i = i, .o = o, .ld = ld,
                .beta = accumulate ? 1.0f : 0.0f};
    pool_run(gx->tp, forward_part, &j);
}

static void backward_part(void *arg, int wk, int nw)
{
    const c1_job *j = arg;
    /* din[N, I] += dout[N, O] W[I, O]^T (columns of din: rows of W) */
    if (j->din)
        gemm_split(j->gx, wk, nw, gemm_split_rows(j->n), 0, 1, j->n, j->i, j->o, 1.0f, j->dout,
                   j->o, j->w, j->ld, 1.0f, j->din, j->i);
    /* dW[I, O] += in^T dout: columns of dW */
    if (j->dw)
        gemm_split(j->gx, wk, nw, 0, 1, 0, j->i, j->o, j->n, 1.0f, j->in, j->i, j->dout, j->o,
                   1.0f, j->dw, j->ld);
}

void conv1d_backward(const gemm_ctx *gx, float *din, float *dw, const float *dout, const float *in,
                     const float *w, int ld, int n, int i, int o)
{
    c1_job j = {.gx = gx, .din = din, .dw = dw, .dout = dout, .in = in, .w = w, .n = n, .i = i, .o = o,
                .ld = ld};
    pool_run(gx->tp, backward_part, &j);
}
