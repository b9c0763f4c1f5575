/* arch.c: the per-architecture dispatch of a block's norms, linear layers
 * and MLP (see arch.h); the maths is in the layer files. */
#include "decoder/arch.h"

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
