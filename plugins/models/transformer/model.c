/*
 * model.c: the Llama decoder's forward and backward passes over a packed
 * batch (shapes in llama.h), layer by layer through layers.h:
 *
 *   x_0 = E[tokens]
 *   for each layer:  h = rmsnorm(x) ;  q, k, v = h Wq^T, h Wk^T, h Wv^T ; rope(q, k)
 *                    m = x + attention(q, k, v) Wo^T
 *                    h2 = rmsnorm(m) ;  x' = m + (silu(h2 Wg^T) ⊙ h2 Wu^T) Wd^T
 *   logits = rmsnorm(x_L) Wlm^T ;  logp, entropy = logprob(logits, targets)
 *
 * Backward walks the same steps in reverse; residual connections add the
 * gradient of both branches, which is why every layer backward accumulates.
 */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/rng.h"

#define D_(m) ((m)->cfg.hidden_size)
#define F_(m) ((m)->cfg.intermediate_size)
#define V_(m) ((m)->cfg.vocab_size)
#define L_(m) ((m)->cfg.n_layers)
#define HD_(m) ((m)->cfg.hidden_size / (m)->cfg.n_heads)
#define QD_(m) ((m)->cfg.n_heads * HD_(m))
#define KD_(m) ((m)->cfg.n_kv_heads * HD_(m))

int llama_model_init(llama_model *m, const llama_config *c, char *err, size_t errn)
{
    memset(m, 0, sizeof *m);
    if (llama_config_check(c, err, errn) != 0)
        return -1;
    m->cfg = *c;
    m->n_params = llama_param_count(c);
    int hd = c->hidden_size / c->n_heads;
    m->params = calloc(m->n_params, sizeof(float));
    m->grads = calloc(m->n_params, sizeof(float));
    m->rope_cos = malloc((size_t)c->max_positions * (size_t)(hd / 2) * sizeof(float));
    m->rope_sin = malloc((size_t)c->max_positions * (size_t)(hd / 2) * sizeof(float));
    m->acts = calloc((size_t)c->n_layers, sizeof *m->acts);
    if (!m->params || !m->grads || !m->rope_cos || !m->rope_sin || !m->acts ||
        llama_params_bind(&m->p, c, m->params) != 0 || llama_params_bind(&m->g, c, m->grads) != 0) {
        llama_model_free(m);
        snprintf(err, errn, "out of memory for a model of %zu parameters", llama_param_count(c));
        return -1;
    }
    rope_tables(m->rope_cos, m->rope_sin, c->max_positions, hd, c->rope_theta);
    return 0;
}

static void free_acts(llama_model *m)
{
    free(m->res);
    for (int l = 0; m->acts && l < L_(m); l++) {
        llama_layer_acts *a = &m->acts[l];
        free(a->xn1);
        free(a->rstd1);
        free(a->q);
        free(a->k);
        free(a->v);
        free(a->probs);
        free(a->att);
        free(a->res_mid);
        free(a->xn2);
        free(a->rstd2);
        free(a->gate);
        free(a->up);
        free(a->act);
        memset(a, 0, sizeof *a);
    }
    float **bufs[] = {&m->xf, &m->rstdf, &m->logits, &m->dx, &m->dxn, &m->dq, &m->dk, &m->dv,
                      &m->datt, &m->dgate, &m->dup, &m->dact, &m->dlogits, &m->dscratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(*bufs[i]);
        *bufs[i] = NULL;
    }
    m->res = NULL;
    m->cap_rows = m->cap_probs = m->cap_scratch = 0;
}

int llama_model_set_threads(llama_model *m, int n)
{
    pool *p = NULL;
    if (n > 1 && !(p = pool_new(n)))
        return -1;
    pool_free(m->tp);
    m->tp = p;
    m->cap_scratch = 0; /* attention backward scratch is per worker */
    free(m->dscratch);
    m->dscratch = NULL;
    return 0;
}

void llama_model_free(llama_model *m)
{
    pool_free(m->tp);
    free_acts(m);
    free(m->acts);
    llama_params_unbind(&m->p);
    llama_params_unbind(&m->g);
    free(m->params);
    free(m->grads);
    free(m->rope_cos);
    free(m->rope_sin);
    memset(m, 0, sizeof *m);
}

