/* conv1d.c: GPT-2's Conv1D layers (weights stored [in, out], as in the HF
 * files) through BLAS (row-major sgemm), split across the thread pool like
 * matmul.c:
 *
 *   forward:  out[N,O] = in[N,I] · W[I,O]         blocks of rows of out, or of
 *                                                 columns when N is small (decode)
 *   backward: din[N,I] += dout[N,O] · W[I,O]^T    blocks of rows (or columns) of din
 *             dW[I,O]  += in[N,I]^T · dout[N,O]   blocks of columns of dW: no two
 *                                                 workers write the same element
 * (gemm_split's fixed blocks: the thread count changes no bit; in bf16 W
 * is packed once per product, gemm_product, same bits)
 *
 * W's rows are `ld` floats apart, so q, k and v are read and their gradients
 * written as column blocks of c_attn [D, 3D] without copies.
 */

#include "layers/gemm.h"
#include "layers/layers.h"
#include "layers/pool.h"

void conv1d_forward(const gemm_ctx *gx, float *out, const float *in, const float *w, int ld, int n, int i,
                    int o, int accumulate)
{
    gemm_product(gx, gemm_split_rows(n), 0, 0, n, o, i, in, i, w, ld, accumulate ? 1.0f : 0.0f,
                 out, o);
}

void conv1d_backward(const gemm_ctx *gx, float *din, float *dw, const float *dout, const float *in,
                     const float *w, int ld, int n, int i, int o)
{
    /* din[N, I] += dout[N, O] W[I, O]^T (columns of din: rows of W) */
    if (din)
        gemm_product(gx, gemm_split_rows(n), 0, 1, n, i, o, dout, o, w, ld, 1.0f, din, i);
    /* dW[I, O] += in^T dout: columns of dW */
    if (dw)
        gemm_product(gx, 0, 1, 0, i, o, n, in, i, dout, o, 1.0f, dw, ld);
}
