/*
 * cuda_linear.c: the linear layers' products in cuBLAS, which is
 * column-major: a row-major [R, C] matrix is a column-major [C, R] one, so
 * each row-major product below is written as the column-major product of
 * the transposes (shapes in comments are row-major, as everywhere in tern).
 *
 *   forward   out[N, O] = in[N, I] W[O, I]^T     cm: out = op_T(W) · in
 *   backward  din[N, I] = dout[N, O] W[O, I]      cm: din = W · dout
 *             dW[O, I] += dout^T in               cm: dW  = in · op_T(dout)
 *
 * bf16 mode: both operands are bf16 (weights from params16, refreshed after
 * each change; activations converted into op16a/op16b just before), the
 * sums and the output float32 (CUBLAS_COMPUTE_32F), as the CPU plugin's
 * compute = "bf16".
 */
#include <stdio.h>

#include "cuda_check.h"
#include "cuda_model.h"
#include "kernels/kernels.h"

const char *cuda_blas_status(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized (no usable GPU or driver?)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed (out of GPU memory)";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "the GPU lacks a feature (bf16 needs sm_80 or later)";
    case CUBLAS_STATUS_MAPPING_ERROR: return "mapping error";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "unknown status";
    }
}

/* The bf16 twin of a weight view: the same offset into params16. */
static const uint16_t *w16(const cuda_model *m, const float *w)
{
    return m->params16 + (w - m->params);
}

/* C[m, n] (cm, ldc) = beta C + op(A) op(B), with A and B float32 device
 * matrices, or in bf16 mode their bf16 versions: A16/B16 when given (the
 * weights), else converted into the scratch (a_elems, b_elems: their sizes). */
static int cu_gemm(cuda_model *m, cublasOperation_t ta, cublasOperation_t tb, int mm, int nn,
                   int kk, const float *a, const uint16_t *a16, size_t a_elems, int lda,
                   const float *b, const uint16_t *b16, size_t b_elems, int ldb, float beta,
                   float *c, int ldc, char *err, size_t errn)
{
    const float one = 1.0f;
    if (!m->bf16) {
        BLAS_TRY(cublasSgemm(m->blas, ta, tb, mm, nn, kk, &one, a, lda, b, ldb, &beta, c, ldc));
        return 0;
    }
    if (!a16) {
        if (a_elems > m->cap_op16) {
            snprintf(err, errn, "bf16 scratch too small (%zu < %zu halves)", m->cap_op16, a_elems);
            return -1;
        }
        CU_TRY(k_to_bf16(m->st, m->op16a, a, a_elems));
        a16 = m->op16a;
    }
    if (!b16) {
        if (b_elems > m->cap_op16) {
            snprintf(err, errn, "bf16 scratch too small (%zu < %zu halves)", m->cap_op16, b_elems);
            return -1;
        }
        CU_TRY(k_to_bf16(m->st, m->op16b, b, b_elems));
        b16 = m->op16b;
    }
    BLAS_TRY(cublasGemmEx(m->blas, ta, tb, mm, nn, kk, &one, a16, CUDA_R_16BF, lda, b16,
                          CUDA_R_16BF, ldb, &beta, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
    return 0;
}

int cuda_linear_forward(cuda_model *m, float *out, const float *in, const float *w,
                        const float *b, int n, int i, int o, float beta, char *err, size_t errn)
{
    const uint16_t *wb = m->bf16 ? w16(m, w) : NULL;
    /* cm: out[O, N] = W^T[O, I] · in[I, N] */
    if (cu_gemm(m, CUBLAS_OP_T, CUBLAS_OP_N, o, n, i, w, wb, 0, i, in, NULL, (size_t)n * i, i, beta,
             out, o, err, errn) != 0)
        return -1;
    if (b)
        CU_TRY(k_bias_forward(m->st, out, b, n, o));
    return 0;
}

int cuda_linear_backward(cuda_model *m, float *din, float beta_in, float *dw, float *db,
                         const float *dout, const float *in, const float *w, int n, int i, int o,
                         char *err, size_t errn)
{
    const uint16_t *wb = m->bf16 ? w16(m, w) : NULL;
    /* cm: din[I, N] = W[I, O] · dout[O, N] */
    if (din && cu_gemm(m, CUBLAS_OP_N, CUBLAS_OP_N, i, n, o, w, wb, 0, i, dout, NULL, (size_t)n * o,
                    o, beta_in, din, i, err, errn) != 0)
        return -1;
    /* cm: dW[I, O] += in[I, N] · dout^T[N, O] */
    if (cu_gemm(m, CUBLAS_OP_N, CUBLAS_OP_T, i, o, n, in, NULL, (size_t)n * i, i, dout, NULL,
             (size_t)n * o, o, 1.0f, dw, i, err, errn) != 0)
        return -1;
    if (db)
        CU_TRY(k_bias_backward(m->st, db, dout, n, o));
    return 0;
}

int cuda_refresh_bf16(cuda_model *m, char *err, size_t errn)
{
    if (!m->bf16)
        return 0;
    CU_TRY(k_to_bf16(m->st, m->params16, m->params, m->n_params));
    return 0;
}