/* Make room for `rows` rows, `probs` attention probabilities per layer and a
 * `scratch` of T*T floats. Buffers only grow, so steady training allocates
 * nothing. */
static int ensure_capacity(llama_model *m, size_t rows, size_t probs, size_t scratch)
{
    scratch *= (size_t)pool_size(m->tp); /* one T*T block per worker */
    if (rows <= m->cap_rows && probs <= m->cap_probs && scratch <= m->cap_scratch && m->dscratch)
        return 0;
    if (rows < m->cap_rows)
        rows = m->cap_rows;
    if (probs < m->cap_probs)
        probs = m->cap_probs;
    if (scratch < m->cap_scratch)
        scratch = m->cap_scratch;
    free_acts(m);
    size_t D = (size_t)D_(m), F = (size_t)F_(m), V = (size_t)V_(m), QD = (size_t)QD_(m),
           KD = (size_t)KD_(m), L = (size_t)L_(m);
    int ok = (m->res = malloc((L + 1) * rows * D * sizeof(float))) != NULL;
    for (size_t l = 0; ok && l < L; l++) {
        llama_layer_acts *a = &m->acts[l];
        ok = (a->xn1 = malloc(rows * D * sizeof(float))) && (a->rstd1 = malloc(rows * sizeof(float))) &&
             (a->q = malloc(rows * QD * sizeof(float))) && (a->k = malloc(rows * KD * sizeof(float))) &&
             (a->v = malloc(rows * KD * sizeof(float))) &&
             (a->probs = malloc((probs ? probs : 1) * sizeof(float))) &&
             (a->att = malloc(rows * QD * sizeof(float))) &&
             (a->res_mid = malloc(rows * D * sizeof(float))) &&
             (a->xn2 = malloc(rows * D * sizeof(float))) && (a->rstd2 = malloc(rows * sizeof(float))) &&
             (a->gate = malloc(rows * F * sizeof(float))) && (a->up = malloc(rows * F * sizeof(float))) &&
             (a->act = malloc(rows * F * sizeof(float)));
    }
    ok = ok && (m->xf = malloc(rows * D * sizeof(float))) && (m->rstdf = malloc(rows * sizeof(float))) &&
         (m->logits = malloc(rows * V * sizeof(float))) && (m->dx = malloc(rows * D * sizeof(float))) &&
         (m->dxn = malloc(rows * D * sizeof(float))) && (m->dq = malloc(rows * QD * sizeof(float))) &&
         (m->dk = malloc(rows * KD * sizeof(float))) && (m->dv = malloc(rows * KD * sizeof(float))) &&
         (m->datt = malloc(rows * QD * sizeof(float))) && (m->dgate = malloc(rows * F * sizeof(float))) &&
         (m->dup = malloc(rows * F * sizeof(float))) && (m->dact = malloc(rows * F * sizeof(float))) &&
         (m->dlogits = malloc(rows * V * sizeof(float))) &&
         (m->dscratch = malloc((scratch ? scratch : 1) * sizeof(float)));
    if (!ok) {
        free_acts(m);
        return -1;
    }
    m->cap_rows = rows;
    m->cap_probs = probs;
    m->cap_scratch = scratch;
    return 0;
}

void llama_init_random(llama_model *m, uint64_t seed)
{
    tern_rng r;
    tern_rng_seed(&r, seed);
    llama_tensor_info t;
    for (size_t i = 0; i < llama_tensor_count(&m->cfg); i++) {
        llama_tensor_describe(&m->cfg, i, &t);
        float *w = m->params + t.offset;
        for (size_t j = 0; j < t.numel; j++) {
            if (t.ndim == 1) {
                w[j] = 1.0f; /* norm weights start as the identity */
                continue;
            }
            /* Box-Muller: N(0, 0.02) */
            double u1 = tern_rng_uniform(&r), u2 = tern_rng_uniform(&r);
            w[j] = (float)(0.02 * sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2));
        }
    }
}

void llama_zero_grad(llama_model *m) { memset(m->grads, 0, m->n_params * sizeof(float)); }

