/*
 * generate.c: batched generation with a KV cache.
 *
 * The decoder of gen_driver.c's sampling loop, on the CPU:
 *
 * 1. Prefill: the prompts gen_driver.c admits go through one packed forward
 *    pass (model.c); each layer's keys and values of a prompt's rows are
 *    kept once, shared by all the samples of that prompt (a GRPO group's G
 *    responses read one copy), and the last row's logits seed sampling.
 * 2. Decode: the samples in the slots advance together, one row each:
 *      x = E[token] (GPT-2: + wpe[pos]);
 *      per layer: h = norm(x); q, k, v = h W + b; rope(q, k, pos) (not GPT-2)
 *                 cache[pos] = k, v;  a = softmax(q·K^T / sqrt(HD)) V over the
 *                 prompt's shared rows and then the sample's own; x += a Wo + bo; x += mlp(norm(x))
 *      logits = norm(x) Wlm^T
 *    with the architecture's norm, linear layers and MLP (arch.h), as in
 *    model.c. The linear layers run as B-row GEMMs, and attention as two
 *    GEMVs per row and head over that row's own cache.
 */
#include "generation/generate.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/arch.h"
#include "tern/rng.h"

/* ---- sampling ---------------------------------------------------------- */

static uint64_t next_u64(uint64_t *state) { return tern_splitmix64(state); }
static double next_uniform(uint64_t *state) { return (double)(next_u64(state) >> 11) * 0x1.0p-53; }

/* qsort_r comparator: ids by probability, descending; ties: lower id first */
static int by_prob_desc(const void *a, const void *b, void *probs)
{
    const float *p = probs;
    int i = *(const int *)a, j = *(const int *)b;
    if (p[i] != p[j])
        return p[i] > p[j] ? -1 : 1;
    return i - j;
}

int32_t sample_token(const float *logits, int v, const gen_params *p, uint64_t *rng_state,
                     float *logprob, float *work, int *idx)
{
    if (p->temperature <= 0) {
        int best = 0;
        for (int j = 1; j < v; j++)
            if (logits[j] > logits[best])
                best = j;
        *logprob = 0.0f; /* a point mass */
        return best;
    }
    /* probs = softmax(logits / T), in double for the sums */
    float *probs = work;
    float inv_t = 1.0f / p->temperature, m = logits[0] * inv_t;
    for (int j = 1; j < v; j++)
        m = logits[j] * inv_t > m ? logits[j] * inv_t : m;
    double z = 0;
    for (int j = 0; j < v; j++) {
        probs[j] = expf(logits[j] * inv_t - m);
        z += probs[j];
    }
    for (int j = 0; j < v; j++)
        probs[j] = (float)(probs[j] / z);

    int kept = v;
    int truncate = (p->top_k > 0 && p->top_k < v) || p->top_p < 1.0f;
    if (truncate) {
        for (int j = 0; j < v; j++)
            idx[j] = j;
        qsort_r(idx, (size_t)v, sizeof *idx, by_prob_desc, probs);
        if (p->top_k > 0 && p->top_k < kept)
            kept = p->top_k;
        if (p->top_p < 1.0f) {
            double cum = 0;
            int n = 0;
            while (n < kept && (n == 0 || cum < p->top_p))
                cum += probs[idx[n++]];
            kept = n;
        }
    }
    /* draw from the kept set, renormalised */
    double mass = 0;
    for (int n = 0; n < kept; n++)
        mass += probs[truncate ? idx[n] : n];
    double u = next_uniform(rng_state) * mass, acc = 0;
    int choice = truncate ? idx[kept - 1] : kept - 1;
    for (int n = 0; n < kept; n++) {
        int j = truncate ? idx[n] : n;
        acc += probs[j];
        if (u < acc) {
            choice = j;
            break;
        }
    }
    *logprob = (float)(log(probs[choice]) - log(mass));
    return choice;
}

