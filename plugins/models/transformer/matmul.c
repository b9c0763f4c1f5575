/* matmul.c: the Linear layers through BLAS (row-major sgemm).
 *
 *   forward:  out[N,O] = in[N,I] · W[O,I]^T
 *   backward: din[N,I] += dout[N,O] · W[O,I]
 *             dW[O,I]  += dout[N,O]^T · in[N,I]
 */
#include <cblas.h>

#include "layers.h"

void matmul_forward(float *out, const float *in, const float *w, int n, int i, int o,
                    int accumulate)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, o, i, 1.0f, in, i, w, i,
                accumulate ? 1.0f : 0.0f, out, o);
}

void matmul_backward(float *din, float *dw, const float *dout, const float *in, const float *w,
                     int n, int i, int o)
{
    if (din)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, i, o, 1.0f, dout, o, w, i,
                    1.0f, din, i);
    if (dw)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, o, i, n, 1.0f, dout, o, in, i,
                    1.0f, dw, i);
}
