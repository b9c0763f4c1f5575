/*
 * kernels.h: the CUDA kernels of the `transformer_cuda` plugin, as C
 * launchers (one .cu file per layer, as in the CPU plugin's layers.h). The
 * matrix products are cuBLAS calls in device_model.c, not here.
 *
 * Conventions (shapes as in ../../transformer/decoder/llama.h: N rows packed one
 * sequence after another, D hidden, F intermediate, V vocab, H query heads,
 * KV key/value heads, HD head size, QD = H*HD, KD = KV*HD):
 *   - every pointer is device memory, row-major, float32 unless it says bf16
 *     (bf16 buffers are uint16_t here so that C callers need no CUDA types);
 *   - each launcher enqueues on `st` and returns cudaGetLastError() (a launch
 *     error; errors of the kernel itself surface at the next synchronisation);
 *   - n == 0 is a no-op that returns cudaSuccess;
 *   - "(set)" overwrites the output, "+=" accumulates into it, matching the
 *     CPU layers so that device_model.c reads like model.c.
 */
#ifndef TERN_CUDA_KERNELS_H
#define TERN_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- embedding_kernels.cu --------------------------------------------------- */
/* out[N, D] = E[tokens[r]]   (set) */
cudaError_t k_embedding_forward(cudaStream_t st, float *out, const int32_t *tokens,
                                const float *e, int n, int d);
/* dE[tokens[r], :] += dout[r, :], host_tokens[N] in HOST memory: the rows
 * are grouped by token on the host, so each token's rows add in row order
 * (no atomics, the same bits every run) */
cudaError_t k_embedding_backward(cudaStream_t st, float *de, const int32_t *host_tokens,
                                 const float *dout, int n, int d);

/* ---- rmsnorm_kernels.cu: y = x / sqrt(mean(x²) + eps) · w ----------------------- */
/* out[N, D] (set), rstd[N] (set, saved for backward) */
cudaError_t k_rmsnorm_forward(cudaStream_t st, float *out, float *rstd, const float *in,
                              const float *w, int n, int d, float eps);
/* din[N, D] += ;  dw[D] += (dw may be NULL). With xhat = x · rstd:
 *   dw_j  += Σ_r dout_rj · xhat_rj
 *   din_r += rstd · (dout_r ⊙ w − xhat_r · mean_j(dout_rj w_j xhat_rj)) */
cudaError_t k_rmsnorm_backward(cudaStream_t st, float *din, float *dw, const float *dout,
                               const float *in, const float *w, const float *rstd, int n, int d);

/* ---- rope_kernels.cu: rotary embedding, Hugging Face rotate_half -------------- */
/* x[N, nh*HD] in place; row r at position pos[r]; cos_t, sin_t [P, HD/2].
 * Within head h, the pair (i, i + HD/2) turns by angle(pos, i):
 *   a' = a cos − b sin·sign,  b' = b cos + a sin·sign
 * sign = +1 forward, −1 the backward (turn the gradient back). */
cudaError_t k_rope(cudaStream_t st, float *x, const int32_t *pos, const float *cos_t,
                   const float *sin_t, int n, int nh, int hd, int sign);

/* ---- swiglu_kernels.cu: act = silu(gate) · up,  silu(g) = g σ(g) ------------ */
/* act[n] (set) */
cudaError_t k_swiglu_forward(cudaStream_t st, float *act, const float *gate, const float *up,
                             size_t n);
/* dgate[n], dup[n] (set):  dup = dact silu(g),  dgate = dact up σ(g)(1 + g(1 − σ(g))) */
cudaError_t k_swiglu_backward(cudaStream_t st, float *dgate, float *dup, const float *dact,
                              const float *gate, const float *up, size_t n);

/* ---- elementwise_kernels.cu ------------------------------------------------------- */
/* out[r, :] += b[O] for each of N rows */
cudaError_t k_bias_forward(cudaStream_t st, float *out, const float *b, int n, int o);
/* db[O] += Σ_r dout[r, :] (partials per chunk of rows, added in order) */
cudaError_t k_bias_backward(cudaStream_t st, float *db, const float *dout, int n, int o);
/* y[n] += x[n] */
cudaError_t k_add(cudaStream_t st, float *y, const float *x, size_t n);
/* out[n] = bf16(in[n]), round to nearest even (NaN stays NaN) */
cudaError_t k_to_bf16(cudaStream_t st, uint16_t *out, const float *in, size_t n);

/* ---- logprob_kernels.cu: per-row log-prob of the target and entropy --------- */
/* For each row r with target[r] >= 0, from z' = scale[r] · logits[r, V]
 * (scale NULL: 1):  log Z = log Σ e^{z'},  logp[r] = z'_t − log Z,
 * ent[r] = log Z − Σ p_j z'_j. Rows with target < 0 get 0. ent may be NULL.
 * Sums in float32 over a block per row, max-subtracted. */
cudaError_t k_logprob_forward(cudaStream_t st, float *logp, float *ent, const float *logits,
                              const float *scale, const int32_t *target, int n, int v);
