/* conv1d.c: GPT-2's Conv1D layers (weights stored [in, out], as in the HF
 * files) through BLAS (row-major sgemm), split across the thread pool like
 * matmul.c:
 *
 *   forward:  out[N,O] = in[N,I] · W[I,O]         rows of out per worker, or
 *                                                 columns when N is small (decode)
 *   backward: din[N,I] += dout[N,O] · W[I,O]^T    rows (or columns) of din
 *             dW[I,O]  += in[N,I]^T · dout[N,O]   columns of dW: no two workers
 *                                                 write the same element
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

/* as matmul.c: row blocks only when each worker gets enough rows */
static int split_rows(int rows, int workers) { return rows >= 128 * workers; }

static void forward_part(void *arg, int wk, int nw)
{
    const c1_job *j = arg;
    int lo, hi;
    if (split_rows(j->n, nw)) {
        pool_share(j->n, wk, nw, &lo, &hi);
        if (hi > lo)
            gemm(gemm_ctx_ws(j->gx, wk), 0, 0, hi - lo, j->o, j->i, 1.0f,
                        j->in + (size_t)lo * j->i, j->i, j->w, j->ld, j->beta,
                        j->out + (size_t)lo * j->o, j->o);
    } else {
        pool_share(j->o, wk, nw, &lo, &hi);
        if (hi > lo)
            gemm(gemm_ctx_ws(j->gx, wk), 0, 0, j->n, hi - lo, j->i, 1.0f,
                        j->in, j->i, j->w + lo, j->ld, j->beta, j->out + lo, j->o);
    }
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
    int lo, hi;
    if (j->din) {
        if (split_rows(j->n, nw)) {
            pool_share(j->n, wk, nw, &lo, &hi);
            if (hi > lo)
                gemm(gemm_ctx_ws(j->gx, wk), 0, 1, hi - lo, j->i, j->o, 1.0f,
                            j->dout + (size_t)lo * j->o, j->o, j->w, j->ld, 1.0f,
                            j->din + (size_t)lo * j->i, j->i);
        } else {
            /* columns lo..hi of din come from rows lo..hi of W */
            pool_share(j->i, wk, nw, &lo, &hi);
            if (hi > lo)
                gemm(gemm_ctx_ws(j->gx, wk), 0, 1, j->n, hi - lo, j->o, 1.0f,
                            j->dout, j->o, j->w + (size_t)lo * j->ld, j->ld, 1.0f, j->din + lo,
                            j->i);
        }
    }
    if (j->dw) {
        pool_share(j->o, wk, nw, &lo, &hi);
        if (hi > lo)
            gemm(gemm_ctx_ws(j->gx, wk), 1, 0, j->i, hi - lo, j->n, 1.0f,
                        j->in, j->i, j->dout + lo, j->o, 1.0f, j->dw + lo, j->ld);
    }
}

void conv1d_backward(const gemm_ctx *gx, float *din, float *dw, const float *dout, const float *in,
                     const float *w, int ld, int n, int i, int o)
{
    c1_job j = {.gx = gx, .din = din, .dw = dw, .dout = dout, .in = in, .w = w, .n = n, .i = i, .o = o,
                .ld = ld};
    pool_run(gx->tp, backward_part, &j);
}
