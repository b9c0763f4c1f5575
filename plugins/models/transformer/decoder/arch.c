/* arch.c: the per-architecture dispatch of a block's norms, linear layers
 * and MLP (see arch.h); the maths is in the layer files. */
#include "decoder/arch.h"

#include <stdlib.h>
#include <string.h>

void arch_norm_forward(pool *tp, const llama_config *c, float *out, float *mean, float *rstd,
                       const float *in, const float *w, const float *b, int n)
{
    if (c->arch == ARCH_GPT2)
        layernorm_forward(tp, out, mean, rstd, in, w, b, n, c->hidden_size, c->rms_eps);
    else
        rmsnorm_forward(tp, out, rstd, in, w, n, c->hidden_size, c->rms_eps);
}

void arch_norm_backward(pool *tp, const llama_config *c, float *din, float *dw, float *db,
                        const float *dout, const float *in, const float *w, const float *mean,
                        const float *rstd, int n)
{
    if (c->arch == ARCH_GPT2)
        layernorm_backward(tp, din, dw, db, dout, in, w, mean, rstd, n, c->hidden_size);
    else
        rmsnorm_backward(tp, din, dw, dout, in, w, rstd, n, c->hidden_size);
}

void arch_linear_forward(const gemm_ctx *gx, const llama_config *c, float *out, const float *in,
                         const float *w, const float *b, int ld, int n, int i, int o,
                         int accumulate)
{
    if (c->arch == ARCH_GPT2)
        conv1d_forward(gx, out, in, w, ld, n, i, o, accumulate);
    else
        matmul_forward(gx, out, in, w, n, i, o, accumulate);
    if (b)
        bias_forward(out, b, n, o);
}

void arch_linear_backward(const gemm_ctx *gx, const llama_config *c, float *din, float *dw, float *db,
                          const float *dout, const float *in, const float *w, int ld, int n,
                          int i, int o)
{
    if (c->arch == ARCH_GPT2)
        conv1d_backward(gx, din, dw, dout, in, w, ld, n, i, o);
    else
        matmul_backward(gx, din, dw, dout, in, w, n, i, o);
    if (db)
        bias_backward(db, dout, n, o);
}

void arch_qkv_forward(const gemm_ctx *gx, const llama_config *c, const llama_layer *w, float *q,
                      float *k, float *v, const float *xn, const int32_t *pos,
                      const float *rope_cos, const float *rope_sin, int n)
{
    const int D = c->hidden_size, H = c->n_heads, KV = c->n_kv_heads, HD = D / H;
    const int QD = H * HD, KD = KV * HD, QLD = llama_qkv_ld(c);
    arch_linear_forward(gx, c, q, xn, w->wq, w->bq, QLD, n, D, QD, 0);
    arch_linear_forward(gx, c, k, xn, w->wk, w->bk, QLD, n, D, KD, 0);
    arch_linear_forward(gx, c, v, xn, w->wv, w->bv, QLD, n, D, KD, 0);
    if (c->arch != ARCH_GPT2) {
        rope_forward(q, pos, rope_cos, rope_sin, n, H, HD);
        rope_forward(k, pos, rope_cos, rope_sin, n, KV, HD);
    }
}

void arch_mlp_in_forward(const gemm_ctx *gx, const llama_config *c, const llama_layer *w, float *gate,
                         float *up, float *act, const float *h, int n)
{
    const int D = c->hidden_size, F = c->intermediate_size;
    arch_linear_forward(gx, c, up, h, w->w_up, w->b_up, F, n, D, F, 0);
    if (c->arch == ARCH_GPT2) {
        gelu_forward(gx->tp, act, up, (size_t)n * F);
        return;
    }
    arch_linear_forward(gx, c, gate, h, w->w_gate, w->b_gate, F, n, D, F, 0);
    swiglu_forward(gx->tp, act, gate, up, (size_t)n * F);
}

void arch_mlp_in_backward(const gemm_ctx *gx, const llama_config *c, const llama_layer *w,
                          const llama_layer *gw, float *dh, float *dgate, float *dup,
                          const float *dact, const float *gate, const float *up, const float *h,
                          int n)
{
    const int D = c->hidden_size, F = c->intermediate_size;
    if (c->arch == ARCH_GPT2) {
        gelu_backward(gx->tp, dup, dact, up, (size_t)n * F);
    } else {
        swiglu_backward(gx->tp, dgate, dup, dact, gate, up, (size_t)n * F);
        arch_linear_backward(gx, c, dh, gw->w_gate, gw->b_gate, dgate, h, w->w_gate, F, n, D, F);
    }
    arch_linear_backward(gx, c, dh, gw->w_up, gw->b_up, dup, h, w->w_up, F, n, D, F);
}

void arch_packs_free(gemm_pack_set *set)
{
    for (int i = 0; i < set->n; i++)
        gemm_packed_free(set->p[i]);
    free(set->w);
    free(set->p);
    memset(set, 0, sizeof *set);
}

/* Add w, packed as op(B)[k, n] (tb: W is [n, k], ldb apart). */
static int add_packed(gemm_pack_set *set, const float *w, int tb, int k, int n, int ldb)
{
    gemm_packed *pk = gemm_pack_b(tb, k, n, w, ldb);
    if (!pk)
        return -1;
    set->w[set->n] = w;
    set->p[set->n++] = pk;
    return 0;
}

/* Pack w as arch_linear_forward multiplies by it (GPT-2's Conv1D: W[i, o],
 * rows ld apart; else W[o, i]). */
static int add_linear(const llama_config *c, gemm_pack_set *set, const float *w, int ld, int i,
                      int o)
{
    return c->arch == ARCH_GPT2 ? add_packed(set, w, 0, i, o, ld) : add_packed(set, w, 1, i, o, i);
}

int arch_pack_weights(const llama_config *c, const llama_params *p, gemm_pack_set *set)
{
    const int D = c->hidden_size, F = c->intermediate_size, V = c->vocab_size;
    const int HD = D / c->n_heads, QD = c->n_heads * HD, KD = c->n_kv_heads * HD;
    const int QLD = llama_qkv_ld(c), L = c->n_layers, most = 7 * L + 1;
    memset(set, 0, sizeof *set);
    set->w = calloc((size_t)most, sizeof *set->w);
    set->p = calloc((size_t)most, sizeof *set->p);
    int rc = set->w && set->p ? 0 : -1;
    for (int l = 0; l < L && rc == 0; l++) {
        const llama_layer *w = &p->layers[l];
        rc = add_linear(c, set, w->wq, QLD, D, QD) || add_linear(c, set, w->wk, QLD, D, KD) ||
             add_linear(c, set, w->wv, QLD, D, KD) || add_linear(c, set, w->wo, D, QD, D) ||
             add_linear(c, set, w->w_up, F, D, F) || add_linear(c, set, w->w_down, D, F, D) ||
             (c->arch != ARCH_GPT2 && add_linear(c, set, w->w_gate, F, D, F))
                 ? -1
                 : 0;
    }
    if (rc == 0) /* the head: x W^T whatever the architecture */
        rc = add_packed(set, p->lm_head, 1, D, V, D);
    if (rc != 0)
        arch_packs_free(set);
    return rc;
}
