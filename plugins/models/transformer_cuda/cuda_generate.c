/*
 * cuda_generate.c: the decoder under gen_driver.c's sampling loop, on the
 * GPU. The loop itself (which rows advance, sampling, stop tokens) is the
 * CPU plugin's, so both plugins sample alike; each step's logits come back
 * to the host for it.
 *
 * 1. Prefill of the prompts gen_driver.c admits: one packed forward pass
 *    (cuda_model_forward); each layer's k and v rows of a prompt are kept
 *    once in the prompt block, shared by all that prompt's samples.
 * 2. Decode, B rows of one token each:
 *      x = E[token];  per layer: h = rmsnorm(x); q, k, v = h W^T + b;
 *      rope(q, k, pos); own[pos] = k, v; a = softmax(q·K^T / sqrt(HD)) V
 *      over the prompt's rows and then the slot's own (k_decode_attention);
 *      x += a Wo^T (+ bo); x += (silu(h2 Wg^T) ⊙ h2 Wu^T) Wd^T with h2 = rmsnorm(x)
 *    logits = rmsnorm(x) Wlm^T, as cuda_model.c's forward for one row.
 * Attention reads float32 caches in both steps, so decode's log-probs agree
 * with score's. Each step's logits come back into page-locked host memory
 * (a pageable copy moved about 1.2 GB/s, slower than the step itself).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "cuda_model.h"
#include "kernels/kernels.h"

typedef struct cuda_decoder {
    cuda_model *m;
    const llama_batch *all;   /* the call's prompts (gen_driver.c keeps them) */
    int slots;
    void *arena;
    k_kv_cache c;             /* views into the arena */
    int32_t *pstart, *plen;   /* [slots] device: c.pstart, c.plen */
    int32_t *h_pstart, *h_plen; /* [slots] host copies */
    float *x, *xn, *rstd, *q, *k, *v, *att, *gate, *up, *act, *logits; /* [slots, ...] rows */
    int32_t *tok, *pos, *row_slot; /* [slots] */
    float *host_logits;       /* [slots, V] page-locked */
} cuda_decoder;

static int open_decoder(void *self, const llama_batch *all, int slots, int P, int own,
                        float **logits, char *err, size_t errn)
{
    cuda_decoder *d = self;
    cuda_model *m = d->m;
    const size_t L = (size_t)m->cfg.n_layers, D = (size_t)m->cfg.hidden_size,
                 F = (size_t)m->cfg.intermediate_size, V = (size_t)m->cfg.vocab_size,
                 HD = D / (size_t)m->cfg.n_heads, QD = (size_t)m->cfg.n_heads * HD,
                 KD = (size_t)m->cfg.n_kv_heads * HD, s = (size_t)slots, R = (size_t)all->n_rows;
    (void)P;
    const size_t Pn = (size_t)own;
    d->all = all;
    d->slots = slots;
    /* one allocation, carved below; every piece stays 256-byte aligned */
    size_t floats[] = {L * R * KD, L * R * KD, s * L * Pn * KD, s * L * Pn * KD, s * D, s * D,
                       s, s * QD, s * KD, s * KD, s * QD, s * F, s * F, s * F, s * V};
    float **ptrs[] = {&d->c.pk, &d->c.pv, &d->c.kc, &d->c.vc, &d->x, &d->xn, &d->rstd, &d->q,
                      &d->k, &d->v, &d->att, &d->gate, &d->up, &d->act, &d->logits};
    int32_t **iptrs[] = {&d->tok, &d->pos, &d->row_slot, &d->pstart, &d->plen};
    const size_t n = sizeof floats / sizeof floats[0], ni = sizeof iptrs / sizeof iptrs[0];
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += (floats[i] * sizeof(float) + 255) & ~(size_t)255;
    bytes += ni * ((s * sizeof(int32_t) + 255) & ~(size_t)255);
    cudaError_t e = cudaMalloc(&d->arena, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        d->arena = NULL;
        snprintf(err, errn, "out of GPU memory on %s: the KV cache of %d samples at once needs "
                 "%.1f MiB (%s); lower the model's decode_rows", m->where, slots,
                 bytes / 1048576.0, cudaGetErrorString(e));
        return -1;
    }
    char *p = d->arena;
    for (size_t i = 0; i < n; i++) {
        *ptrs[i] = (float *)(void *)p;
        p += (floats[i] * sizeof(float) + 255) & ~(size_t)255;
    }
    for (size_t i = 0; i < ni; i++) {
        *iptrs[i] = (int32_t *)(void *)p;
        p += (s * sizeof(int32_t) + 255) & ~(size_t)255;
    }
    d->c.pstart = d->pstart;
    d->c.plen = d->plen;
    d->c.prompt_rows = (int)R;
    d->c.own_rows = (int)Pn;
    d->c.n_layers = (int)L;
    d->c.kd = (int)KD;
    d->h_pstart = malloc(s * sizeof(int32_t));
    d->h_plen = malloc(s * sizeof(int32_t));
    if (!d->h_pstart || !d->h_plen) {
        snprintf(err, errn, "out of memory");
        return -1;
    }
    CU_TRY(cudaMallocHost((void **)&d->host_logits, s * V * sizeof(float)));
    *logits = d->host_logits;
    /* a step's products convert their B <= slots rows into the model's bf16
     * scratch, which a short prompt's prefill alone would leave too small */
    return cuda_model_reserve(m, s, err, errn);
}

