/*
 * gemm.c: C = alpha · op(A) op(B) + beta · C in float32 (OpenBLAS) or with
 * bf16 products and float32 sums (AVX512-BF16), see gemm.h.
 *
 * The bf16 product is the usual packed GEMM (Goto / BLIS), sized for one core:
 *
 *   for each block of NC columns of C:
 *     for each block of KC along K:
 *       pack B[KC, NC] into panels of NR columns      (bf16, L2-resident)
 *       for each block of MC rows of C:
 *         pack A[MC, KC] into panels of MR rows         (bf16)
 *         for each NR panel of B, each MR panel of A:
 *           C[MR, NR] (+)= A panel · B panel           (the micro-kernel)
 *
 * Packing is where float32 becomes bf16, and where op() is resolved, so the
 * kernel sees one layout whatever the transposes. A packed panel of X (A or
 * B) with XR rows (A: MR rows of C; B: NR columns of C) stores, for each pair
 * of k's p = 0, 1, ..., one 32-bit word per row x:
 *
 *   word(p, x) = bf16(X(x, 2p)) | bf16(X(x, 2p + 1)) << 16,   panel[p][x]
 *
 * zero beyond the matrix (odd K, partial panels): exactly the pair layout of
 * vdpbf16ps, which adds a.lo·b.lo + a.hi·b.hi into each float32 lane. The
 * kernel keeps C[MR = 12, NR = 32] in 24 zmm accumulators; per pair p it
 * loads the two B vectors and, per row, broadcasts A's word:
 *
 *   acc[i][0..1] += word(p, i) · B(p, 0..31)    (12 × 2 vdpbf16ps)
 */
#include "layers/gemm.h"
#include "layers/simd.h"

#include <cblas.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    MR = 12,   /* rows of C per micro-kernel */
    NR = 32,   /* columns of C per micro-kernel: two zmm of float32 */
    KC = 512,  /* k per packed block (256 pairs): a B panel is 32 KiB */
    MC = 192,  /* rows of A per packed block (multiple of MR): 192 KiB */
    NC = 1024, /* columns of B per packed block (multiple of NR): 1 MiB */
};

struct gemm_ws {
    uint32_t *a; /* [MC / MR][KC / 2][MR] words */
    uint32_t *b; /* [NC / NR][KC / 2][NR] words */
    /* worker 0's only: a whole op(B) packed for all the workers of a product
     * (gemm_product), grown as needed */
    uint32_t *shared;
    size_t shared_words;
};

int gemm_bf16_available(void) { return simd_level_in_force() >= SIMD_AVX512_BF16; }

gemm_ws *gemm_ws_new(void)
{
    gemm_ws *ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->a = aligned_alloc(64, (size_t)MC * KC / 2 * sizeof(uint32_t));
    ws->b = aligned_alloc(64, (size_t)NC * KC / 2 * sizeof(uint32_t));
    if (!ws->a || !ws->b) {
        gemm_ws_free(ws);
        return NULL;
    }
    return ws;
}

void gemm_ws_free(gemm_ws *ws)
{
    if (!ws)
        return;
    free(ws->a);
    free(ws->b);
    free(ws->shared);
    free(ws);
}

