/*
 * gemm_split.c: a layer's product split across the workers of its pool in
 * fixed blocks (see gemm.h, gemm_split): C's rows (or columns) are cut into
 * blocks of GEMM_SPLIT_BLOCK at the same places whatever the worker count,
 * each block is one gemm call, and worker w takes a contiguous run of
 * blocks. An element of C is then computed by a call of the same shape at
 * the same offset on 1 or N threads, and BLAS kernels, which pick their
 * paths (edge kernels, small-matrix kernels, unrolling) by shape, give the
 * same bits: a run's figures do not depend on model.threads.
 */
#include "layers/gemm.h"

void gemm_split(const gemm_ctx *gx, int wk, int nw, int by_rows, int ta, int tb, int m, int n,
                int k, float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                float *c, int ldc)
{
    const int total = by_rows ? m : n, size = by_rows ? GEMM_SPLIT_BLOCK : GEMM_SPLIT_COLUMNS;
    const int blocks = (total + size - 1) / size;
    int b0, b1;
    pool_share(blocks, wk, nw, &b0, &b1);
    gemm_ws *ws = gemm_ctx_ws(gx, wk);
    for (int blk = b0; blk < b1; blk++) {
        const int lo = blk * size;
        const int len = total - lo < size ? total - lo : size;
        if (by_rows) {
            /* rows [lo, lo + len) of C: rows of op(A) (A's columns when transposed) */
            const float *al = ta ? a + lo : a + (size_t)lo * lda;
            gemm(ws, ta, tb, len, n, k, alpha, al, lda, b, ldb, beta, c + (size_t)lo * ldc, ldc);
        } else {
            /* columns [lo, lo + len) of C: columns of op(B) (B's rows when transposed) */
            const float *bl = tb ? b + (size_t)lo * ldb : b + lo;
            gemm(ws, ta, tb, m, len, k, alpha, a, lda, bl, ldb, beta, c + lo, ldc);
        }
    }
}