static int prefill(void *self, int i0, int i1, const int32_t *sample_prompt, const int32_t *slot,
                   int n, char *err, size_t errn)
{
    cuda_decoder *d = self;
    cuda_model *m = d->m;
    const llama_batch *all = d->all;
    const size_t L = (size_t)m->cfg.n_layers, V = (size_t)m->cfg.vocab_size,
                 KD = (size_t)d->c.kd, R = (size_t)d->c.prompt_rows;
    const int32_t r0 = all->seq_start[i0], rows = all->seq_start[i1] - r0;
    int32_t *start = malloc(((size_t)(i1 - i0) + 1) * sizeof *start);
    float *lp = malloc((size_t)rows * sizeof *lp);
    if (!start || !lp) {
        free(start), free(lp);
        snprintf(err, errn, "out of memory");
        return -1;
    }
    for (int i = i0; i <= i1; i++)
        start[i - i0] = all->seq_start[i] - r0;
    llama_batch b = {.n_seqs = i1 - i0, .n_rows = rows, .seq_start = start,
                     .tokens = all->tokens + r0, .pos = all->pos + r0,
                     .target = all->target + r0};
    int rc = cuda_model_forward(m, &b, lp, NULL, err, errn);
    free(start), free(lp);
    if (rc != 0)
        return -1;
    /* the prompts' keys and values, once for all their samples */
    for (size_t l = 0; l < L; l++) {
        CU_TRY(cudaMemcpyAsync(d->c.pk + (l * R + (size_t)r0) * KD, m->acts[l].k,
                               (size_t)rows * KD * sizeof(float), cudaMemcpyDeviceToDevice,
                               m->st));
        CU_TRY(cudaMemcpyAsync(d->c.pv + (l * R + (size_t)r0) * KD, m->acts[l].v,
                               (size_t)rows * KD * sizeof(float), cudaMemcpyDeviceToDevice,
                               m->st));
    }
    for (int k = 0; k < n; k++) {
        const int i = sample_prompt[k];
        const int32_t ps = all->seq_start[i], len = all->seq_start[i + 1] - ps;
        d->h_pstart[slot[k]] = ps;
        d->h_plen[slot[k]] = len;
        CU_TRY(cudaMemcpyAsync(d->host_logits + (size_t)slot[k] * V,
                               m->logits + (size_t)(ps - r0 + len - 1) * V, V * sizeof(float),
                               cudaMemcpyDeviceToHost, m->st));
    }
    const size_t ib = (size_t)d->slots * sizeof(int32_t);
    CU_TRY(cudaMemcpyAsync(d->pstart, d->h_pstart, ib, cudaMemcpyHostToDevice, m->st));
    CU_TRY(cudaMemcpyAsync(d->plen, d->h_plen, ib, cudaMemcpyHostToDevice, m->st));
    CU_TRY(cudaStreamSynchronize(m->st));
    return 0;
}

