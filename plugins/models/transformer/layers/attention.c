/* attention.c: causal self-attention with grouped KV heads, per packed
 * sequence and head, the products through BLAS.
 *
 * For a sequence of T rows, query head h and its kv head j = h / (H/KV):
 *   S = Q_h K_j^T / sqrt(HD)            [T, T]
 *   P = softmax(S + causal mask) by row [T, T]   (saved)
 *   O_h = P V_j                         [T, HD]
 * Backward:
 *   dP = dO_h V_j^T,  dV_j += P^T dO_h
 *   dS = P ⊙ (dP − rowsum(P ⊙ dP))     (softmax backward; masked entries stay 0)
 *   dQ_h = dS K_j / sqrt(HD),  dK_j += dS^T Q_h / sqrt(HD)
 * Q_h is a column block of q[N, H·HD], so the GEMMs read it with leading
 * dimension H·HD and no copy (K, V likewise with KV·HD). The work items are
 * (sequence, kv head) pairs, spread over the thread pool: the query heads of
 * one kv head, which all write its dK and dV, stay on one worker.
 *
 * Branches (attn_shape.shared, .seg0): the scores a row may not see (other
 * branches' rows) are set to −inf before the softmax, so their
 * probabilities are 0; the backward needs nothing more, as dS = P ⊙ (...)
 * is 0 wherever P is.
 */
#include <cblas.h>
#include <math.h>

#include "layers/fastexp.h"
#include "layers/layers.h"

size_t attention_probs_size(const attn_shape *a)
{
    size_t total = 0;
    for (int s = 0; s < a->n_seqs; s++) {
        size_t t = (size_t)(a->seq_start[s + 1] - a->seq_start[s]);
        total += (size_t)a->n_heads * t * t;
    }
    return total;
}

/* Offset in the probabilities of sequence s, head h. */
static size_t probs_offset(const attn_shape *a, int s, int h)
{
    size_t off = 0;
    for (int x = 0; x < s; x++) {
        size_t t = (size_t)(a->seq_start[x + 1] - a->seq_start[x]);
        off += (size_t)a->n_heads * t * t;
    }
    size_t t = (size_t)(a->seq_start[s + 1] - a->seq_start[s]);
    return off + (size_t)h * t * t;
}

/* Row-wise softmax of the lower triangle of p[T, T]; entries above the
 * diagonal become 0. Per row i, with m = max_{j<=i} p_ij:
 *   p_ij = e^(p_ij − m) / sum_{j'<=i} e^(p_ij' − m)   (j <= i),  0 (j > i) */
static void causal_softmax_c(float *p, int t)
{
    for (int i = 0; i < t; i++) {
        float *row = p + (size_t)i * t;
        float m = row[0];
        for (int j = 1; j <= i; j++)
            m = row[j] > m ? row[j] : m;
        float sum = 0;
        for (int j = 0; j <= i; j++) {
            row[j] = expf(row[j] - m);
            sum += row[j];
        }
        float inv = 1.0f / sum;
        for (int j = 0; j <= i; j++)
            row[j] *= inv;
        for (int j = i + 1; j < t; j++)
            row[j] = 0;
    }
}

/* The softmax backward on the lower triangle, in place: with P's row p and
 * the row d of dP,  d_j = p_j (d_j − sum_{j'<=i} p_j' d_j')  (j <= i),  0 (j > i). */
static void causal_softmax_backward_c(const float *p, float *ds, int t)
{
    for (int i = 0; i < t; i++) {
        const float *pr = p + (size_t)i * t;
        float *dr = ds + (size_t)i * t;
        float dot = 0;
        for (int c = 0; c <= i; c++)
            dot += pr[c] * dr[c];
        for (int c = 0; c <= i; c++)
            dr[c] = pr[c] * (dr[c] - dot);
        for (int c = i + 1; c < t; c++)
            dr[c] = 0;
    }
}

#ifdef TERN_SIMD_AVX2
/* The same 8 columns at a time, the exp from fastexp.h; the last partial
 * vector of a row (i + 1 columns) masked. */