void top_tokens(const float *logits, int v, float temperature, int n, int32_t *ids, float *lps)
{
    const float inv_t = temperature > 0 ? 1.0f / temperature : 1.0f;
    /* the n largest logits by insertion into ids[0..have), descending; a
     * later id enters only when strictly larger, so ties keep the lower id */
    int have = 0;
    float m = logits[0] * inv_t;
    for (int j = 0; j < v; j++) {
        const float l = logits[j];
        m = l * inv_t > m ? l * inv_t : m;
        if (have == n && l <= logits[ids[n - 1]])
            continue;
        int at = have < n ? have++ : n - 1;
        while (at > 0 && logits[ids[at - 1]] < l) {
            ids[at] = ids[at - 1];
            at--;
        }
        ids[at] = j;
    }
    /* log softmax: l / T - (m + log sum_j exp(l_j / T - m)) */
    double z = 0;
    for (int j = 0; j < v; j++)
        z += exp((double)(logits[j] * inv_t - m));
    const double log_z = (double)m + log(z);
    for (int i = 0; i < n; i++)
        lps[i] = (float)((double)(logits[ids[i]] * inv_t) - log_z);
}

/* ---- the decode step ---------------------------------------------------- */

/* The KV cache: a prompt's keys and values once, shared by all its samples
 * (prefilled once, never copied), and each slot's own rows after it:
 *
 *   pk, pv  [L, prompt rows, KD]   prompt i's rows as all->seq_start
 *   kc, vc  [slots, L, Pn, KD]     the slot's position p at p - plen(slot)
 *
 * Pn = P - the shortest prompt: what the longest-lived sample can add. A
 * slot serves one sample at a time (gen_driver.c), of prompt
 * slot_prompt[slot]. */
typedef struct decoder {
    int slots, P, Pn, prompt_rows;
    const llama_batch *all;     /* the call's prompts (gen_driver.c keeps them) */
    float *pk, *pv, *kc, *vc;
    int32_t *slot_prompt;       /* [slots] */
    float *logits;              /* [slots, V] */
    float *x, *xn, *q, *k, *v, *att, *gate, *up, *act, *mean, *rstd, *scores;
    int32_t *tok, *pos, *row_slot;
} decoder;

static size_t kv_dim(const llama_model *m)
{
    return (size_t)m->cfg.n_kv_heads * (m->cfg.hidden_size / m->cfg.n_heads);
}

static int prompt_len(const decoder *d, int i)
{
    return d->all->seq_start[i + 1] - d->all->seq_start[i];
}

/* Slot k's own row for position p (>= its prompt's length) of layer l. */
static float *own_at(const decoder *d, const llama_model *m, float *base, int k, int l, int p)
{
    const int plen = prompt_len(d, d->slot_prompt[k]);
    return base + (((size_t)k * m->cfg.n_layers + l) * d->Pn + (size_t)(p - plen)) * kv_dim(m);
}

/* Prompt i's first row of layer l. */
static float *prompt_at(const decoder *d, const llama_model *m, float *base, int i, int l)
{
    return base + ((size_t)l * d->prompt_rows + (size_t)d->all->seq_start[i]) * kv_dim(m);
}

typedef struct row_attn_job {
    const llama_model *m;
    decoder *d;
    int l, B;
} row_attn_job;

/* Per decode row: store its k, v in its sample's cache and attend over its
 * prompt's rows (shared) and then its own. Rows are spread over the pool;
 * each worker has its own score buffer. */
