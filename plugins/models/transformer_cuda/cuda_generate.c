/*
 * cuda_generate.c: the decoder under gen_driver.c's sampling loop, on the
 * GPU. The loop itself (which rows advance, sampling, stop tokens) is the
 * CPU plugin's, so both plugins sample alike; each step's logits come back
 * to the host for it.
 *
 * 1. Prefill: the prompts go through one packed forward pass
 *    (cuda_model_forward); each layer's k and v rows of a prompt are copied
 *    into the cache of every sample of that prompt (k_kv_fill).
 * 2. Decode, B rows of one token each:
 *      x = E[token];  per layer: h = rmsnorm(x); q, k, v = h W^T + b;
 *      rope(q, k, pos); cache[pos] = k, v; a = softmax(q·K^T / sqrt(HD)) V
 *      over the sample's cache (k_decode_attention); x += a Wo^T (+ bo);
 *      x += (silu(h2 Wg^T) ⊙ h2 Wu^T) Wd^T with h2 = rmsnorm(x)
 *    logits = rmsnorm(x) Wlm^T, as cuda_model.c's forward for one row.
 * Attention reads float32 caches in both steps, so decode's log-probs agree
 * with score's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "cuda_model.h"
#include "kernels/kernels.h"

typedef struct cuda_decoder {
    cuda_model *m;
    int S, P;
    void *arena;
    float *kc, *vc;        /* [S, L, P, KD] each */
    float *x, *xn, *rstd, *q, *k, *v, *att, *gate, *up, *act, *logits; /* [S, ...] rows */
    int32_t *tok, *pos, *row_sample; /* [S] */
} cuda_decoder;

static int prefill(void *self, const llama_batch *b, const int *sample_prompt, int S, int P_,
                   float *logits, char *err, size_t errn)
{
    cuda_decoder *d = self;
    cuda_model *m = d->m;
    const size_t L = (size_t)m->cfg.n_layers, P = (size_t)P_,
                 D = (size_t)m->cfg.hidden_size, F = (size_t)m->cfg.intermediate_size,
                 V = (size_t)m->cfg.vocab_size, HD = D / (size_t)m->cfg.n_heads,
                 QD = (size_t)m->cfg.n_heads * HD, KD = (size_t)m->cfg.n_kv_heads * HD,
                 s = (size_t)S;
    d->S = S;
    d->P = (int)P;
    /* one allocation, carved below; every piece stays 256-byte aligned */
    size_t floats[] = {s * L * P * KD, s * L * P * KD, s * D, s * D, s, s * QD, s * KD, s * KD,
                       s * QD, s * F, s * F, s * F, s * V};
    float **ptrs[] = {&d->kc, &d->vc, &d->x, &d->xn, &d->rstd, &d->q, &d->k, &d->v, &d->att,
                      &d->gate, &d->up, &d->act, &d->logits};
    size_t n = sizeof floats / sizeof floats[0], bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += (floats[i] * sizeof(float) + 255) & ~(size_t)255;
    bytes += 3 * ((s * sizeof(int32_t) + 255) & ~(size_t)255);
    cudaError_t e = cudaMalloc(&d->arena, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        d->arena = NULL;
        snprintf(err, errn, "out of GPU memory on %s: the KV cache of %d samples needs %.1f MiB "
                 "(%s); generate fewer samples at once", m->where, S, bytes / 1048576.0,
                 cudaGetErrorString(e));
        return -1;
    }
    char *p = d->arena;
    for (size_t i = 0; i < n; i++) {
        *ptrs[i] = (float *)(void *)p;
        p += (floats[i] * sizeof(float) + 255) & ~(size_t)255;
    }
    int32_t **iptrs[] = {&d->tok, &d->pos, &d->row_sample};
    for (size_t i = 0; i < 3; i++) {
        *iptrs[i] = (int32_t *)(void *)p;
        p += (s * sizeof(int32_t) + 255) & ~(size_t)255;
    }

    float *lp = malloc((size_t)b->n_rows * sizeof *lp);
    if (!lp) {
        snprintf(err, errn, "out of memory");
        return -1;
    }
    int rc = cuda_model_forward(m, b, lp, NULL, err, errn);
    free(lp);
    if (rc != 0)
        return -1;
    for (int si = 0; si < S; si++) {
        const int i = sample_prompt[si];
        const size_t r0 = (size_t)b->seq_start[i], len = (size_t)b->seq_start[i + 1] - r0;
        for (size_t l = 0; l < L; l++)
            CU_TRY(k_kv_fill(m->st, d->kc, d->vc, m->acts[l].k + r0 * KD, m->acts[l].v + r0 * KD,
                             (int)len, si, (int)l, (int)L, (int)P, (int)KD));
        CU_TRY(cudaMemcpyAsync(logits + (size_t)si * V, m->logits + (r0 + len - 1) * V,
                               V * sizeof(float), cudaMemcpyDeviceToHost, m->st));
    }
    CU_TRY(cudaStreamSynchronize(m->st));
    return 0;
}

