/*
 * model.c: the decoder's forward and backward passes over a packed batch
 * (shapes in llama.h), layer by layer through layers.h and arch.h:
 *
 *   x_0 = E[tokens]                       (GPT-2: + wpe[positions])
 *   for each layer:  h = norm(x) ;  q, k, v = h Wq + bq, h Wk + bk, h Wv + bv
 *                    rope(q, k)           (not GPT-2)
 *                    m = x + attention(q, k, v) Wo + bo
 *                    h2 = norm(m) ;  x' = m + mlp_in(h2) Wd + bd
 *   logits = norm(x_L) Wlm^T ;  logp, entropy = logprob(logits, targets)
 *
 * norm is RMSNorm, or LayerNorm for GPT-2; mlp_in is silu(h2 Wg) ⊙ h2 Wu,
 * or gelu(h2 Wfc + bfc) for GPT-2; biases exist where the architecture has
 * them (NULL views are skipped). Backward walks the same steps in reverse;
 * residual connections add the gradient of both branches, which is why
 * every layer backward accumulates.
 */
#include "decoder/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/arch.h"
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
    const int rope = c->arch != ARCH_GPT2;
    if (rope) {
        m->rope_cos = malloc((size_t)c->max_positions * (size_t)(hd / 2) * sizeof(float));
        m->rope_sin = malloc((size_t)c->max_positions * (size_t)(hd / 2) * sizeof(float));
    }
    m->acts = calloc((size_t)c->n_layers, sizeof *m->acts);
    if (!m->params || !m->grads || (rope && (!m->rope_cos || !m->rope_sin)) || !m->acts ||
        llama_params_bind(&m->p, c, m->params) != 0 || llama_params_bind(&m->g, c, m->grads) != 0) {
        llama_model_free(m);
        snprintf(err, errn, "out of memory for a model of %zu parameters", llama_param_count(c));
        return -1;
    }
    if (rope && c->rope_factor != 0) {
        double *inv_freq = malloc((size_t)(hd / 2) * sizeof *inv_freq);
        if (!inv_freq) {
            llama_model_free(m);
            snprintf(err, errn, "out of memory for the RoPE tables");
            return -1;
        }
        rope_llama3_inv_freq(inv_freq, hd, c->rope_theta, c->rope_factor, c->rope_low_freq,
                             c->rope_high_freq, c->rope_orig_max_pos);
        rope_tables_from(m->rope_cos, m->rope_sin, c->max_positions, hd, inv_freq);
        free(inv_freq);
    } else if (rope) {
        rope_tables(m->rope_cos, m->rope_sin, c->max_positions, hd, c->rope_theta);
    }
    return 0;
}

int llama_check_finite(const llama_model *m, char *err, size_t errn)
{
    llama_tensor_info t;
    for (size_t i = 0; i < llama_tensor_count(&m->cfg); i++) {
        llama_tensor_describe(&m->cfg, i, &t);
        const float *w = m->params + t.offset;
        for (size_t k = 0; k < t.numel; k++)
            if (!isfinite(w[k])) {
                snprintf(err, errn, "tensor %s holds %s at weight %zu of %zu: a corrupt file, or "
                         "the checkpoint of a run that diverged; load an earlier checkpoint",
                         t.name, isnan(w[k]) ? "NaN" : "an infinity", k, t.numel);
                return -1;
            }
    }
    return 0;
}

static void free_acts(llama_model *m)
{
    free(m->res);
    for (int l = 0; m->acts && l < L_(m); l++) {
        llama_layer_acts *a = &m->acts[l];
        free(a->xn1);
        free(a->mean1);
        free(a->rstd1);
        free(a->q);
        free(a->k);
        free(a->v);
        free(a->probs);
        free(a->att);
        free(a->res_mid);
        free(a->xn2);
        free(a->mean2);
        free(a->rstd2);
        free(a->gate);
        free(a->up);
        free(a->act);
        memset(a, 0, sizeof *a);
    }
    float **bufs[] = {&m->xf, &m->meanf, &m->rstdf, &m->logits, &m->dx, &m->dxn, &m->dq, &m->dk, &m->dv,
                      &m->datt, &m->dgate, &m->dup, &m->dact, &m->dlogits, &m->dscratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(*bufs[i]);
        *bufs[i] = NULL;
    }
    void *heads[] = {m->head_row, m->h_target, m->h_scale, m->h_logp, m->h_ent, m->h_dlogp,
                     m->h_dent};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        free(heads[i]);
    m->head_row = m->h_target = NULL;
    m->h_scale = m->h_logp = m->h_ent = m->h_dlogp = m->h_dent = NULL;
    m->res = NULL;
    m->cap_rows = m->cap_probs = m->cap_scratch = 0;
}