static void row_attention(void *arg, int wk, int nw)
{
    const row_attn_job *j = arg;
    const llama_model *m = j->m;
    decoder *d = j->d;
    const int H = m->cfg.n_heads, KV = m->cfg.n_kv_heads, HD = m->cfg.hidden_size / H;
    const int QD = H * HD, KD = KV * HD, group = H / KV;
    const float scale = 1.0f / sqrtf((float)HD);
    float *scores = d->scores + (size_t)wk * d->P;
    int lo, hi;
    pool_share(j->B, wk, nw, &lo, &hi);
    for (int r = lo; r < hi; r++) {
        const int k = d->row_slot[r], p = d->pos[r], i = d->slot_prompt[k];
        const int plen = prompt_len(d, i), own = p - plen + 1; /* own rows */
        memcpy(own_at(d, m, d->kc, k, j->l, p), d->k + (size_t)r * KD, (size_t)KD * sizeof(float));
        memcpy(own_at(d, m, d->vc, k, j->l, p), d->v + (size_t)r * KD, (size_t)KD * sizeof(float));
        const float *pk = prompt_at(d, m, d->pk, i, j->l), *pv = prompt_at(d, m, d->pv, i, j->l);
        const float *kown = own_at(d, m, d->kc, k, j->l, plen);
        const float *vown = own_at(d, m, d->vc, k, j->l, plen);
        for (int h = 0; h < H; h++) {
            const int kv = h / group;
            const float *qh = d->q + (size_t)r * QD + h * HD;
            float *ah = d->att + (size_t)r * QD + h * HD;
            /* scores[0..p] = K_kv q_h / sqrt(HD) over the prompt's rows, then the
             * sample's own; softmax; att_h = V_kv^T scores, the same two parts */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, plen, HD, scale, pk + kv * HD, KD, qh, 1,
                        0.0f, scores, 1);
            cblas_sgemv(CblasRowMajor, CblasNoTrans, own, HD, scale, kown + kv * HD, KD, qh, 1,
                        0.0f, scores + plen, 1);
            float mx = scores[0];
            for (int t = 1; t <= p; t++)
                mx = scores[t] > mx ? scores[t] : mx;
            float sum = 0;
            for (int t = 0; t <= p; t++) {
                scores[t] = expf(scores[t] - mx);
                sum += scores[t];
            }
            cblas_sgemv(CblasRowMajor, CblasTrans, plen, HD, 1.0f / sum, pv + kv * HD, KD, scores,
                        1, 0.0f, ah, 1);
            cblas_sgemv(CblasRowMajor, CblasTrans, own, HD, 1.0f / sum, vown + kv * HD, KD,
                        scores + plen, 1, 1.0f, ah, 1);
        }
    }
}

/* Advance B rows (row r is slot row_slot[r] at position pos[r] with input
 * token tok[r]); writes d->logits[B, V]. */
static void decode_step(llama_model *m, decoder *d, int B)
{
    const llama_config *c = &m->cfg;
    const int D = c->hidden_size, F = c->intermediate_size, V = c->vocab_size;
    const int QD = c->n_heads * (D / c->n_heads);
    embedding_forward(d->x, d->tok, m->p.embed, B, D);
    if (m->p.pos_embed)
        embedding_add_forward(d->x, d->pos, m->p.pos_embed, B, D);
    for (int l = 0; l < c->n_layers; l++) {
        const llama_layer *w = &m->p.layers[l];
        arch_norm_forward(m->gx.tp, c, d->xn, d->mean, d->rstd, d->x, w->attn_norm,
                          w->attn_norm_b, B);
        arch_qkv_forward(&m->gx, c, w, d->q, d->k, d->v, d->xn, d->pos, m->rope_cos, m->rope_sin,
                         B);
        row_attn_job job = {m, d, l, B};
        pool_run(m->gx.tp, row_attention, &job);
        arch_linear_forward(&m->gx, c, d->x, d->att, w->wo, w->bo, D, B, QD, D, 1);
        arch_norm_forward(m->gx.tp, c, d->xn, d->mean, d->rstd, d->x, w->mlp_norm,
                          w->mlp_norm_b, B);
        arch_mlp_in_forward(&m->gx, c, w, d->gate, d->up, d->act, d->xn, B);
        arch_linear_forward(&m->gx, c, d->x, d->act, w->w_down, w->b_down, D, B, F, D, 1);
    }
    arch_norm_forward(m->gx.tp, c, d->xn, d->mean, d->rstd, d->x, m->p.final_norm,
                      m->p.final_norm_b, B);
    matmul_forward(&m->gx, d->logits, d->xn, m->p.lm_head, B, D, V, 0);
}

static void decoder_free(decoder *d)
{
    void *bufs[] = {d->pk, d->pv, d->kc, d->vc, d->slot_prompt, d->logits, d->x, d->xn, d->q,
                    d->k, d->v, d->att, d->gate, d->up, d->act, d->mean, d->rstd, d->scores,
                    d->tok, d->pos, d->row_slot};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    memset(d, 0, sizeof *d);
}

