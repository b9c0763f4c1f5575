/*
 * gemm.h: the matrix products of the layers, in one of two precisions.
 *
 *   C[M, N] = alpha · op(A)[M, K] · op(B)[K, N] + beta · C        (row-major)
 *
 * op(X) is X, or X^T when its flag is set; lda, ldb, ldc are the row strides
 * in floats, as in cblas_sgemm. All matrices are float32 in memory.
 *
 * - float32: OpenBLAS's sgemm (gemm called with ws NULL).
 * - bf16: each operand is rounded to bfloat16 (round to nearest even) while it
 *   is packed, the products are summed in float32 (AVX512-BF16's vdpbf16ps),
 *   and C stays float32 (gemm_bf16.c). Twice the multiply throughput of
 *   float32 on CPUs with AVX512-BF16 (measured 2.1x on this machine's AMD
 *   EPYC: 210 against 100 GFLOP/s on one core); the price is bf16's 8-bit
 *   mantissa in the operands, about 3 significant digits.
 */
#ifndef TERN_GEMM_H
#define TERN_GEMM_H

#include <stddef.h>

#include "layers/pool.h"

/* Packing buffers of one thread for bf16 products (1.2 MiB; block sizes measured on this machine). */
typedef struct gemm_ws gemm_ws;

/* Whether this CPU (and OS) can run the bf16 products: AVX512-BF16. */
int gemm_bf16_available(void);
/* A workspace; NULL when out of memory. */
gemm_ws *gemm_ws_new(void);
void gemm_ws_free(gemm_ws *ws);

/* The product above on the calling thread. ws NULL: float32; otherwise bf16
 * with ws as scratch (one workspace per concurrent caller; needs
 * gemm_bf16_available()). beta 0 never reads C. */
void gemm(gemm_ws *ws, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
          const float *b, int ldb, float beta, float *c, int ldc);

/* How an instance runs its products: its thread team, and for bf16 one
 * workspace per worker of that team (ws NULL: float32). */
typedef struct gemm_ctx {
    pool *tp;
    gemm_ws **ws; /* [pool_size(tp)] or NULL */
} gemm_ctx;

/* The workspace of worker w (NULL for float32). */
static inline gemm_ws *gemm_ctx_ws(const gemm_ctx *g, int w) { return g->ws ? g->ws[w] : NULL; }

/* Rows, and columns, of C per block of gemm_split. */
#define GEMM_SPLIT_BLOCK 128
#define GEMM_SPLIT_COLUMNS 32

/* Worker wk of nw's part of the product above: C's rows (by_rows) or columns
 * in fixed blocks of GEMM_SPLIT_BLOCK, this worker a contiguous run of them,
 * one gemm call a block (gemm_split.c). Every element is computed by a call
 * of the same shape whatever nw, so C is the same bits on any thread count. */
void gemm_split(const gemm_ctx *gx, int wk, int nw, int by_rows, int ta, int tb, int m, int n,
                int k, float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                float *c, int ldc);

/* Whether a product over `rows` rows of C splits by rows (else by columns):
 * by the rows alone, never by the worker count, which must not change the
 * blocks (thin row blocks slow decoding: few rows split by columns). */
static inline int gemm_split_rows(int rows) { return rows >= 2 * GEMM_SPLIT_BLOCK; }

#endif