static int step(void *self, const int32_t *tok, const int32_t *pos, const int32_t *row_slot,
                int B, char *err, size_t errn)
{
    cuda_decoder *d = self;
    cuda_model *m = d->m;
    const int L = m->cfg.n_layers, D = m->cfg.hidden_size, F = m->cfg.intermediate_size,
              V = m->cfg.vocab_size, H = m->cfg.n_heads, KV = m->cfg.n_kv_heads, HD = D / H,
              QD = H * HD;
    const float eps = m->cfg.rms_eps;
    cudaStream_t st = m->st;
    const size_t ib = (size_t)B * sizeof(int32_t);
    CU_TRY(cudaMemcpyAsync(d->tok, tok, ib, cudaMemcpyHostToDevice, st));
    CU_TRY(cudaMemcpyAsync(d->pos, pos, ib, cudaMemcpyHostToDevice, st));
    CU_TRY(cudaMemcpyAsync(d->row_slot, row_slot, ib, cudaMemcpyHostToDevice, st));
    CU_TRY(k_embedding_forward(st, d->x, d->tok, m->p.embed, B, D));
    for (int l = 0; l < L; l++) {
        const llama_layer *w = &m->p.layers[l];
        CU_TRY(k_rmsnorm_forward(st, d->xn, d->rstd, d->x, w->attn_norm, B, D, eps));
        if (cuda_qkv_forward(m, w, d->q, d->k, d->v, d->xn, d->pos, B, err, errn))
            return -1;
        CU_TRY(k_kv_append(st, &d->c, d->k, d->v, d->row_slot, d->pos, B, l));
        CU_TRY(k_decode_attention(st, d->att, d->q, &d->c, d->row_slot, d->pos, B, l, H, KV, HD));
        if (cuda_linear_forward(m, d->x, d->att, w->wo, w->bo, B, QD, D, 1, err, errn))
            return -1;
        CU_TRY(k_rmsnorm_forward(st, d->xn, d->rstd, d->x, w->mlp_norm, B, D, eps));
        if (cuda_mlp_in_forward(m, w, d->gate, d->up, d->act, d->xn, B, err, errn))
            return -1;
        if (cuda_linear_forward(m, d->x, d->act, w->w_down, w->b_down, B, F, D, 1, err, errn))
            return -1;
    }
    CU_TRY(k_rmsnorm_forward(st, d->xn, d->rstd, d->x, m->p.final_norm, B, D, eps));
    if (cuda_linear_forward(m, d->logits, d->xn, m->p.lm_head, NULL, B, D, V, 0, err, errn))
        return -1;
    CU_TRY(cudaMemcpyAsync(d->host_logits, d->logits, (size_t)B * V * sizeof(float),
                           cudaMemcpyDeviceToHost, st));
    CU_TRY(cudaStreamSynchronize(st));
    return 0;
}

static void finish(void *self)
{
    cuda_decoder *d = self;
    cudaStreamSynchronize(d->m->st);
    cudaFree(d->arena);
    cudaFreeHost(d->host_logits);
    free(d->h_pstart), free(d->h_plen);
    d->arena = NULL;
    d->host_logits = NULL;
    d->h_pstart = d->h_plen = NULL;
}

int cuda_generate(cuda_model *m, const gen_prompt *prompts, int n_prompts, int max_rows,
                  gen_sample *out, char *err, size_t errn)
{
    if (cudaSetDevice(m->device) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errn, "cannot select %s", m->where);
        return -1;
    }
    cuda_decoder d = {.m = m};
    gen_backend be = {.self = &d, .open = open_decoder, .prefill = prefill, .step = step,
                      .finish = finish, .sampler = m->sampler};
    return gen_run(&be, m->cfg.vocab_size, m->cfg.max_positions, max_rows, prompts, n_prompts,
                   out, err, errn);
}