/* n bf16 workspaces, or NULL (out of memory). */
static gemm_ws **ws_new(int n)
{
    gemm_ws **ws = calloc((size_t)n, sizeof *ws);
    for (int i = 0; ws && i < n; i++)
        if (!(ws[i] = gemm_ws_new())) {
            while (i-- > 0)
                gemm_ws_free(ws[i]);
            free(ws);
            ws = NULL;
        }
    return ws;
}

static void ws_free(gemm_ws **ws, int n)
{
    for (int i = 0; ws && i < n; i++)
        gemm_ws_free(ws[i]);
    free(ws);
}

int llama_model_set_bf16(llama_model *m, int on)
{
    if (!on || m->gx.ws) {
        if (!on) {
            ws_free(m->gx.ws, pool_size(m->gx.tp));
            m->gx.ws = NULL;
        }
        return 0;
    }
    if (!gemm_bf16_available() || !(m->gx.ws = ws_new(pool_size(m->gx.tp))))
        return -1;
    return 0;
}

int llama_model_set_threads(llama_model *m, int n)
{
    pool *p = NULL;
    gemm_ws **ws = NULL;
    if (n > 1 && !(p = pool_new(n)))
        return -1;
    if (m->gx.ws && !(ws = ws_new(n))) { /* bf16: a workspace per worker */
        pool_free(p);
        return -1;
    }
    if (m->gx.ws) {
        ws_free(m->gx.ws, pool_size(m->gx.tp));
        m->gx.ws = ws;
    }
    pool_free(m->gx.tp);
    m->gx.tp = p;
    m->cap_scratch = 0; /* attention backward scratch is per worker */
    free(m->dscratch);
    m->dscratch = NULL;
    return 0;
}