static int check_batch(const llama_model *m, const llama_batch *b, size_t *probs, size_t *tt,
                       char *err, size_t errn)
{
    *probs = 0;
    *tt = 0;
    if (b->n_seqs < 1 || b->seq_start[0] != 0 || b->seq_start[b->n_seqs] != b->n_rows) {
        snprintf(err, errn, "malformed batch: %d sequences, %d rows", b->n_seqs, b->n_rows);
        return -1;
    }
    for (int s = 0; s < b->n_seqs; s++) {
        int t = b->seq_start[s + 1] - b->seq_start[s];
        if (t < 1 || t > m->cfg.max_positions) {
            snprintf(err, errn, "sequence %d has %d tokens; this model takes 1 to %d", s, t,
                     m->cfg.max_positions);
            return -1;
        }
        *probs += (size_t)m->cfg.n_heads * (size_t)t * (size_t)t;
        if ((size_t)t * (size_t)t > *tt)
            *tt = (size_t)t * (size_t)t;
    }
    for (int r = 0; r < b->n_rows; r++) {
        if (b->tokens[r] < 0 || b->tokens[r] >= V_(m) || b->target[r] >= V_(m)) {
            snprintf(err, errn, "row %d: token %d or target %d is outside the vocabulary of %d",
                     r, b->tokens[r], b->target[r], V_(m));
            return -1;
        }
        if (b->pos[r] < 0 || b->pos[r] >= m->cfg.max_positions) {
            snprintf(err, errn, "row %d: position %d is outside 0..%d", r, b->pos[r],
                     m->cfg.max_positions - 1);
            return -1;
        }
    }
    return 0;
}

int llama_forward(llama_model *m, const llama_batch *b, float *logp, float *ent, char *err,
                  size_t errn)
{
    size_t probs, tt;
    if (check_batch(m, b, &probs, &tt, err, errn) != 0)
        return -1;
    if (ensure_capacity(m, (size_t)b->n_rows, probs, tt) != 0) {
        snprintf(err, errn, "out of memory for the activations of %d tokens", b->n_rows);
        return -1;
    }
    const int N = b->n_rows, D = D_(m), F = F_(m), V = V_(m), H = m->cfg.n_heads,
              KV = m->cfg.n_kv_heads, HD = HD_(m), QD = QD_(m), KD = KD_(m);
    const attn_shape as = {H, KV, HD, b->n_seqs, b->seq_start};

    embedding_forward(m->res, b->tokens, m->p.embed, N, D);
    for (int l = 0; l < L_(m); l++) {
        const llama_layer *w = &m->p.layers[l];
        llama_layer_acts *a = &m->acts[l];
        float *x = m->res + (size_t)l * N * D, *x_out = m->res + (size_t)(l + 1) * N * D;
        /* attention block */
        rmsnorm_forward(a->xn1, a->rstd1, x, w->attn_norm, N, D, m->cfg.rms_eps);
        matmul_forward(m->tp, a->q, a->xn1, w->wq, N, D, QD, 0);
        matmul_forward(m->tp, a->k, a->xn1, w->wk, N, D, KD, 0);
        matmul_forward(m->tp, a->v, a->xn1, w->wv, N, D, KD, 0);
        rope_forward(a->q, b->pos, m->rope_cos, m->rope_sin, N, H, HD);
        rope_forward(a->k, b->pos, m->rope_cos, m->rope_sin, N, KV, HD);
        attention_forward(m->tp, a->att, a->probs, a->q, a->k, a->v, &as);
        memcpy(a->res_mid, x, (size_t)N * D * sizeof(float));
        matmul_forward(m->tp, a->res_mid, a->att, w->wo, N, QD, D, 1);
        /* MLP block */
        rmsnorm_forward(a->xn2, a->rstd2, a->res_mid, w->mlp_norm, N, D, m->cfg.rms_eps);
        matmul_forward(m->tp, a->gate, a->xn2, w->w_gate, N, D, F, 0);
        matmul_forward(m->tp, a->up, a->xn2, w->w_up, N, D, F, 0);
        swiglu_forward(a->act, a->gate, a->up, (size_t)N * F);
        memcpy(x_out, a->res_mid, (size_t)N * D * sizeof(float));
        matmul_forward(m->tp, x_out, a->act, w->w_down, N, F, D, 1);
    }
    rmsnorm_forward(m->xf, m->rstdf, m->res + (size_t)L_(m) * N * D, m->p.final_norm, N, D,
                    m->cfg.rms_eps);
    matmul_forward(m->tp, m->logits, m->xf, m->p.lm_head, N, D, V, 0);
    logprob_forward(logp, ent, m->logits, b->scale, b->target, N, V);
    return 0;
}

