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

/* Packing buffers of one thread for bf16 products (1.2 MiB; block sizes
 * measured on this machine), and worker 0's buffer for gemm_product. */
typedef struct gemm_ws gemm_ws;

/* Whether the bf16 products run here: this CPU (and OS) has AVX512-BF16 and
 * TERN_SIMD does not turn it off (simd.h). */
int gemm_bf16_available(void);
/* A workspace; NULL when out of memory. */
gemm_ws *gemm_ws_new(void);
void gemm_ws_free(gemm_ws *ws);

/* The product above on the calling thread. ws NULL: float32; otherwise bf16
 * with ws as scratch (one workspace per concurrent caller; needs
 * gemm_bf16_available()). beta 0 never reads C. */
void gemm(gemm_ws *ws, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
          const float *b, int ldb, float beta, float *c, int ldc);

/* A weight matrix packed once for bf16 products, as the B operand of
 * C = A · op(B): the bf16 panels that gemm builds from B at every call, for
 * the whole matrix. A decode step multiplies a few rows by every weight, and
 * packing the weights then costs as much as the products; a generate call,
 * which sees one weight version, packs them once (generate.c). */
typedef struct gemm_packed gemm_packed;

/* Pack op(B)[k, n] (tb: B is [n, k], ldb apart; else [k, n]) for bf16
 * products. NULL when out of memory. The packed copy does not follow later
 * changes of B: free it and pack again. */
gemm_packed *gemm_pack_b(int tb, int k, int n, const float *b, int ldb);
void gemm_packed_free(gemm_packed *p);

/* The weights packed for a stretch of work: entry i is weight w[i] (the
 * pointer the layers pass) packed as p[i]. */
typedef struct gemm_pack_set {
    int n;
    const float **w;
    gemm_packed **p;
} gemm_pack_set;

/* How an instance runs its products: its thread team, and for bf16 one
 * workspace per worker of that team (ws NULL: float32), and the weights
 * packed for the work in progress (NULL: none; set only with ws). */
typedef struct gemm_ctx {
    pool *tp;
    gemm_ws **ws; /* [pool_size(tp)] or NULL */
    const gemm_pack_set *packs;
} gemm_ctx;

/* The packed copy of weight w in g's set, packed as op(B)[k, n] with that
 * tb, or NULL. */
const gemm_packed *gemm_ctx_packed(const gemm_ctx *g, const float *w, int tb, int k, int n);

/* C[m, n] = op(A)[m, k] · op(B)[k, n] + beta · C on gx's whole team (call it
 * outside pool_run), split by rows or columns in gemm_split's blocks, so the
 * same bits: B from gx's packed set when it is there; in bf16 with several
 * blocks, op(B) packed once by the workers together (into worker 0's
 * workspace) instead of once per block; otherwise gemm_split as it is. */
void gemm_product(const gemm_ctx *gx, int by_rows, int ta, int tb, int m, int n, int k,
                  const float *a, int lda, const float *b, int ldb, float beta, float *c,
                  int ldc);

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

/* gemm_split's product C[m, n] = op(A)[m, k] · op(B) + beta · C with op(B)
 * packed (gemm_pack_b, n and k its own): the same blocks and the same bits
 * as gemm_split over the unpacked B, without packing B (and packing A once
 * for all of this worker's column blocks). */
void gemm_split_packed(const gemm_ctx *gx, int wk, int nw, int by_rows, int ta, int m,
                       const float *a, int lda, const gemm_packed *b, float beta, float *c,
                       int ldc);

/* Whether a product over `rows` rows of C splits by rows (else by columns):
 * by the rows alone, never by the worker count, which must not change the
 * blocks (thin row blocks slow decoding: few rows split by columns). */
static inline int gemm_split_rows(int rows) { return rows >= 2 * GEMM_SPLIT_BLOCK; }

#endif