void llama_model_free(llama_model *m)
{
    ws_free(m->gx.ws, pool_size(m->gx.tp));
    pool_free(m->gx.tp);
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
    scratch *= (size_t)pool_size(m->gx.tp); /* one T*T block per worker */
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
    const int gated = m->cfg.arch != ARCH_GPT2; /* SwiGLU needs gate and dgate */
#define ALLOC(p, n) ((p) = malloc((n) * sizeof(float))) != NULL
    int ok = ALLOC(m->res, (L + 1) * rows * D);
    for (size_t l = 0; ok && l < L; l++) {
        llama_layer_acts *a = &m->acts[l];
        ok = ALLOC(a->xn1, rows * D) && ALLOC(a->mean1, rows) && ALLOC(a->rstd1, rows) &&
             ALLOC(a->q, rows * QD) && ALLOC(a->k, rows * KD) && ALLOC(a->v, rows * KD) &&
             ALLOC(a->probs, probs ? probs : 1) && ALLOC(a->att, rows * QD) &&
             ALLOC(a->res_mid, rows * D) && ALLOC(a->xn2, rows * D) && ALLOC(a->mean2, rows) &&
             ALLOC(a->rstd2, rows) && (!gated || ALLOC(a->gate, rows * F)) &&
             ALLOC(a->up, rows * F) && ALLOC(a->act, rows * F);
    }
    ok = ok && ALLOC(m->xf, rows * D) && ALLOC(m->meanf, rows) && ALLOC(m->rstdf, rows) &&
         ALLOC(m->logits, rows * V) && ALLOC(m->dx, rows * D) && ALLOC(m->dxn, rows * D) &&
         ALLOC(m->dq, rows * QD) && ALLOC(m->dk, rows * KD) && ALLOC(m->dv, rows * KD) &&
         ALLOC(m->datt, rows * QD) && (!gated || ALLOC(m->dgate, rows * F)) &&
         ALLOC(m->dup, rows * F) && ALLOC(m->dact, rows * F) && ALLOC(m->dlogits, rows * V) &&
         ALLOC(m->dscratch, scratch ? scratch : 1) && ALLOC(m->h_scale, rows) &&
         ALLOC(m->h_logp, rows) && ALLOC(m->h_ent, rows) && ALLOC(m->h_dlogp, rows) &&
         ALLOC(m->h_dent, rows) && (m->head_row = malloc(rows * sizeof(int32_t))) &&
         (m->h_target = malloc(rows * sizeof(int32_t)));
#undef ALLOC
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
            if (t.kind != TENSOR_MATRIX) {
                w[j] = t.kind == TENSOR_NORM ? 1.0f : 0.0f; /* norms start as the identity */
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
    if (!b->seg0 != !b->shared) {
        snprintf(err, errn, "malformed batch: branches need both shared and seg0");
        return -1;
    }
    for (int s = 0; s < b->n_seqs; s++) {
        int t = b->seq_start[s + 1] - b->seq_start[s];
        /* a sequence with branches may be longer than the context: its
         * positions, checked below, are what must fit */
        if (t < 1 || (!b->seg0 && t > m->cfg.max_positions)) {
            snprintf(err, errn, "sequence %d has %d tokens; this model takes 1 to %d", s, t,
                     m->cfg.max_positions);
            return -1;
        }
        if (b->seg0) {
            if (b->shared[s] < 0 || b->shared[s] > t) {
                snprintf(err, errn, "sequence %d: a prefix of %d rows in %d", s, b->shared[s], t);
                return -1;
            }
            for (int i = 0; i < t; i++) {
                int s0 = b->seg0[b->seq_start[s] + i];
                if (s0 < 0 || s0 > i) {
                    snprintf(err, errn, "sequence %d, row %d: its branch starts at row %d", s,
                             i, s0);
                    return -1;
                }
            }
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

/* The head over the rows b->head selects: their normed rows are moved to
 * the front of xf (in row order, so a forward copy never overwrites an
 * unread row), then logits[n_head, V] = xf[:n_head] Wlm^T and the log-probs,
 * written back to their rows (0 elsewhere). */
static void head_forward(llama_model *m, const llama_batch *b, float *logp, float *ent)
{
    const int N = b->n_rows, D = D_(m), V = V_(m);
    int nh = 0;
    for (int r = 0, s = 0; r < N; r++) {
        while (b->seq_start[s + 1] <= r) /* r's sequence */
            s++;
        if (b->head == LLAMA_HEAD_ALL || (b->head == LLAMA_HEAD_TARGETS && b->target[r] >= 0) ||
            (b->head == LLAMA_HEAD_LAST && r == b->seq_start[s + 1] - 1)) {
            m->head_row[nh] = r;
            m->h_target[nh] = b->target[r];
            m->h_scale[nh] = b->scale ? b->scale[r] : 1.0f;
            if (r != nh)
                memcpy(m->xf + (size_t)nh * D, m->xf + (size_t)r * D, (size_t)D * sizeof(float));
            nh++;
        }
    }
    m->n_head = nh;
    if (nh) {
        matmul_forward(&m->gx, m->logits, m->xf, m->p.lm_head, nh, D, V, 0);
        logprob_forward(m->gx.tp, m->h_logp, ent ? m->h_ent : NULL, m->logits, m->h_scale,
                        m->h_target, nh, V);
    }
    memset(logp, 0, (size_t)N * sizeof *logp);
    if (ent)
        memset(ent, 0, (size_t)N * sizeof *ent);
    for (int i = 0; i < nh; i++) {
        logp[m->head_row[i]] = m->h_logp[i];
        if (ent)
            ent[m->head_row[i]] = m->h_ent[i];
    }
}

/* The head's backward: dxn[N, D] = the gradient at the final norm's output,
 * the head rows' put back in place (0 elsewhere); lm_head's gradient from
 * the moved rows of xf. */
static void head_backward(llama_model *m, const llama_batch *b, const float *dlogp,
                          const float *dent)
{
    const int N = b->n_rows, D = D_(m), V = V_(m), nh = m->n_head;
    for (int i = 0; i < nh; i++) {
        m->h_dlogp[i] = dlogp[m->head_row[i]];
        m->h_dent[i] = dent ? dent[m->head_row[i]] : 0.0f;
    }
    memset(m->dxn, 0, (size_t)N * D * sizeof(float));
    if (nh) {
        logprob_backward(m->gx.tp, m->dlogits, m->logits, m->h_scale, m->h_target, m->h_dlogp,
                         dent ? m->h_dent : NULL, nh, V);
        matmul_backward(&m->gx, m->dxn, m->g.lm_head, m->dlogits, m->xf, m->p.lm_head, nh, D,
                        V);
    }
    /* backwards: row i goes to head_row[i] >= i, past every row still to move */
    for (int i = nh - 1; i >= 0; i--) {
        int r = m->head_row[i];
        if (r == i)
            continue;
        memcpy(m->dxn + (size_t)r * D, m->dxn + (size_t)i * D, (size_t)D * sizeof(float));
        memset(m->dxn + (size_t)i * D, 0, (size_t)D * sizeof(float));
    }
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
    const llama_config *c = &m->cfg;
    const int N = b->n_rows, D = D_(m), F = F_(m), H = c->n_heads, KV = c->n_kv_heads,
              HD = HD_(m), QD = QD_(m);
    const attn_shape as = {H, KV, HD, b->n_seqs, b->seq_start, b->shared, b->seg0};

    embedding_forward(m->res, b->tokens, m->p.embed, N, D);
    for (int r = 0; b->row_input && r < N; r++)
        if (b->row_input[r])
            memcpy(m->res + (size_t)r * D, b->row_input[r], (size_t)D * sizeof(float));
    if (m->p.pos_embed)
        embedding_add_forward(m->res, b->pos, m->p.pos_embed, N, D);
    for (int l = 0; l < L_(m); l++) {
        const llama_layer *w = &m->p.layers[l];
        llama_layer_acts *a = &m->acts[l];
        float *x = m->res + (size_t)l * N * D, *x_out = m->res + (size_t)(l + 1) * N * D;
        /* attention block */
        arch_norm_forward(m->gx.tp, c, a->xn1, a->mean1, a->rstd1, x, w->attn_norm,
                          w->attn_norm_b, N);
        arch_qkv_forward(&m->gx, c, w, a->q, a->k, a->v, a->xn1, b->pos, m->rope_cos, m->rope_sin,
                         N);
        attention_forward(m->gx.tp, a->att, a->probs, a->q, a->k, a->v, &as);
        memcpy(a->res_mid, x, (size_t)N * D * sizeof(float));
        arch_linear_forward(&m->gx, c, a->res_mid, a->att, w->wo, w->bo, D, N, QD, D, 1);
        /* MLP block */
        arch_norm_forward(m->gx.tp, c, a->xn2, a->mean2, a->rstd2, a->res_mid, w->mlp_norm,
                          w->mlp_norm_b, N);
        arch_mlp_in_forward(&m->gx, c, w, a->gate, a->up, a->act, a->xn2, N);
        memcpy(x_out, a->res_mid, (size_t)N * D * sizeof(float));
        arch_linear_forward(&m->gx, c, x_out, a->act, w->w_down, w->b_down, D, N, F, D, 1);
    }
    arch_norm_forward(m->gx.tp, c, m->xf, m->meanf, m->rstdf, m->res + (size_t)L_(m) * N * D,
                      m->p.final_norm, m->p.final_norm_b, N);
    head_forward(m, b, logp, ent);
    return 0;
}

void llama_backward(llama_model *m, const llama_batch *b, const float *dlogp, const float *dent)
{
    const llama_config *c = &m->cfg;
    const int N = b->n_rows, D = D_(m), F = F_(m), H = c->n_heads, KV = c->n_kv_heads,
              HD = HD_(m), QD = QD_(m), KD = KD_(m), QLD = llama_qkv_ld(c);
    const int rope = c->arch != ARCH_GPT2;
    const attn_shape as = {H, KV, HD, b->n_seqs, b->seq_start, b->shared, b->seg0};
    const size_t ND = (size_t)N * D;

    /* head: logits -> final norm; m->dx becomes dL/dx_L */
    head_backward(m, b, dlogp, dent);
    memset(m->dx, 0, ND * sizeof(float));
    arch_norm_backward(m->gx.tp, c, m->dx, m->g.final_norm, m->g.final_norm_b, m->dxn,
                       m->res + (size_t)L_(m) * ND, m->p.final_norm, m->meanf, m->rstdf, N);

    for (int l = L_(m) - 1; l >= 0; l--) {
        const llama_layer *w = &m->p.layers[l];
        const llama_layer *gw = &m->g.layers[l];
        llama_layer_acts *a = &m->acts[l];
        const float *x = m->res + (size_t)l * ND;
        /* MLP block: x_out = m + act Wd + bd; dx holds dL/dx_out, and becomes dL/dm */
        memset(m->dact, 0, (size_t)N * F * sizeof(float));
        arch_linear_backward(&m->gx, c, m->dact, gw->w_down, gw->b_down, m->dx, a->act, w->w_down,
                             D, N, F, D);
        memset(m->dxn, 0, ND * sizeof(float));
        arch_mlp_in_backward(&m->gx, c, w, gw, m->dxn, m->dgate, m->dup, m->dact, a->gate, a->up,
                             a->xn2, N);
        arch_norm_backward(m->gx.tp, c, m->dx, gw->mlp_norm, gw->mlp_norm_b, m->dxn, a->res_mid,
                           w->mlp_norm, a->mean2, a->rstd2, N);
        /* attention block: m = x + att Wo + bo; dx becomes dL/dx */
        memset(m->datt, 0, (size_t)N * QD * sizeof(float));
        arch_linear_backward(&m->gx, c, m->datt, gw->wo, gw->bo, m->dx, a->att, w->wo, D, N, QD,
                             D);
        memset(m->dk, 0, (size_t)N * KD * sizeof(float));
        memset(m->dv, 0, (size_t)N * KD * sizeof(float));
        attention_backward(m->gx.tp, m->dq, m->dk, m->dv, m->datt, a->probs, a->q, a->k, a->v, &as,
                           m->dscratch, m->cap_scratch / (size_t)pool_size(m->gx.tp));
        if (rope) {
            rope_backward(m->dq, b->pos, m->rope_cos, m->rope_sin, N, H, HD);
            rope_backward(m->dk, b->pos, m->rope_cos, m->rope_sin, N, KV, HD);
        }
        memset(m->dxn, 0, ND * sizeof(float));
        arch_linear_backward(&m->gx, c, m->dxn, gw->wq, gw->bq, m->dq, a->xn1, w->wq, QLD, N, D,
                             QD);
        arch_linear_backward(&m->gx, c, m->dxn, gw->wk, gw->bk, m->dk, a->xn1, w->wk, QLD, N, D,
                             KD);
        arch_linear_backward(&m->gx, c, m->dxn, gw->wv, gw->bv, m->dv, a->xn1, w->wv, QLD, N, D,
                             KD);
        arch_norm_backward(m->gx.tp, c, m->dx, gw->attn_norm, gw->attn_norm_b, m->dxn, x,
                           w->attn_norm, a->mean1, a->rstd1, N);
    }
    if (!b->row_input)
        embedding_backward(m->g.embed, b->tokens, m->dx, N, D);
    else /* a row given as a vector leaves the embedding alone: m->dx holds its gradient */
        for (int r = 0; r < N; r++)
            if (!b->row_input[r])
                embedding_backward(m->g.embed, b->tokens + r, m->dx + (size_t)r * D, 1, D);
    if (m->g.pos_embed)
        embedding_backward(m->g.pos_embed, b->pos, m->dx, N, D);
}
