/*
 * gen_driver.c: the sampling loop of batched generation, over any decoder
 * (generate.h's gen_backend: the CPU one in generate.c, the CUDA plugin's
 * own). The decoder does the arithmetic; this file decides which rows
 * advance and what they sample, so every backend samples the same way.
 *
 * 1. Prefill: all prompts in one packed pass; each sample's cache starts
 *    from its prompt, and the prompt's last-row logits seed it.
 * 2. Decode: each active sample draws a token from its logits (sample_token,
 *    with its own RNG stream), stops at a stop token or its length limit,
 *    and the rest advance together one row each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generation/generate.h"
#include "tern/model.h"

typedef struct sample_state {
    const gen_params *p;
    uint64_t rng;
    size_t prompt_len;
    int max_new;   /* limited by the context */
    int done;
    size_t cap;
} sample_state;

static int is_stop(const gen_params *p, int32_t t)
{
    for (size_t i = 0; i < p->n_stop; i++)
        if (p->stop[i] == t)
            return 1;
    return 0;
}

static int push(gen_sample *o, size_t *cap, int32_t tok, float lp)
{
    if (o->len == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        int32_t *nt = realloc(o->tokens, nc * sizeof *nt);
        if (!nt)
            return -1;
        o->tokens = nt;
        float *nl = realloc(o->logprobs, nc * sizeof *nl);
        if (!nl)
            return -1;
        o->logprobs = nl;
        *cap = nc;
    }
    o->tokens[o->len] = tok;
    o->logprobs[o->len] = lp;
    o->len++;
    return 0;
}

int gen_run(const gen_backend *be, int V, int P, const gen_prompt *prompts, int n_prompts,
            gen_sample *out, char *err, size_t errn)
{
    int S = 0, cache_P = 1;
    size_t rows = 0;
    for (int i = 0; i < n_prompts; i++) {
        if (prompts[i].len < 1 || prompts[i].len >= (size_t)P || prompts[i].n_samples < 1) {
            snprintf(err, errn, "prompt %d has %zu tokens and %d samples; prompts need 1 to %d "
                     "tokens (the context is %d) and at least one sample", i, prompts[i].len,
                     prompts[i].n_samples, P - 1, P);
            return -1;
        }
        S += prompts[i].n_samples;
        rows += prompts[i].len;
        /* the cache holds what is fed: the prompt and all but the last new token; an
         * 8K-context model asked for 64 new tokens needs no 8K cache per sample */
        int64_t need = (int64_t)prompts[i].len + (prompts[i].params->max_new > 0
                                                     ? prompts[i].params->max_new : 0);
        if (need > cache_P)
            cache_P = need < P ? (int)need : P;
    }
    int32_t *start = malloc(((size_t)n_prompts + 1) * sizeof *start);
    int32_t *tok = malloc(rows * sizeof *tok), *pos = malloc(rows * sizeof *pos);
    int32_t *tgt = malloc(rows * sizeof *tgt);
    int *sample_prompt = calloc((size_t)S + 1, sizeof *sample_prompt);
    int32_t *row_tok = malloc((size_t)S * sizeof *row_tok);
    int32_t *row_pos = malloc((size_t)S * sizeof *row_pos);
    int32_t *row_sample = malloc((size_t)S * sizeof *row_sample);
    sample_state *st = calloc((size_t)S, sizeof *st);
    float *logits = malloc((size_t)S * (size_t)V * sizeof *logits);
    float *work = malloc(2 * (size_t)V * sizeof(float));
    int *idx = malloc((size_t)V * sizeof(int));
    int rc = -1, opened = 0;
    memset(out, 0, (size_t)S * sizeof *out);
    if (!start || !tok || !pos || !tgt || !sample_prompt || !row_tok || !row_pos ||
        !row_sample || !st || !logits || !work || !idx) {
        snprintf(err, errn, "out of memory for generating %d samples", S);
        goto done;
    }

    /* 1. prefill every prompt in one packed pass */
    start[0] = 0;
    for (int i = 0, r = 0, s = 0; i < n_prompts; i++) {
        for (size_t t = 0; t < prompts[i].len; t++, r++) {
            tok[r] = prompts[i].tokens[t];
            pos[r] = (int32_t)t;
            tgt[r] = -1;
        }
        start[i + 1] = start[i] + (int32_t)prompts[i].len;
        for (int k = 0; k < prompts[i].n_samples; k++, s++)
            sample_prompt[s] = i;
    }
    llama_batch b = {.n_seqs = n_prompts, .n_rows = (int)rows, .seq_start = start, .tokens = tok,
                     .pos = pos, .target = tgt};
    opened = 1;
    if (be->prefill(be->self, &b, sample_prompt, S, cache_P, logits, err, errn) != 0)
        goto done;
    for (int i = 0, s = 0; i < n_prompts; i++) {
        const size_t len = prompts[i].len;
        for (int k = 0; k < prompts[i].n_samples; k++, s++) {
            const gen_params *gp = prompts[i].params;
            st[s].p = gp;
            /* one independent stream per sample, from the request's seed */
            st[s].rng = gp->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(k + 1));
            st[s].prompt_len = len;
            st[s].max_new = gp->max_new < P - (int)len ? gp->max_new : P - (int)len;
            if (st[s].max_new <= 0) {
                st[s].done = 1;
                out[s].finish = TERN_FINISH_LENGTH;
            }
        }
    }

    /* 2. decode: sample from each active row's logits, then advance them */
    for (;;) {
        int B = 0;
        for (int s = 0; s < S; s++) {
            if (st[s].done)
                continue;
            /* logits of sample s sit at row s until compacted below */
            float lpv;
            int32_t t = sample_token(logits + (size_t)s * V, V, st[s].p, &st[s].rng, &lpv, work,
                                     idx);
            if (push(&out[s], &st[s].cap, t, lpv) != 0) {
                snprintf(err, errn, "out of memory while generating");
                goto done;
            }
            if (is_stop(st[s].p, t) || (int)out[s].len >= st[s].max_new) {
                st[s].done = 1;
                out[s].finish = is_stop(st[s].p, t) ? TERN_FINISH_STOP : TERN_FINISH_LENGTH;
                continue;
            }
            row_tok[B] = t;
            row_pos[B] = (int32_t)(st[s].prompt_len + out[s].len - 1);
            row_sample[B] = s;
            B++;
        }
        if (B == 0)
            break;
        if (be->step(be->self, row_tok, row_pos, row_sample, B, logits, err, errn) != 0)
            goto done;
        /* move row r's logits to its sample's slot (rows are in sample order,
         * r <= row_sample[r], so going backwards never overwrites unread rows) */
        for (int r = B - 1; r >= 0; r--)
            if (row_sample[r] != r)
                memmove(logits + (size_t)row_sample[r] * V, logits + (size_t)r * V,
                        (size_t)V * sizeof(float));
    }
    rc = 0;
done:
    if (rc != 0)
        for (int s = 0; s < S; s++) {
            free(out[s].tokens);
            free(out[s].logprobs);
            memset(&out[s], 0, sizeof out[s]);
        }
    if (opened && be->finish)
        be->finish(be->self);
    free(start), free(tok), free(pos), free(tgt), free(sample_prompt), free(row_tok);
    free(row_pos), free(row_sample), free(st), free(logits), free(work), free(idx);
    return rc;
}