TARGET_AVX2 static void causal_softmax_avx2(float *p, int t)
{
    for (int i = 0; i < t; i++) {
        float *row = p + (size_t)i * t;
        const int n = i + 1, full = n & ~7, rest = n - full;
        const __m256i k = mask8(rest);
        const __m256 ninf = _mm256_set1_ps(-INFINITY);
        __m256 mv = ninf;
        for (int j = 0; j < full; j += 8)
            mv = _mm256_max_ps(mv, _mm256_loadu_ps(row + j));
        if (rest) /* −inf in the lanes past the row */
            mv = _mm256_max_ps(mv, _mm256_blendv_ps(ninf, _mm256_maskload_ps(row + full, k),
                                                    _mm256_castsi256_ps(k)));
        const __m256 m = _mm256_set1_ps(hmax8(mv));
        __m256 sv = _mm256_setzero_ps();
        for (int j = 0; j < full; j += 8) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), m));
            _mm256_storeu_ps(row + j, e);
            sv = _mm256_add_ps(sv, e);
        }
        if (rest) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_maskload_ps(row + full, k), m));
            e = _mm256_and_ps(e, _mm256_castsi256_ps(k)); /* 0 past the row */
            _mm256_maskstore_ps(row + full, k, e);
            sv = _mm256_add_ps(sv, e);
        }
        const __m256 inv = _mm256_set1_ps(1.0f / hsum8(sv));
        for (int j = 0; j < full; j += 8)
            _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), inv));
        if (rest) {
            __m256 e = _mm256_maskload_ps(row + full, k);
            _mm256_maskstore_ps(row + full, k, _mm256_mul_ps(e, inv));
        }
        for (int j = n; j < t; j++)
            row[j] = 0;
    }
}

TARGET_AVX2 static void causal_softmax_backward_avx2(const float *p, float *ds, int t)
{
    for (int i = 0; i < t; i++) {
        const float *pr = p + (size_t)i * t;
        float *dr = ds + (size_t)i * t;
        const int n = i + 1, full = n & ~7, rest = n - full;
        const __m256i k = mask8(rest);
        __m256 dv = _mm256_setzero_ps(); /* masked loads give 0 past the row */
        for (int c = 0; c < full; c += 8)
            dv = _mm256_fmadd_ps(_mm256_loadu_ps(pr + c), _mm256_loadu_ps(dr + c), dv);
        if (rest)
            dv = _mm256_fmadd_ps(_mm256_maskload_ps(pr + full, k), _mm256_maskload_ps(dr + full, k),
                                 dv);
        const __m256 dot = _mm256_set1_ps(hsum8(dv));
        for (int c = 0; c < full; c += 8)
            _mm256_storeu_ps(dr + c, _mm256_mul_ps(_mm256_loadu_ps(pr + c),
                                                   _mm256_sub_ps(_mm256_loadu_ps(dr + c), dot)));
        if (rest) {
            __m256 pv = _mm256_maskload_ps(pr + full, k), d = _mm256_maskload_ps(dr + full, k);
            _mm256_maskstore_ps(dr + full, k, _mm256_mul_ps(pv, _mm256_sub_ps(d, dot)));
        }
        for (int c = n; c < t; c++)
            dr[c] = 0;
    }
}
#endif

/* The AVX2 version where the CPU has it (the check is a load of a flag). */
static void causal_softmax(float *p, int t)
{
#ifdef TERN_SIMD_AVX2
    if (simd_avx2()) {
        causal_softmax_avx2(p, t);
        return;
    }
#endif
    causal_softmax_c(p, t);
}

static void causal_softmax_backward(const float *p, float *ds, int t)
{
#ifdef TERN_SIMD_AVX2
    if (simd_avx2()) {
        causal_softmax_backward_avx2(p, ds, t);
        return;
    }
#endif
    causal_softmax_backward_c(p, ds, t);
}

/* Row i of p[T, T] may not see columns [shared, seg0[i]): the branches
 * before its own. */
static void mask_other_branches(float *p, int t, int shared, const int32_t *seg0)
{
    for (int i = 0; i < t; i++)
        for (int j = shared; j < seg0[i] && j <= i; j++)
            p[(size_t)i * t + j] = -INFINITY;
}