void llama_backward(llama_model *m, const llama_batch *b, const float *dlogp, const float *dent)
{
    const int N = b->n_rows, D = D_(m), F = F_(m), V = V_(m), H = m->cfg.n_heads,
              KV = m->cfg.n_kv_heads, HD = HD_(m), QD = QD_(m), KD = KD_(m);
    const attn_shape as = {H, KV, HD, b->n_seqs, b->seq_start};
    const size_t ND = (size_t)N * D;

    /* head: logits -> final norm; m->dx becomes dL/dx_L */
    logprob_backward(m->dlogits, m->logits, b->scale, b->target, dlogp, dent, N, V);
    memset(m->dxn, 0, ND * sizeof(float));
    matmul_backward(m->tp, m->dxn, m->g.lm_head, m->dlogits, m->xf, m->p.lm_head, N, D, V);
    memset(m->dx, 0, ND * sizeof(float));
    rmsnorm_backward(m->dx, m->g.final_norm, m->dxn, m->res + (size_t)L_(m) * ND,
                     m->p.final_norm, m->rstdf, N, D);

    for (int l = L_(m) - 1; l >= 0; l--) {
        const llama_layer *w = &m->p.layers[l];
        const llama_layer *gw = &m->g.layers[l];
        llama_layer_acts *a = &m->acts[l];
        const float *x = m->res + (size_t)l * ND;
        /* MLP block: x_out = m + act Wd^T; dx holds dL/dx_out, and becomes dL/dm */
        memset(m->dact, 0, (size_t)N * F * sizeof(float));
        matmul_backward(m->tp, m->dact, gw->w_down, m->dx, a->act, w->w_down, N, F, D);
        memset(m->dgate, 0, (size_t)N * F * sizeof(float));
        memset(m->dup, 0, (size_t)N * F * sizeof(float));
        swiglu_backward(m->dgate, m->dup, m->dact, a->gate, a->up, (size_t)N * F);
        memset(m->dxn, 0, ND * sizeof(float));
        matmul_backward(m->tp, m->dxn, gw->w_gate, m->dgate, a->xn2, w->w_gate, N, D, F);
        matmul_backward(m->tp, m->dxn, gw->w_up, m->dup, a->xn2, w->w_up, N, D, F);
        rmsnorm_backward(m->dx, gw->mlp_norm, m->dxn, a->res_mid, w->mlp_norm, a->rstd2, N, D);
        /* attention block: m = x + att Wo^T; dx becomes dL/dx */
        memset(m->datt, 0, (size_t)N * QD * sizeof(float));
        matmul_backward(m->tp, m->datt, gw->wo, m->dx, a->att, w->wo, N, QD, D);
        memset(m->dk, 0, (size_t)N * KD * sizeof(float));
        memset(m->dv, 0, (size_t)N * KD * sizeof(float));
        attention_backward(m->tp, m->dq, m->dk, m->dv, m->datt, a->probs, a->q, a->k, a->v, &as,
                           m->dscratch, m->cap_scratch / (size_t)pool_size(m->tp));
        rope_backward(m->dq, b->pos, m->rope_cos, m->rope_sin, N, H, HD);
        rope_backward(m->dk, b->pos, m->rope_cos, m->rope_sin, N, KV, HD);
        memset(m->dxn, 0, ND * sizeof(float));
        matmul_backward(m->tp, m->dxn, gw->wq, m->dq, a->xn1, w->wq, N, D, QD);
        matmul_backward(m->tp, m->dxn, gw->wk, m->dk, a->xn1, w->wk, N, D, KD);
        matmul_backward(m->tp, m->dxn, gw->wv, m->dv, a->xn1, w->wv, N, D, KD);
        rmsnorm_backward(m->dx, gw->attn_norm, m->dxn, x, w->attn_norm, a->rstd1, N, D);
    }
    embedding_backward(m->g.embed, b->tokens, m->dx, N, D);
}
