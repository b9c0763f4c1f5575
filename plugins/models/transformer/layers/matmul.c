/* matmul.c: the Linear layers through BLAS (row-major sgemm), split across
 * the instance's thread pool:
 *
 *   forward:  out[N,O] = in[N,I] · W[O,I]^T     rows of out per worker, or
 *                                               columns when N is small (decode)
 *   backward: din[N,I] += dout[N,O] · W[O,I]    rows (or columns) of din
 *             dW[O,I]  += dout[N,O]^T · in[N,I] rows of dW: no two workers
 *                                               write the same element
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

/* Split by rows when each worker gets enough rows for an efficient GEMM
 * (measured: thin row blocks slow decode down), else by columns. */
static int split_rows(int rows, int workers) { return rows >= 128 * workers; }

static void forward_part(void *arg, int wk, int nw)
{
    const mm_job *j = arg;
    int lo, hi;
    if (split_rows(j->n, nw)) {
        pool_share(j->n, wk, nw, &lo, &hi);
        if (hi > lo)
            gemm(gemm_ctx_ws(j->gx, wk), 0, 1, hi - lo, j->o, j->i, 1.0f,
                        j->in + (size_t)lo * j->i, j->i, j->w, j->i, j->beta,
                        j->out + (size_t)lo * j->o, j->o);
    } else {
        pool_share(j->o, wk, nw, &lo, &hi);
        if (hi > lo)
            gemm(gemm_ctx_ws(j->gx, wk), 0, 1, j->n, hi - lo, j->i, 1.0f, j->in,
                        j->i, j->w + (size_t)lo * j->i, j->i, j->beta, j->out + lo, j->o);
    }
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
    int lo, hi;
    if (j->din) {
        if (split_rows(j->n, nw)) {
            pool_share(j->n, wk, nw, &lo, &hi);
            if (hi > lo)
                gemm(gemm_ctx_ws(j->gx, wk), 0, 0, hi - lo, j->i, j->o, 1.0f,
                            j->dout + (size_t)lo * j->o, j->o, j->w, j->i, 1.0f,
                            j->din + (size_t)lo * j->i, j->i);
        } else {
            pool_share(j->i, wk, nw, &lo, &hi);
            if (hi > lo)
                gemm(gemm_ctx_ws(j->gx, wk), 0, 0, j->n, hi - lo, j->o, 1.0f,
                            j->dout, j->o, j->w + lo, j->i, 1.0f, j->din + lo, j->i);
        }
    }
    if (j->dw) {
        pool_share(j->o, wk, nw, &lo, &hi);
        if (hi > lo)
            gemm(gemm_ctx_ws(j->gx, wk), 1, 0, hi - lo, j->i, j->n, 1.0f,
                        j->dout + lo, j->o, j->in, j->i, 1.0f, j->dw + (size_t)lo * j->i, j->i);
    }
}

void matmul_backward(const gemm_ctx *gx, float *din, float *dw, const float *dout, const float *in,
                     const float *w, int n, int i, int o)
{
    mm_job j = {.gx = gx, .din = din, .dw = dw, .dout = dout, .in = in, .w = w, .n = n, .i = i, .o = o};
    pool_run(gx->tp, backward_part, &j);
}
