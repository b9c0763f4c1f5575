/* matmul.c: the Linear layers as products over the instance's thread pool
 * (gemm_product: OpenBLAS's sgemm, or bf16):
 *
 *   forward:  out[N,O] = in[N,I] · W[O,I]^T     blocks of rows of out, or of
 *                                               columns when N is small (decode)
 *   backward: din[N,I] += dout[N,O] · W[O,I]    blocks of rows (or columns) of din
 *             dW[O,I]  += dout[N,O]^T · in[N,I] blocks of rows of dW: no two workers
 *                                               write the same element
 *
 * The blocks are gemm_split's (gemm.h): fixed, so the thread count changes
 * no bit of the results. In bf16, W is packed once per product for all the
 * row blocks (or taken packed from the generation's set), same bits.
 */

#include "layers/gemm.h"
#include "layers/layers.h"
#include "layers/pool.h"

void matmul_forward(const gemm_ctx *gx, float *out, const float *in, const float *w, int n, int i, int o,
                    int accumulate)
{
    gemm_product(gx, gemm_split_rows(n), 0, 1, n, o, i, in, i, w, i, accumulate ? 1.0f : 0.0f,
                 out, o);
}

void matmul_backward(const gemm_ctx *gx, float *din, float *dw, const float *dout, const float *in,
                     const float *w, int n, int i, int o)
{
    /* din[N, I] += dout[N, O] W[O, I] */
    if (din)
        gemm_product(gx, gemm_split_rows(n), 0, 0, n, i, o, dout, o, w, i, 1.0f, din, i);
    /* dW[O, I] += dout^T in: rows of dW */
    if (dw)
        gemm_product(gx, 1, 1, 0, o, i, n, dout, o, in, i, 1.0f, dw, i);
}
