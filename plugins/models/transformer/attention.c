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
 * dimension H·HD and no copy (K, V likewise with KV·HD).
 */
#include <cblas.h>
#include <math.h>

#include "layers.h"

size_t attention_probs_size(const attn_shape *a)
{
    size_t total = 0;
    for (int s = 0; s < a->n_seqs; s++) {
        size_t t = (size_t)(a->seq_start[s + 1] - a->seq_start[s]);
        total += (size_t)a->n_heads * t * t;
    }
    return total;
}

/* Row-wise softmax of the lower triangle of p[T, T]; entries above the
 * diagonal become 0. */
static void causal_softmax(float *p, int t)
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

void attention_forward(float *out, float *probs, const float *q, const float *k, const float *v,
                       const attn_shape *a)
{
    const int H = a->n_heads, HD = a->hd, group = a->n_heads / a->n_kv_heads;
    const int QD = H * HD, KD = a->n_kv_heads * HD;
    const float scale = 1.0f / sqrtf((float)HD);
    float *p = probs;
    for (int s = 0; s < a->n_seqs; s++) {
        const int r0 = a->seq_start[s], t = a->seq_start[s + 1] - r0;
        for (int h = 0; h < H; h++, p += (size_t)t * t) {
            const int j = h / group;
            const float *qh = q + (size_t)r0 * QD + h * HD;
            const float *kj = k + (size_t)r0 * KD + j * HD;
            const float *vj = v + (size_t)r0 * KD + j * HD;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, HD, scale, qh, QD, kj, KD,
                        0.0f, p, t);
            causal_softmax(p, t);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, HD, t, 1.0f, p, t, vj, KD,
                        0.0f, out + (size_t)r0 * QD + h * HD, QD);
        }
    }
}

void attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *probs,
                        const float *q, const float *k, const float *v, const attn_shape *a,
                        float *scratch)
{
    const int H = a->n_heads, HD = a->hd, group = a->n_heads / a->n_kv_heads;
    const int QD = H * HD, KD = a->n_kv_heads * HD;
    const float scale = 1.0f / sqrtf((float)HD);
    const float *p = probs;
    for (int s = 0; s < a->n_seqs; s++) {
        const int r0 = a->seq_start[s], t = a->seq_start[s + 1] - r0;
        for (int h = 0; h < H; h++, p += (size_t)t * t) {
            const int j = h / group;
            const size_t qo = (size_t)r0 * QD + h * HD, ko = (size_t)r0 * KD + j * HD;
            float *ds = scratch; /* dP, then dS in place */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, HD, 1.0f, dout + qo, QD,
                        v + ko, KD, 0.0f, ds, t);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, HD, t, 1.0f, p, t, dout + qo,
                        QD, 1.0f, dv + ko, KD);
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
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, HD, t, scale, ds, t, k + ko,
                        KD, 0.0f, dq + qo, QD);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, HD, t, scale, ds, t, q + qo,
                        QD, 1.0f, dk + ko, KD);
        }
    }
}