/* Transpose a 16 x 16 matrix of 32-bit words held as 16 rows v[0..15]. */
__attribute__((target("avx512f"))) static inline void transpose16(__m512i v[16])
{
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) { /* 2 x 2 blocks of words */
        t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* 4 x 4 blocks */
        v[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        v[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        v[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        v[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    /* each 128-bit lane of v[i] now holds a 4 x 4 block transposed: move
     * lane L of rows i, i+4, i+8, i+12 into output row 4L + i */
    for (int i = 0; i < 4; i++) {
        const __m512i a = _mm512_shuffle_i32x4(v[i], v[i + 4], 0x44);      /* lanes 0,1 | 0,1 */
        const __m512i b = _mm512_shuffle_i32x4(v[i], v[i + 4], 0xee);      /* lanes 2,3 | 2,3 */
        const __m512i c = _mm512_shuffle_i32x4(v[i + 8], v[i + 12], 0x44);
        const __m512i d = _mm512_shuffle_i32x4(v[i + 8], v[i + 12], 0xee);
        t[i] = _mm512_shuffle_i32x4(a, c, 0x88);      /* lane 0 of each */
        t[i + 4] = _mm512_shuffle_i32x4(a, c, 0xdd);  /* lane 1 */
        t[i + 8] = _mm512_shuffle_i32x4(b, d, 0x88);  /* lane 2 */
        t[i + 12] = _mm512_shuffle_i32x4(b, d, 0xdd); /* lane 3 */
    }
    for (int i = 0; i < 16; i++)
        v[i] = t[i];
}

/*
 * Pack the block X[x, k] for x in [0, nx), k in [0, nk) of a matrix whose
 * element (x, k) is at src[x * sx + k * sk] into panels of xr rows:
 * out[x / xr][p][x % xr], p in [0, ceil(nk / 2)), words as above, the last
 * panel padded with zero rows. Every op() of A or B is one of two layouts:
 * k contiguous (sk = 1: a row of A, or a row of B^T) or x contiguous (sx = 1).
 * vcvtne2ps2bf16 rounds to nearest even, as torch's .to(torch.bfloat16) does
 * (it also reads float32 subnormals as zero).
 */
__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void
pack(uint32_t *out, const float *src, size_t sx, size_t sk, int nx, int nk, int xr)
{
    const int np = (nk + 1) / 2, panels = (nx + xr - 1) / xr;
    for (int xp = 0; xp < panels; xp++) {
        uint32_t *panel = out + (size_t)xp * np * xr;
        const int x0 = xp * xr, rows = nx - x0 < xr ? nx - x0 : xr;
        if (rows < xr) /* zero rows at the end of the last panel */
            for (int p = 0; p < np; p++)
                memset(panel + (size_t)p * xr + rows, 0, (size_t)(xr - rows) * sizeof(uint32_t));
        if (sk == 1) {
            /* 32 k's of a row become 16 words (pairs) in order; 16 rows of
             * those, transposed, give 16 pairs of 16 rows each */
            for (int r0 = 0; r0 < rows; r0 += 16) {
                const int nr = rows - r0 < 16 ? rows - r0 : 16;
                const __mmask16 rmask = nr == 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
                for (int k = 0; k < nk; k += 32) {
                    const int left = nk - k;
                    const __mmask16 m0 = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
                    const __mmask16 m1 = left >= 32   ? 0xffff
                                         : left <= 16 ? 0
                                                      : (__mmask16)((1u << (left - 16)) - 1);
                    __m512i v[16];
                    for (int r = 0; r < 16; r++) {
                        if (r >= nr) {
                            v[r] = _mm512_setzero_si512();
                            continue;
                        }
                        const float *row = src + (size_t)(x0 + r0 + r) * sx + k;
                        v[r] = (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, row + 16),
                                                            _mm512_maskz_loadu_ps(m0, row));
                    }
                    transpose16(v);
                    const int n = (left + 1) / 2 < 16 ? (left + 1) / 2 : 16;
                    for (int q = 0; q < n; q++)
                        _mm512_mask_storeu_epi32(panel + (size_t)(k / 2 + q) * xr + r0, rmask, v[q]);
                }
            }
        } else {
            /* 16 rows at a time: the bf16 of k = 2p in the low half of each
             * word, of k = 2p + 1 in the high half */
            for (int p = 0; p < np; p++) {
                const float *k0 = src + (size_t)(2 * p) * sk + (size_t)x0;
                const int has_k1 = 2 * p + 1 < nk;
                uint32_t *w = panel + (size_t)p * xr;
                for (int r = 0; r < rows; r += 16) {
                    const int left = rows - r;
                    const __mmask16 m = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
                    const __m512 lo = _mm512_maskz_loadu_ps(m, k0 + r);
                    const __m512 hi = has_k1 ? _mm512_maskz_loadu_ps(m, k0 + sk + r)
                                             : _mm512_setzero_ps();
                    const __m512i lo16 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(lo));
                    const __m512i hi16 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(hi));
                    _mm512_mask_storeu_epi32(w + r, m,
                                             _mm512_or_si512(lo16, _mm512_slli_epi32(hi16, 16)));
                }
            }
        }
    }
}

/*
 * The micro-kernel: C[mr, nr] = alpha · Apanel[np pairs, MR] · Bpanel[np, NR]
 * + beta · C (beta 0: C is not read), for mr <= MR, nr <= NR.
 */
__attribute__((target("avx512f,avx512bf16"))) static void
kernel(int np, const uint32_t *a, const uint32_t *b, float *c, int ldc, int mr, int nr,
       float alpha, float beta)
{
    __m512 acc[MR][2];
    for (int i = 0; i < MR; i++)
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int p = 0; p < np; p++) {
        const __m512bh b0 = (__m512bh)_mm512_load_si512(b + (size_t)p * NR);
        const __m512bh b1 = (__m512bh)_mm512_load_si512(b + (size_t)p * NR + 16);
        const uint32_t *ap = a + (size_t)p * MR;
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)ap[i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    if (mr == MR && nr == NR) {
        for (int i = 0; i < MR; i++) {
            float *ci = c + (size_t)i * ldc;
            __m512 r0 = _mm512_mul_ps(va, acc[i][0]), r1 = _mm512_mul_ps(va, acc[i][1]);
            if (beta != 0.0f) {
                r0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci), r0);
                r1 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci + 16), r1);
            }
            _mm512_storeu_ps(ci, r0);
            _mm512_storeu_ps(ci + 16, r1);
        }
        return;
    }
    /* an edge tile: only the first nr columns of the first mr rows exist */
    const __mmask16 m0 = (__mmask16)(nr >= 16 ? 0xffff : (1u << nr) - 1);
    const __mmask16 m1 = (__mmask16)(nr <= 16 ? 0 : nr >= 32 ? 0xffff : (1u << (nr - 16)) - 1);
    for (int i = 0; i < mr; i++) {
        float *ci = c + (size_t)i * ldc;
        __m512 r0 = _mm512_mul_ps(va, acc[i][0]), r1 = _mm512_mul_ps(va, acc[i][1]);
        if (beta != 0.0f) {
            r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), r0);
            r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), r1);
        }
        _mm512_mask_storeu_ps(ci, m0, r0);
        _mm512_mask_storeu_ps(ci + 16, m1, r1);
    }
}