/* dlogits[r, j] = scale (dlogp (1[j = t] − p_j) − dent p_j (log p_j + H))
 * (set; rows with target < 0 get 0). dlogits may equal logits (in place: the
 * row is read fully before it is written). dent and scale may be NULL. */
cudaError_t k_logprob_backward(cudaStream_t st, float *dlogits, const float *logits,
                               const float *scale, const int32_t *target, const float *dlogp,
                               const float *dent, int n, int v);

/* ---- adamw_kernels.cu ---------------------------------------------------------------- */
/* *acc += Σ g[i]² in double (acc zeroed by the caller), in a fixed order */
cudaError_t k_sumsq(cudaStream_t st, double *acc, const float *g, size_t n);
/* One AdamW step on n elements, as ../../transformer/decoder/adamw.c:
 *   g ← g·k;  m ← b1 m + (1−b1) g;  v ← b2 v + (1−b2) g²;
 *   p ← p·decay − lr (m / bc1) / (sqrt(v / bc2) + eps)
 * decay = 1 − lr·wd for matrices, 1 otherwise; bc = 1 − β^t. g is left
 * clipped (the caller zeroes it afterwards). */
cudaError_t k_adamw(cudaStream_t st, float *p, float *g, float *m, float *v, size_t n, float k,
                    float b1, float b2, float eps, float lr, float decay, float bc1, float bc2);

/* ---- attention_kernels.cu: causal attention over packed sequences ------------ */
/* Query row r attends to key rows row_first[r] .. r (its own sequence up to
 * itself); query head h reads kv head h / (H / KV); scale 1/sqrt(HD).
 * Never builds the T×T matrix: each (row, head) streams over its keys with
 * an online softmax. HD <= 256.
 *   out[N, QD] (set);  lse[N, H] (set) = log Σ_j exp(s_j), s_j = q·k_j/sqrt(HD),
 *   saved for backward. */
cudaError_t k_attention_forward(cudaStream_t st, float *out, float *lse, const float *q,
                                const float *k, const float *v, const int32_t *row_first,
                                int n, int h, int kv, int hd);
/* The backward, recomputing p_ij = exp(s_ij − lse_i) instead of storing it:
 *   delta[N, H] (set) = Σ_d dout ⊙ out        (k_attention_delta)
 *   dq_i (set) = Σ_j p_ij (dout_i·v_j − delta_i) k_j / sqrt(HD)
 *   dk_j (set) = Σ_{i >= j, same sequence, heads of j's group} p_ij (dout_i·v_j − delta_i) q_i / sqrt(HD)
 *   dv_j (set) = Σ_{same} p_ij dout_i
 * row_end[r]: one past the last row of r's sequence. No atomics: each output
 * element is written by one thread of one block (a warp per row, or tiles
 * for head dims 64 and 128), so results do not depend on scheduling. */
cudaError_t k_attention_delta(cudaStream_t st, float *delta, const float *dout, const float *out,
                              int n, int h, int hd);
cudaError_t k_attention_backward_dq(cudaStream_t st, float *dq, const float *dout,
                                    const float *lse, const float *delta, const float *q,
                                    const float *k, const float *v, const int32_t *row_first,
                                    int n, int h, int kv, int hd);
cudaError_t k_attention_backward_dkdv(cudaStream_t st, float *dk, float *dv, const float *dout,
                                      const float *lse, const float *delta, const float *q,
                                      const float *k, const float *v, const int32_t *row_end,
                                      int n, int h, int kv, int hd);

/* ---- decode_kernels.cu: one new token per row against a KV cache ---------------- */
/* The decode KV cache (as ../../transformer/generation/generate.c's): each
 * prompt's keys and values once, shared by all its samples, and each slot's
 * own rows after them:
 *   pk, pv [L, R, KD]       the call's R prompt rows; slot k's prompt at row
 *                           pstart[k], plen[k] rows
 *   kc, vc [slots, L, Pn, KD] slot k's position p >= plen[k] at
 *                           ((k·L + l)·Pn + p − plen[k])·KD
 * pstart and plen are device arrays [slots]. */
typedef struct k_kv_cache {
    float *pk, *pv;
    float *kc, *vc;
    const int32_t *pstart, *plen;
    int prompt_rows; /* R */
    int own_rows;    /* Pn */
    int n_layers;    /* L */
    int kd;          /* KD = KV·HD */
} k_kv_cache;
/* Append row r's k[r], v[r] ([B, KD]) at position pos[r] of slot row_slot[r],
 * layer l (a position outside the slot's own rows is skipped). */
cudaError_t k_kv_append(cudaStream_t st, const k_kv_cache *c, const float *k, const float *v,
                        const int32_t *row_slot, const int32_t *pos, int b, int l);
/* out[B, QD] (set): row r's query q[r] over its prompt's rows and then its
 * slot's own up to pos[r] at layer l (after k_kv_append), online softmax. */
cudaError_t k_decode_attention(cudaStream_t st, float *out, const float *q, const k_kv_cache *c,
                               const int32_t *row_slot, const int32_t *pos, int b, int l, int h,
                               int kv, int hd);

#ifdef __cplusplus
}
#endif
#endif