/* A decoder for the prompts of `all` and `slots` samples at once, with P
 * positions each, `own` of them after the prompt. */
static int decoder_init(decoder *d, const llama_model *m, const llama_batch *all, int slots,
                        int P, int own)
{
    memset(d, 0, sizeof *d);
    size_t D = (size_t)m->cfg.hidden_size, F = (size_t)m->cfg.intermediate_size,
           HD = D / (size_t)m->cfg.n_heads,
           QD = (size_t)m->cfg.n_heads * HD, KD = kv_dim(m),
           L = (size_t)m->cfg.n_layers, s = (size_t)slots, V = (size_t)m->cfg.vocab_size;
    d->slots = slots;
    d->P = P;
    d->Pn = own;
    d->prompt_rows = all->n_rows;
    d->all = all;
    d->pk = malloc(L * (size_t)all->n_rows * KD * sizeof(float));
    d->pv = malloc(L * (size_t)all->n_rows * KD * sizeof(float));
    d->kc = malloc(s * L * (size_t)d->Pn * KD * sizeof(float));
    d->vc = malloc(s * L * (size_t)d->Pn * KD * sizeof(float));
    d->slot_prompt = malloc(s * sizeof(int32_t));
    d->logits = malloc(s * V * sizeof(float));
    d->x = malloc(s * D * sizeof(float));
    d->xn = malloc(s * D * sizeof(float));
    d->q = malloc(s * QD * sizeof(float));
    d->k = malloc(s * KD * sizeof(float));
    d->v = malloc(s * KD * sizeof(float));
    d->att = malloc(s * QD * sizeof(float));
    d->gate = malloc(s * F * sizeof(float));
    d->up = malloc(s * F * sizeof(float));
    d->act = malloc(s * F * sizeof(float));
    d->mean = malloc(s * sizeof(float));
    d->rstd = malloc(s * sizeof(float));
    d->scores = malloc((size_t)P * (size_t)pool_size(m->gx.tp) * sizeof(float));
    d->tok = malloc(s * sizeof(int32_t));
    d->pos = malloc(s * sizeof(int32_t));
    d->row_slot = malloc(s * sizeof(int32_t));
    if (!d->pk || !d->pv || !d->kc || !d->vc || !d->slot_prompt || !d->logits || !d->x ||
        !d->xn || !d->q || !d->k || !d->v || !d->att || !d->gate || !d->up || !d->act ||
        !d->mean || !d->rstd || !d->scores || !d->tok || !d->pos || !d->row_slot) {
        decoder_free(d);
        return -1;
    }
    return 0;
}

/* ---- the CPU backend of gen_driver.c ------------------------------------ */

typedef struct cpu_gen {
    llama_model *m;
    decoder d;
    int have_d;
} cpu_gen;

/* Prompts go through the model this many rows at a time (whole prompts, at
 * least one): a forward pass keeps every row's activations, about 1.3 MB a
 * row for a 135M model, in buffers the instance keeps, and an eval's 200
 * prompts in one pass took 12 GB. 512 rows are enough for the products to
 * run at full speed. */
#define PREFILL_ROWS 512

static int cpu_open(void *self, const llama_batch *all, int slots, int P, int own,
                    float **logits, char *err, size_t errn)
{
    cpu_gen *g = self;
    if (decoder_init(&g->d, g->m, all, slots, P, own) != 0) {
        snprintf(err, errn, "out of memory for decoding %d samples at once over %d positions "
                 "(model setting decode_rows caps the samples)", slots, P);
        return -1;
    }
    g->have_d = 1;
    *logits = g->d.logits;
    return 0;
}