typedef struct attn_job {
    const attn_shape *a;
    float *out, *probs, *dq, *dk, *dv, *scratch;
    const float *q, *k, *v, *dout, *cprobs;
    size_t scratch_per_worker;
} attn_job;

static void forward_part(void *arg, int wk, int nw)
{
    const attn_job *jb = arg;
    const attn_shape *a = jb->a;
    const int H = a->n_heads, HD = a->hd, KV = a->n_kv_heads, group = H / KV;
    const int QD = H * HD, KD = KV * HD;
    const float scale = 1.0f / sqrtf((float)HD);
    int lo, hi;
    pool_share(a->n_seqs * KV, wk, nw, &lo, &hi);
    for (int item = lo; item < hi; item++) {
        const int s = item / KV, j = item % KV;
        const int r0 = a->seq_start[s], t = a->seq_start[s + 1] - r0;
        for (int h = j * group; h < (j + 1) * group; h++) {
            float *p = jb->probs + probs_offset(a, s, h);
            const float *qh = jb->q + (size_t)r0 * QD + h * HD;
            const float *kj = jb->k + (size_t)r0 * KD + j * HD;
            const float *vj = jb->v + (size_t)r0 * KD + j * HD;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, HD, scale, qh, QD, kj, KD,
                        0.0f, p, t);
            if (a->seg0)
                mask_other_branches(p, t, a->shared[s], a->seg0 + r0);
            causal_softmax(p, t);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, HD, t, 1.0f, p, t, vj, KD,
                        0.0f, jb->out + (size_t)r0 * QD + h * HD, QD);
        }
    }
}

void attention_forward(pool *tp, float *out, float *probs, const float *q, const float *k,
                       const float *v, const attn_shape *a)
{
    attn_job jb = {.a = a, .out = out, .probs = probs, .q = q, .k = k, .v = v};
    pool_run(tp, forward_part, &jb);
}

static void backward_part(void *arg, int wk, int nw)
{
    const attn_job *jb = arg;
    const attn_shape *a = jb->a;
    const int H = a->n_heads, HD = a->hd, KV = a->n_kv_heads, group = H / KV;
    const int QD = H * HD, KD = KV * HD;
    const float scale = 1.0f / sqrtf((float)HD);
    float *ds = jb->scratch + (size_t)wk * jb->scratch_per_worker; /* dP, then dS in place */
    int lo, hi;
    pool_share(a->n_seqs * KV, wk, nw, &lo, &hi);
    for (int item = lo; item < hi; item++) {
        const int s = item / KV, j = item % KV;
        const int r0 = a->seq_start[s], t = a->seq_start[s + 1] - r0;
        for (int h = j * group; h < (j + 1) * group; h++) {
            const float *p = jb->cprobs + probs_offset(a, s, h);
            const size_t qo = (size_t)r0 * QD + h * HD, ko = (size_t)r0 * KD + j * HD;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, HD, 1.0f, jb->dout + qo,
                        QD, jb->v + ko, KD, 0.0f, ds, t);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, HD, t, 1.0f, p, t,
                        jb->dout + qo, QD, 1.0f, jb->dv + ko, KD);
            causal_softmax_backward(p, ds, t);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, HD, t, scale, ds, t,
                        jb->k + ko, KD, 0.0f, jb->dq + qo, QD);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, HD, t, scale, ds, t,
                        jb->q + qo, QD, 1.0f, jb->dk + ko, KD);
        }
    }
}

void attention_backward(pool *tp, float *dq, float *dk, float *dv, const float *dout,
                        const float *probs, const float *q, const float *k, const float *v,
                        const attn_shape *a, float *scratch, size_t scratch_per_worker)
{
    attn_job jb = {.a = a, .dq = dq, .dk = dk, .dv = dv, .dout = dout, .cprobs = probs,
                   .q = q, .k = k, .v = v, .scratch = scratch,
                   .scratch_per_worker = scratch_per_worker};
    pool_run(tp, backward_part, &jb);
}
