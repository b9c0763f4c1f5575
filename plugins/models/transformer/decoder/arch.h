/*
 * arch.h: the parts of a decoder block that differ between the
 * architectures (llama.h), as dispatchers over layers.h, shared by the
 * training pass (model.c) and KV-cache decoding (generate.c):
 *
 *   norm      RMSNorm (Llama, Qwen2)        | LayerNorm with bias (GPT-2)
 *   linear    Linear W [out, in]: x W^T     | Conv1D W [in, out]: x W   (+ bias if any)
 *   MLP in    silu(h Wg) ⊙ (h Wu)           | gelu(h Wfc)
 *   positions RoPE on q and k (model.c)     | wpe added to the embeddings
 */
#ifndef TERN_ARCH_H
#define TERN_ARCH_H

#include "decoder/llama.h"
#include "layers/layers.h"

/* out[N, D] = norm(in) with weight w and bias b (LayerNorm only); saves
 * rstd[N] and, for LayerNorm, mean[N]. On tp's threads (NULL: the caller's). */
void arch_norm_forward(pool *tp, const llama_config *c, float *out, float *mean, float *rstd,
                       const float *in, const float *w, const float *b, int n);
/* din += ; dw, db += */
void arch_norm_backward(pool *tp, const llama_config *c, float *din, float *dw, float *db,
                        const float *dout, const float *in, const float *w, const float *mean,
                        const float *rstd, int n);

/* out[N, O] = in[N, I] · W (+ b when b is not NULL); += when accumulate.
 * ld: the row stride of a Conv1D W (O, or 3D for q, k, v inside c_attn);
 * a Linear W [O, I] is always dense. */
void arch_linear_forward(const gemm_ctx *gx, const llama_config *c, float *out, const float *in,
                         const float *w, const float *b, int ld, int n, int i, int o,
                         int accumulate);
/* din[N, I] += ; dw, db += (din and db may be NULL) */
void arch_linear_backward(const gemm_ctx *gx, const llama_config *c, float *din, float *dw, float *db,
                          const float *dout, const float *in, const float *w, int ld, int n,
                          int i, int o);

/* The attention inputs of a block from its normed input xn[N, D]:
 * q[N, QD], k[N, KD], v[N, KD] (row stride llama_qkv_ld: GPT-2 keeps them
 * inside c_attn's output), then RoPE on q and k at positions pos (Llama,
 * Qwen2; rope_cos, rope_sin unused for GPT-2). The training pass and
 * KV-cache decoding compute them alike. */
void arch_qkv_forward(const gemm_ctx *gx, const llama_config *c, const llama_layer *w, float *q,
                      float *k, float *v, const float *xn, const int32_t *pos,
                      const float *rope_cos, const float *rope_sin, int n);
/* The MLP up to its down projection, act[N, F] from h[N, D]:
 *   Llama, Qwen2: gate = h Wg^T (+bg), up = h Wu^T (+bu), act = silu(gate) ⊙ up
 *   GPT-2:        up = h Wfc + bfc, act = gelu(up)        (gate unused)
 * gate and up are kept for the backward. */
void arch_mlp_in_forward(const gemm_ctx *gx, const llama_config *c, const llama_layer *w, float *gate,
                         float *up, float *act, const float *h, int n);
/* From dact[N, F]: dh[N, D] += and the weight gradients in gw;
 * dgate, dup: [N, F] scratch. */
void arch_mlp_in_backward(const gemm_ctx *gx, const llama_config *c, const llama_layer *w,
                          const llama_layer *gw, float *dh, float *dgate, float *dup,
                          const float *dact, const float *gate, const float *up, const float *h,
                          int n);

/* Pack every weight of the linear layers and the head for bf16 products,
 * as arch_linear_forward and the head use them (gemm.h, gemm_packed), into
 * set (arrays allocated here). 0, or -1 when out of memory (set empty). */
int arch_pack_weights(const llama_config *c, const llama_params *p, gemm_pack_set *set);
/* Free what arch_pack_weights made; set is empty after. */
void arch_packs_free(gemm_pack_set *set);

#endif