static int cpu_prefill(void *self, int i0, int i1, const int32_t *sample_prompt,
                       const int32_t *slot, int n, char *err, size_t errn)
{
    cpu_gen *g = self;
    llama_model *m = g->m;
    decoder *d = &g->d;
    const llama_batch *b = d->all;
    const int V = m->cfg.vocab_size, L = m->cfg.n_layers;
    const size_t KD = kv_dim(m);
    float *lp = malloc((size_t)(b->seq_start[i1] - b->seq_start[i0]) * sizeof *lp);
    int32_t *start = malloc(((size_t)(i1 - i0) + 1) * sizeof *start);
    if (!lp || !start) {
        free(lp), free(start);
        snprintf(err, errn, "out of memory for prefilling %d prompts", i1 - i0);
        return -1;
    }
    for (int k = 0; k < n; k++)
        d->slot_prompt[slot[k]] = sample_prompt[k];
    int rc = 0;
    for (int c0 = i0, c1; c0 < i1 && rc == 0; c0 = c1) {
        /* prompts [c0, c1): rows [r0, seq_start[c1]) */
        const int32_t r0 = b->seq_start[c0];
        for (c1 = c0 + 1; c1 < i1 && b->seq_start[c1 + 1] - r0 <= PREFILL_ROWS;)
            c1++;
        for (int i = c0; i <= c1; i++)
            start[i - c0] = b->seq_start[i] - r0;
        /* logits for each prompt's last row only: the row sampling starts from */
        llama_batch c = {.n_seqs = c1 - c0, .n_rows = b->seq_start[c1] - r0, .seq_start = start,
                         .tokens = b->tokens + r0, .pos = b->pos + r0, .target = b->target + r0,
                         .scale = b->scale ? b->scale + r0 : NULL, .head = LLAMA_HEAD_LAST,
                         .row_input = b->row_input ? b->row_input + r0 : NULL};
        if ((rc = llama_forward(m, &c, lp, NULL, err, errn)) != 0)
            break;
        /* the prompts' keys and values, once for all their samples */
        for (int l = 0; l < L; l++) {
            memcpy(prompt_at(d, m, d->pk, c0, l), m->acts[l].k,
                   (size_t)c.n_rows * KD * sizeof(float));
            memcpy(prompt_at(d, m, d->pv, c0, l), m->acts[l].v,
                   (size_t)c.n_rows * KD * sizeof(float));
        }
        for (int k = 0; k < n; k++) {
            const int i = sample_prompt[k];
            if (i >= c0 && i < c1)
                memcpy(d->logits + (size_t)slot[k] * V, m->logits + (size_t)(i - c0) * V,
                       (size_t)V * sizeof(float));
        }
    }
    free(lp), free(start);
    return rc;
}

static int cpu_step(void *self, const int32_t *tok, const int32_t *pos, const int32_t *row_slot,
                    int B, char *err, size_t errn)
{
    (void)err, (void)errn;
    cpu_gen *g = self;
    memcpy(g->d.tok, tok, (size_t)B * sizeof *tok);
    memcpy(g->d.pos, pos, (size_t)B * sizeof *pos);
    memcpy(g->d.row_slot, row_slot, (size_t)B * sizeof *row_slot);
    decode_step(g->m, &g->d, B);
    return 0;
}

static void cpu_finish(void *self)
{
    cpu_gen *g = self;
    if (g->have_d)
        decoder_free(&g->d);
    g->have_d = 0;
}

int llama_generate(llama_model *m, const gen_prompt *prompts, int n_prompts, int max_rows,
                   gen_sample *out, char *err, size_t errn)
{
    cpu_gen g = {.m = m};
    gen_backend be = {.self = &g, .open = cpu_open, .prefill = cpu_prefill, .step = cpu_step,
                      .finish = cpu_finish, .sampler = m->gx.tp};
    /* bf16: the weights packed once for the whole call (one weight version),
     * not at each of its products; the same bits. Without the memory for
     * them, the products pack as they go. */
    gemm_pack_set packs = {0};
    if (m->gx.ws && arch_pack_weights(&m->cfg, &m->p, &packs) == 0)
        m->gx.packs = &packs;
    int rc = gen_run(&be, m->cfg.vocab_size, m->cfg.max_positions, max_rows, prompts, n_prompts,
                     out, err, errn);
    m->gx.packs = NULL;
    arch_packs_free(&packs);
    return rc;
}