static int step(void *self, const int32_t *tok, const int32_t *pos, const int32_t *row_sample,
                int B, float *logits, char *err, size_t errn)
{
    cuda_decoder *d = self;
    cuda_model *m = d->m;
    const int L = m->cfg.n_layers, D = m->cfg.hidden_size, F = m->cfg.intermediate_size,
              V = m->cfg.vocab_size, H = m->cfg.n_heads, KV = m->cfg.n_kv_heads, HD = D / H,
              QD = H * HD, KD = KV * HD;
    const float eps = m->cfg.rms_eps;
    cudaStream_t st = m->st;
    const size_t ib = (size_t)B * sizeof(int32_t);
    CU_TRY(cudaMemcpyAsync(d->tok, tok, ib, cudaMemcpyHostToDevice, st));
    CU_TRY(cudaMemcpyAsync(d->pos, pos, ib, cudaMemcpyHostToDevice, st));
    CU_TRY(cudaMemcpyAsync(d->row_sample, row_sample, ib, cudaMemcpyHostToDevice, st));
    CU_TRY(k_embedding_forward(st, d->x, d->tok, m->p.embed, B, D));
    for (int l = 0; l < L; l++) {
        const llama_layer *w = &m->p.layers[l];
        CU_TRY(k_rmsnorm_forward(st, d->xn, d->rstd, d->x, w->attn_norm, B, D, eps));
        if (cuda_qkv_forward(m, w, d->q, d->k, d->v, d->xn, d->pos, B, err, errn))
            return -1;
        CU_TRY(k_kv_append(st, d->kc, d->vc, d->k, d->v, d->row_sample, d->pos, B, l, L, d->P,
                           KD));
        CU_TRY(k_decode_attention(st, d->att, d->q, d->kc, d->vc, d->row_sample, d->pos, B, l, L,
                                  d->P, H, KV, HD));
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
    CU_TRY(cudaMemcpyAsync(logits, d->logits, (size_t)B * V * sizeof(float),
                           cudaMemcpyDeviceToHost, st));
    CU_TRY(cudaStreamSynchronize(st));
    return 0;
}

static void finish(void *self)
{
    cuda_decoder *d = self;
    cudaStreamSynchronize(d->m->st);
    cudaFree(d->arena);
    d->arena = NULL;
}

int cuda_generate(cuda_model *m, const gen_prompt *prompts, int n_prompts, gen_sample *out,
                  char *err, size_t errn)
{
    if (cudaSetDevice(m->device) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errn, "cannot select %s", m->where);
        return -1;
    }
    cuda_decoder d = {.m = m};
    gen_backend be = {.self = &d, .prefill = prefill, .step = step, .finish = finish};
    return gen_run(&be, m->cfg.vocab_size, m->cfg.max_positions, prompts, n_prompts, out, err,
                   errn);
}