static void gemm_bf16(gemm_ws *ws, int ta, int tb, int m, int n, int k, float alpha,
                      const float *a, int lda, const float *b, int ldb, float beta, float *c,
                      int ldc)
{
    /* A(i, kk) = a[i * sai + kk * sak], B as panels over columns j: B(kk, j) = b[j * sbj + kk * sbk] */
    const size_t sai = ta ? 1 : (size_t)lda, sak = ta ? (size_t)lda : 1;
    const size_t sbj = tb ? (size_t)ldb : 1, sbk = tb ? 1 : (size_t)ldb;
    for (int jc = 0; jc < n; jc += NC) {
        const int nc = n - jc < NC ? n - jc : NC;
        for (int pc = 0; pc < k; pc += KC) {
            const int kc = k - pc < KC ? k - pc : KC, np = (kc + 1) / 2;
            const float bet = pc == 0 ? beta : 1.0f; /* later K blocks add on */
            pack(ws->b, b + (size_t)jc * sbj + (size_t)pc * sbk, sbj, sbk, nc, kc, NR);
            for (int ic = 0; ic < m; ic += MC) {
                const int mc = m - ic < MC ? m - ic : MC;
                pack(ws->a, a + (size_t)ic * sai + (size_t)pc * sak, sai, sak, mc, kc, MR);
                for (int jr = 0; jr < nc; jr += NR) {
                    const uint32_t *bp = ws->b + (size_t)(jr / NR) * np * NR;
                    for (int ir = 0; ir < mc; ir += MR)
                        kernel(np, ws->a + (size_t)(ir / MR) * np * MR, bp,
                               c + (size_t)(ic + ir) * ldc + jc + jr, ldc,
                               mc - ir < MR ? mc - ir : MR, nc - jr < NR ? nc - jr : NR, alpha,
                               bet);
                }
            }
        }
    }
}

