/*
 * layers.h: forward and backward of each layer of the decoders on packed
 * rows (N rows = the tokens of all sequences of a batch, one after another).
 * One file per layer: matmul.c, conv1d.c, bias.c, rmsnorm.c, layernorm.c,
 * rope.c, rope_scaling.c, attention.c, swiglu.c, gelu.c, embedding.c,
 * logprob.c. Backward functions ACCUMULATE (+=) into parameter
 * gradients and into input gradients, so residual branches simply add up,
 * except where a declaration says "(set)".
 */
#ifndef TERN_LAYERS_H
#define TERN_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "layers/gemm.h"
#include "layers/pool.h"

/* ---- matmul.c: y = x W^T, the Hugging Face Linear without bias ---------- */
/* The products run on gx's thread pool (NULL: the calling thread), in its
 * precision (gemm.h). */
/* out[N, O] = in[N, I] W[O, I]^T   (accumulate: out += instead of =) */
void matmul_forward(const gemm_ctx *gx, float *out, const float *in, const float *w, int n, int i, int o,
                    int accumulate);
/* din[N, I] += dout[N, O] W[O, I];  dw[O, I] += dout^T in   (either may be NULL) */
void matmul_backward(const gemm_ctx *gx, float *din, float *dw, const float *dout, const float *in,
                     const float *w, int n, int i, int o);

/* ---- conv1d.c: y = x W, GPT-2's Conv1D (weights [in, out]) without bias --- */
/* W's rows are `ld` floats apart (ld >= O), so a column block of a wider
 * matrix (q, k or v inside c_attn [D, 3D]) is used in place.
 * out[N, O] = in[N, I] W[I, O]   (accumulate: out += instead of =) */
void conv1d_forward(const gemm_ctx *gx, float *out, const float *in, const float *w, int ld, int n, int i,
                    int o, int accumulate);
/* din[N, I] += dout[N, O] W[I, O]^T;  dW[I, O] += in^T dout   (either may be NULL) */
void conv1d_backward(const gemm_ctx *gx, float *din, float *dw, const float *dout, const float *in,
                     const float *w, int ld, int n, int i, int o);

/* ---- bias.c: the bias of a linear layer --------------------------------- */
/* out[r, :] += b[O] for each of N rows */
void bias_forward(float *out, const float *b, int n, int o);
/* db[O] += sum over rows of dout[N, O] */
void bias_backward(float *db, const float *dout, int n, int o);

/* The elementwise and row-wise layers below (norms, activations, logprob)
 * split their rows or elements over the threads of tp (NULL: the calling
 * thread; small inputs also stay on it). Their results do not depend on the
 * number of threads: sums over rows (dw, db) are split by column instead. */

/* ---- rmsnorm.c: y = x / sqrt(mean(x^2) + eps) * w ------------------------ */
/* out[N, D] = (set), rstd[N] (saved for backward) */
void rmsnorm_forward(pool *tp, float *out, float *rstd, const float *in, const float *w, int n,
                     int d, float eps);
/* din[N, D] += ;  dw[D] += (dw may be NULL) */
void rmsnorm_backward(pool *tp, float *din, float *dw, const float *dout, const float *in,
                      const float *w, const float *rstd, int n, int d);

/* ---- layernorm.c: y = (x − mean) / sqrt(var + eps) · w + b ------------- */
/* out[N, D] = (set); mean[N], rstd[N] saved for backward */
void layernorm_forward(pool *tp, float *out, float *mean, float *rstd, const float *in,
                       const float *w, const float *b, int n, int d, float eps);
/* din[N, D] += ; dw[D], db[D] += (either may be NULL) */
void layernorm_backward(pool *tp, float *din, float *dw, float *db, const float *dout,
                        const float *in, const float *w, const float *mean, const float *rstd,
                        int n, int d);

/* ---- rope.c: rotary position embedding (Hugging Face rotate_half) ------- */
/* cos/sin tables [P, HD/2]: angle(p, i) = p * theta^(-2i/HD) */
void rope_tables(float *cos_t, float *sin_t, int max_pos, int hd, float theta);
/* The same from given inverse frequencies inv_freq[HD/2]: angle(p, i) = p · inv_freq[i] */
void rope_tables_from(float *cos_t, float *sin_t, int max_pos, int hd, const double *inv_freq);
/* rope_scaling.c: Llama 3's inverse frequencies (HF _compute_llama3_parameters):
 * theta^(−2i/HD), divided by `factor` for wavelengths above orig/low, kept
 * below orig/high, and blended smoothly between. */
void rope_llama3_inv_freq(double *inv_freq, int hd, double theta, double factor, double low,
                          double high, double orig_max_pos);