void gemm(gemm_ws *ws, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
          const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (!ws) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (k <= 0) { /* nothing to sum: C = beta · C */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                c[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[(size_t)i * ldc + j];
        return;
    }
    gemm_bf16(ws, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* ---- weights packed once ------------------------------------------------- */

/* Column blocks of gemm_split are whole panels. */
_Static_assert(GEMM_SPLIT_COLUMNS % NR == 0, "split columns must be whole B panels");

/* For K block kb (k in [kb·KC, kb·KC + kc)): the panels of all n columns,
 * [ceil(n / NR)][ceil(kc / 2)][NR] words, at w + kb · (KC / 2) · panels · NR
 * (every block before the last is a whole KC). */
struct gemm_packed {
    int tb, k, n, panels;
    uint32_t *w;
};

static int panels_of(int n) { return (n + NR - 1) / NR; }

static size_t packed_words(int k, int n)
{
    return (size_t)((k + KC - 1) / KC) * (KC / 2) * (size_t)panels_of(n) * NR;
}

/* The panels of the K block that starts at k = pc. */
static uint32_t *kblock(const gemm_packed *p, int pc)
{
    return p->w + (size_t)(pc / KC) * (KC / 2) * p->panels * NR;
}

/* Panels [p0, p1) of op(B) into p (all its K blocks). */
static void pack_panels(const gemm_packed *p, int p0, int p1, const float *b, int ldb)
{
    const size_t sbj = p->tb ? (size_t)ldb : 1, sbk = p->tb ? 1 : (size_t)ldb;
    const int j0 = p0 * NR, j1 = p1 * NR < p->n ? p1 * NR : p->n;
    if (j0 >= j1)
        return;
    for (int pc = 0; pc < p->k; pc += KC) {
        const int kc = p->k - pc < KC ? p->k - pc : KC, np = (kc + 1) / 2;
        pack(kblock(p, pc) + (size_t)p0 * np * NR,
             b + (size_t)j0 * sbj + (size_t)pc * sbk, sbj, sbk, j1 - j0, kc, NR);
    }
}

gemm_packed *gemm_pack_b(int tb, int k, int n, const float *b, int ldb)
{
    if (k <= 0 || n <= 0 || !gemm_bf16_available())
        return NULL;
    gemm_packed *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    *p = (gemm_packed){.tb = tb, .k = k, .n = n, .panels = panels_of(n)};
    p->w = aligned_alloc(64, packed_words(k, n) * sizeof(uint32_t));
    if (!p->w) {
        free(p);
        return NULL;
    }
    pack_panels(p, 0, p->panels, b, ldb);
    return p;
}

void gemm_packed_free(gemm_packed *p)
{
    if (!p)
        return;
    free(p->w);
    free(p);
}

const gemm_packed *gemm_ctx_packed(const gemm_ctx *g, const float *w, int tb, int k, int n)
{
    if (!g->packs || !g->ws)
        return NULL;
    for (int i = 0; i < g->packs->n; i++) {
        const gemm_packed *p = g->packs->p[i];
        if (g->packs->w[i] == w && p->tb == tb && p->k == k && p->n == n)
            return p;
    }
    return NULL;
}

/* ---- a product's B packed once for all its workers ----------------------- */

typedef struct product_job {
    const gemm_ctx *gx;
    gemm_packed *shared; /* B packed by the workers together, or NULL */
    const gemm_packed *packed; /* what the products read: shared or a cached one */
    int by_rows, ta, tb, m, n, k, lda, ldb, ldc;
    const float *a, *b;
    float beta;
    float *c;
} product_job;

static void pack_part(void *arg, int wk, int nw)
{
    const product_job *j = arg;
    int p0, p1;
    pool_share(j->shared->panels, wk, nw, &p0, &p1);
    pack_panels(j->shared, p0, p1, j->b, j->ldb);
}

static void product_part(void *arg, int wk, int nw)
{
    const product_job *j = arg;
    if (j->packed)
        gemm_split_packed(j->gx, wk, nw, j->by_rows, j->ta, j->m, j->a, j->lda, j->packed,
                          j->beta, j->c, j->ldc);
    else
        gemm_split(j->gx, wk, nw, j->by_rows, j->ta, j->tb, j->m, j->n, j->k, 1.0f, j->a,
                   j->lda, j->b, j->ldb, j->beta, j->c, j->ldc);
}

void gemm_product(const gemm_ctx *gx, int by_rows, int ta, int tb, int m, int n, int k,
                  const float *a, int lda, const float *b, int ldb, float beta, float *c,
                  int ldc)
{
    product_job j = {.gx = gx, .by_rows = by_rows, .ta = ta, .tb = tb, .m = m, .n = n, .k = k,
                     .lda = lda, .ldb = ldb, .ldc = ldc, .a = a, .b = b, .beta = beta, .c = c};
    gemm_packed shared;
    j.packed = gemm_ctx_packed(gx, b, tb, k, n);
    const int blocks = by_rows ? (m + GEMM_SPLIT_BLOCK - 1) / GEMM_SPLIT_BLOCK
                               : (n + GEMM_SPLIT_COLUMNS - 1) / GEMM_SPLIT_COLUMNS;
    if (!j.packed && gx->ws && blocks > 1 && m > 0 && k > 0) {
        /* each block would pack B again (and, split by columns, A): pack B
         * once, the workers a share of its panels each, and let each worker
         * pack A once for its blocks */
        gemm_ws *ws0 = gx->ws[0];
        const size_t words = packed_words(k, n);
        if (ws0->shared_words < words) {
            uint32_t *w = aligned_alloc(64, words * sizeof(uint32_t));
            if (w) {
                free(ws0->shared);
                ws0->shared = w;
                ws0->shared_words = words;
            }
        }
        if (ws0->shared_words >= words) {
            shared = (gemm_packed){.tb = tb, .k = k, .n = n, .panels = panels_of(n),
                                   .w = ws0->shared};
            j.shared = &shared;
            pool_run(gx->tp, pack_part, &j);
            j.packed = &shared;
        } /* else (out of memory): each block packs B, as gemm_split does */
    }
    pool_run(gx->tp, product_part, &j);
}

/* C[m, j0..j1) = op(A)[m, k] · op(B)[k, j0..j1) + beta · C, j0 a multiple of
 * NR: gemm_bf16's loops without packing B. Each element of C gets the same
 * sums in the same order as there (the K blocks, then the pairs of a panel),
 * so the same bits. */
static void gemm_bf16_packed(gemm_ws *ws, int ta, int m, int j0, int j1, const float *a, int lda,
                             const gemm_packed *b, float beta, float *c, int ldc)
{
    const int k = b->k;
    const size_t sai = ta ? 1 : (size_t)lda, sak = ta ? (size_t)lda : 1;
    for (int pc = 0; pc < k; pc += KC) {
        const int kc = k - pc < KC ? k - pc : KC, np = (kc + 1) / 2;
        const float bet = pc == 0 ? beta : 1.0f;
        const uint32_t *bk = kblock(b, pc);
        for (int ic = 0; ic < m; ic += MC) {
            const int mc = m - ic < MC ? m - ic : MC;
            pack(ws->a, a + (size_t)ic * sai + (size_t)pc * sak, sai, sak, mc, kc, MR);
            for (int jr = j0; jr < j1; jr += NR) {
                const uint32_t *bp = bk + (size_t)(jr / NR) * np * NR;
                for (int ir = 0; ir < mc; ir += MR)
                    kernel(np, ws->a + (size_t)(ir / MR) * np * MR, bp,
                           c + (size_t)(ic + ir) * ldc + jr, ldc, mc - ir < MR ? mc - ir : MR,
                           j1 - jr < NR ? j1 - jr : NR, 1.0f, bet);
            }
        }
    }
}

void gemm_split_packed(const gemm_ctx *gx, int wk, int nw, int by_rows, int ta, int m,
                       const float *a, int lda, const gemm_packed *b, float beta, float *c,
                       int ldc)
{
    const int total = by_rows ? m : b->n, size = by_rows ? GEMM_SPLIT_BLOCK : GEMM_SPLIT_COLUMNS;
    int b0, b1;
    pool_share((total + size - 1) / size, wk, nw, &b0, &b1);
    const int lo = b0 * size, hi = b1 * size < total ? b1 * size : total;
    if (lo >= hi || m <= 0)
        return;
    gemm_ws *ws = gemm_ctx_ws(gx, wk);
    if (by_rows) /* a run of whole row blocks: one call (the bits do not depend on it) */
        gemm_bf16_packed(ws, ta, hi - lo, 0, b->n, ta ? a + lo : a + (size_t)lo * lda, lda, b,
                         beta, c + (size_t)lo * ldc, ldc);
    else
        gemm_bf16_packed(ws, ta, m, lo, hi, a, lda, b, beta, c, ldc);
}