/* Rotate x[N, nh*HD] in place; row r is at position pos[r]. Within a head the
 * pair (i, i + HD/2) turns by angle(pos, i). */
void rope_forward(float *x, const int32_t *pos, const float *cos_t, const float *sin_t, int n,
                  int nh, int hd);
/* The rotation is orthogonal: the gradient turns back by -angle, in place. */
void rope_backward(float *dx, const int32_t *pos, const float *cos_t, const float *sin_t, int n,
                   int nh, int hd);

/* ---- swiglu.c: act = silu(gate) * up,  silu(g) = g * sigmoid(g) --------- */
/* act[n] = (set). With AVX2 the exp is fastexp.h's (within 2 ulp of expf). */
void swiglu_forward(pool *tp, float *act, const float *gate, const float *up, size_t n);
/* dgate[n], dup[n] = (set, not accumulated: they are the MLP's own scratch) */
void swiglu_backward(pool *tp, float *dgate, float *dup, const float *dact, const float *gate,
                     const float *up, size_t n);

/* ---- gelu.c: GELU, tanh approximation (HF "gelu_new") ------------------- */
/* act[n] = 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))   (set) */
void gelu_forward(pool *tp, float *act, const float *x, size_t n);
/* dx[n] = dact · gelu'(x)   (set, not accumulated) */
void gelu_backward(pool *tp, float *dx, const float *dact, const float *x, size_t n);

/* ---- embedding.c --------------------------------------------------------- */
/* out[N, D] = E[tokens[r]] */
void embedding_forward(float *out, const int32_t *tokens, const float *e, int n, int d);
/* out[N, D] += E[ids[r]]: learned position embeddings (ids = positions) */
void embedding_add_forward(float *out, const int32_t *ids, const float *e, int n, int d);
/* dE[tokens[r]] += dout[r] (also the backward of embedding_add_forward) */
void embedding_backward(float *de, const int32_t *tokens, const float *dout, int n, int d);

/* ---- attention.c: causal multi-head attention with grouped KV heads ----- */
/* Always float32 (sgemm), also under compute = "bf16": decoding (generate.c)
 * attends row by row in float32, and its log-probs must equal score's. */
typedef struct attn_shape {
    int n_heads, n_kv_heads, hd;  /* H, KV, HD */
    int n_seqs;                   /* S */
    const int32_t *seq_start;     /* [S + 1]: rows of sequence s are [start[s], start[s+1]) */
    /* Branches after a shared prefix (both NULL: plain causal). Row i of
     * sequence s (global row start[s] + i) sees the rows j <= i of its
     * sequence with j < shared[s] (the prefix) or j >= seg0[start[s] + i]
     * (its own branch, which starts at that row of the sequence); a row of
     * the prefix has seg0 0. Several responses to one prompt so cost the
     * prompt's rows once (front.c). */
    const int32_t *shared;        /* [S] */
    const int32_t *seg0;          /* [N] */
} attn_shape;
/* Floats of saved probabilities: sum over sequences of H * T_s * T_s. */
size_t attention_probs_size(const attn_shape *a);
/* out[N, H*HD] = softmax(q k^T / sqrt(HD) + causal mask) v, per sequence and
 * head (the mask: causal, and the branches' where given); query head h
 * reads kv head h / (H / KV). probs saved for backward. */
void attention_forward(pool *tp, float *out, float *probs, const float *q, const float *k,
                       const float *v, const attn_shape *a);
/* dq = (set), dk and dv += ; scratch holds T*T floats for the largest T per
 * worker of tp. Work is split by (sequence, kv head), so the query heads that
 * share a kv head, and so write its dk and dv, stay on one worker. */
void attention_backward(pool *tp, float *dq, float *dk, float *dv, const float *dout,
                        const float *probs, const float *q, const float *k, const float *v,
                        const attn_shape *a, float *scratch, size_t scratch_per_worker);

/* ---- logprob.c: per-position log-prob of the next token and entropy ----- */
/* For each row r with target[r] >= 0 (the next token), from z = logits[r, V]
 * scaled by scale[r] (1 / temperature; scale NULL means 1):
 *   p = softmax(scale z),  logp[r] = log p[target],  ent[r] = -sum p log p.
 * Rows with target < 0 get 0 (the last token of a sequence predicts nothing). */
void logprob_forward(pool *tp, float *logp, float *ent, const float *logits, const float *scale,
                     const int32_t *target, int n, int v);
/* dlogits[r] = scale[r] (dlogp[r] (onehot(target) - p) + dent[r] dH/dz'),
 * with dH/dz'_j = -p_j (log p_j + H). dent and scale may be NULL. Overwrites. */
void logprob_backward(pool *tp, float *dlogits, const float *logits, const float *scale,
                      const int32_t *target, const float *dlogp, const float *dent, int n, int v);

#endif
