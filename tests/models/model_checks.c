/* model_checks.c: see model_checks.h. */
#include "model_checks.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tern/model.h"

void expect_training_halves_nll(const char *plugin, const char *cfg)
{
    harness h;
    int rc = harness_open(&h, plugin, TERN_KIND_MODEL, cfg);
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    const tern_model_ops *ops = harness_ops(&h);
    const char *text = "the cat sat on the mat. the cat sat on the mat.";
    int32_t *ids = NULL;
    size_t n = 0;
    cr_assert_eq(ops->tokenize(h.state, text, strlen(text), 1, &ids, &n), TERN_OK);
    tern_sequence s = {.size = sizeof s, .tokens = ids, .len = n, .start = 1};
    float *dlogp = malloc(n * sizeof *dlogp), *lp = malloc(n * sizeof *lp);
    for (size_t i = 0; i < n; i++)
        dlogp[i] = i >= 1 ? -1.0f / (float)(n - 1) : 0; /* minimise mean NLL */
    double first = 0, last = 0;
    for (int step = 0; step < 30; step++) {
        cr_assert_eq(ops->score(h.state, &s, 1, &lp, NULL), TERN_OK);
        double nll = 0;
        for (size_t i = 1; i < n; i++)
            nll -= lp[i];
        nll /= (double)(n - 1);
        if (step == 0)
            first = nll;
        last = nll;
        const float *g[1] = {dlogp};
        cr_assert_eq(ops->backward(h.state, &s, 1, g, NULL), TERN_OK);
        tern_optim_step st = {.size = sizeof st, .lr = 3e-3, .beta1 = 0.9, .beta2 = 0.95,
                              .eps = 1e-8, .weight_decay = 0.0, .grad_clip = 1.0};
        cr_assert_eq(ops->step(h.state, &st), TERN_OK);
        cr_expect_gt(st.grad_norm, 0);
    }
    cr_expect_lt(last, first * 0.5, "%s (%s): mean NLL %g -> %g, it does not learn", plugin, cfg,
                 first, last);
    free(lp), free(dlogp);
    ops->free_buffer(h.state, ids);
    harness_close(&h);
}

void expect_generate_matches_score(const char *plugin, const char *cfg, float temperature)
{
    harness h;
    int rc = harness_open(&h, plugin, TERN_KIND_MODEL, cfg);
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    const tern_model_ops *ops = harness_ops(&h);
    int32_t prompt[3] = {256, 72, 105};
    tern_gen_request req = {.size = sizeof req, .prompt = prompt, .prompt_len = 3,
                            .n_samples = 4, .max_new_tokens = 20, .temperature = temperature,
                            .top_p = 1, .seed = 42};
    tern_gen_output out[4];
    for (int i = 0; i < 4; i++)
        out[i] = (tern_gen_output){.size = sizeof out[i]};
    cr_assert_eq(ops->generate(h.state, &req, 1, out), TERN_OK, "%s", h.error);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(out[i].len, 20);
        int32_t seq[32];
        memcpy(seq, prompt, sizeof prompt);
        memcpy(seq + 3, out[i].tokens, out[i].len * sizeof *seq);
        tern_sequence s = {.size = sizeof s, .tokens = seq, .len = 3 + out[i].len, .start = 3,
                           .temperature = temperature};
        float lpbuf[32], *lp = lpbuf;
        cr_assert_eq(ops->score(h.state, &s, 1, &lp, NULL), TERN_OK);
        double worst = 0;
        for (size_t k = 0; k < out[i].len; k++)
            worst = fmax(worst, fabs((double)lp[3 + k] - out[i].logprobs[k]));
        cr_expect_lt(worst, 1e-4, "%s (%s): sample %d: max |generate - score| = %g", plugin, cfg,
                     i, worst);
        ops->free_buffer(h.state, out[i].tokens);
        ops->free_buffer(h.state, out[i].logprobs);
    }
    harness_close(&h);
}

void expect_decode_rows_change_nothing(const char *plugin, const char *cfg, double tol)
{
    enum { NR = 6, NS = 12 };
    static const int n_samples[NR] = {3, 1, 2, 3, 1, 2};
    static const int max_new[NR] = {24, 3, 16, 9, 20, 12};
    static const size_t plen[NR] = {5, 2, 13, 7, 3, 9};
    int32_t prompts[NR][16], stop = 101; /* 'e': ends some samples early */
    tern_gen_request req[NR];
    for (int i = 0; i < NR; i++) {
        prompts[i][0] = 256;
        for (size_t t = 1; t < plen[i]; t++)
            prompts[i][t] = (int32_t)(97 + (i * 7 + (int)t * 5) % 26);
        req[i] = (tern_gen_request){.size = sizeof req[i], .prompt = prompts[i],
                                    .prompt_len = plen[i], .n_samples = (uint32_t)n_samples[i],
                                    .max_new_tokens = (uint32_t)max_new[i], .temperature = 1,
                                    .top_p = 1, .seed = 1000 + (uint64_t)i,
                                    .stop = i % 2 ? &stop : NULL, .n_stop = i % 2 ? 1 : 0};
    }
    const int rows[3] = {0, 1, 4};
    tern_gen_output out[3][NS];
    harness h[3];
    for (int c = 0; c < 3; c++) {
        char group[1024];
        snprintf(group, sizeof group, "%s decode_rows = %d;", cfg, rows[c]);
        int rc = harness_open(&h[c], plugin, TERN_KIND_MODEL, group);
        cr_assert_eq(rc, TERN_OK, "%s", h[c].error);
        for (int s = 0; s < NS; s++)
            out[c][s] = (tern_gen_output){.size = sizeof out[c][s]};
        const tern_model_ops *ops = harness_ops(&h[c]);
        cr_assert_eq(ops->generate(h[c].state, req, NR, out[c]), TERN_OK,
                     "%s (%s decode_rows = %d): %s", plugin, cfg, rows[c], h[c].error);
    }
    int lengths_vary = 0;
    for (int c = 1; c < 3; c++)
        for (int s = 0; s < NS; s++) {
            const tern_gen_output *a = &out[0][s], *b = &out[c][s];
            lengths_vary += c == 1 && s > 0 && a->len != out[0][s - 1].len;
            cr_assert_eq(a->len, b->len, "%s: sample %d has %zu tokens in one batch, %zu with "
                         "decode_rows = %d", plugin, s, a->len, b->len, rows[c]);
            cr_expect_eq(a->finish, b->finish, "%s: sample %d's finish", plugin, s);
            for (size_t t = 0; t < a->len; t++) {
                cr_expect_eq(a->tokens[t], b->tokens[t], "%s: sample %d token %zu, decode_rows "
                             "= %d", plugin, s, t, rows[c]);
                cr_expect(fabs((double)a->logprobs[t] - b->logprobs[t]) <= tol,
                          "%s: sample %d logp %zu: %g in one batch, %g with decode_rows = %d",
                          plugin, s, t, a->logprobs[t], b->logprobs[t], rows[c]);
            }
        }
    cr_expect_gt(lengths_vary, 3, "%s: the samples' lengths hardly vary; nothing is refilled",
                 plugin);
    for (int c = 0; c < 3; c++) {
        const tern_model_ops *ops = harness_ops(&h[c]);
        for (int s = 0; s < NS; s++) {
            ops->free_buffer(h[c].state, out[c][s].tokens);
            ops->free_buffer(h[c].state, out[c][s].logprobs);
        }
        harness_close(&h[c]);
    }
}

/* What one request's on_token heard. */
typedef struct heard {
    uint32_t n_samples;
    size_t stop_at[4]; /* STOP on sample k's stop_at[k]-th token; 0: never */
    size_t calls[4];
    int32_t tok[4][32];
    float lp[4][32];
    int out_of_range, other_thread;
    pthread_t thread;
} heard;

static int heard_token(void *user, uint32_t sample, int32_t token, float logprob)
{
    heard *h = user;
    h->other_thread += !pthread_equal(pthread_self(), h->thread);
    if (sample >= h->n_samples || h->calls[sample] >= 32) {
        h->out_of_range++;
        return TERN_GEN_CONTINUE;
    }
    const size_t k = h->calls[sample]++;
    h->tok[sample][k] = token;
    h->lp[sample][k] = logprob;
    return k + 1 == h->stop_at[sample] ? TERN_GEN_STOP : TERN_GEN_CONTINUE;
}

void expect_on_token_hears_and_stops(const char *plugin, const char *cfg, double tol)
{
    enum { NR = 2, NS = 6, NEW = 24 };
    static const uint32_t n_samples[NR] = {4, 2};
    int32_t prompts[NR][4] = {{256, 72, 105, 33}, {256, 65, 66, 67}};
    harness h;
    int rc = harness_open(&h, plugin, TERN_KIND_MODEL, cfg);
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    const tern_model_ops *ops = harness_ops(&h);
    tern_gen_request req[NR];
    for (int i = 0; i < NR; i++)
        req[i] = (tern_gen_request){.size = sizeof req[i], .prompt = prompts[i],
                                    .prompt_len = 4, .n_samples = n_samples[i],
                                    .max_new_tokens = NEW, .temperature = 1, .top_k = 30,
                                    .top_p = 0.95f, .seed = 31 + (uint64_t)i};
    /* 0: no listener; 1: one that goes on; 2: STOP at sample 1's third token;
     * 3: the first request as a 1.14 caller builds it, with a listener past its size */
    tern_gen_output out[4][NS];
    heard hd[4][NR];
    memset(hd, 0, sizeof hd);
    for (int c = 0; c < 4; c++) {
        for (int i = 0; i < NR; i++) {
            hd[c][i].n_samples = n_samples[i];
            hd[c][i].thread = pthread_self();
            req[i].on_token = c ? heard_token : NULL;
            req[i].on_token_user = c ? &hd[c][i] : NULL;
            req[i].size = sizeof req[i];
        }
        if (c == 2)
            hd[c][0].stop_at[1] = 3;
        if (c == 3) {
            req[0].size = offsetof(tern_gen_request, on_token);
            hd[c][0].stop_at[1] = 3; /* were it heard, sample 1 would stop */
        }
        for (int s = 0; s < NS; s++)
            out[c][s] = (tern_gen_output){.size = sizeof out[c][s]};
        cr_assert_eq(ops->generate(h.state, req, c == 3 ? 1 : NR, out[c]),
                     TERN_OK, "%s (%s), case %d: %s", plugin, cfg, c, h.error);
    }
    cr_assert_eq(out[0][1].len, NEW, "%s: sample 1 has %zu tokens", plugin, out[0][1].len);
    for (int c = 1; c < 4; c++) {
        const int ns = c == 3 ? (int)n_samples[0] : NS;
        for (int s = 0; s < ns; s++) {
            const tern_gen_output *a = &out[0][s], *b = &out[c][s];
            const int i = s < (int)n_samples[0] ? 0 : 1, k = i ? s - (int)n_samples[0] : s;
            const heard *l = &hd[c][i];
            if (c == 1 || c == 2) { /* heard exactly what the outputs hold */
                cr_assert_eq(l->calls[k], b->len, "%s: case %d, request %d sample %d: %zu "
                             "calls for %zu tokens", plugin, c, i, k, l->calls[k], b->len);
                for (size_t t = 0; t < b->len; t++) {
                    cr_expect_eq(l->tok[k][t], b->tokens[t], "%s: case %d sample %d token %zu",
                                 plugin, c, s, t);
                    cr_expect_eq(memcmp(&l->lp[k][t], &b->logprobs[t], sizeof(float)), 0,
                                 "%s: case %d sample %d log-prob %zu: %g heard, %g kept",
                                 plugin, c, s, t, (double)l->lp[k][t], (double)b->logprobs[t]);
                }
            } else {
                cr_expect_eq(l->calls[k], 0, "%s: a 1.14 request was heard", plugin);
            }
            cr_expect_eq(l->out_of_range, 0, "%s: case %d: a sample index out of range", plugin,
                         c);
            cr_expect_eq(l->other_thread, 0, "%s: case %d: heard on another thread", plugin, c);
            if (c == 2 && s == 1) {
                cr_expect_eq(b->len, 3, "%s: the stopped sample has %zu tokens", plugin, b->len);
                cr_expect_eq(b->finish, TERN_FINISH_STOPPED, "%s: the stopped sample's finish "
                             "is %u", plugin, b->finish);
                cr_expect_eq(memcmp(a->tokens, b->tokens, 3 * sizeof(int32_t)), 0,
                             "%s: the stopped sample's tokens are its first 3", plugin);
                continue;
            }
            cr_assert_eq(a->len, b->len, "%s: case %d, sample %d: %zu tokens without a "
                         "listener, %zu with", plugin, c, s, a->len, b->len);
            cr_expect_eq(a->finish, b->finish, "%s: case %d, sample %d's finish", plugin, c, s);
            for (size_t t = 0; t < a->len; t++) {
                cr_expect_eq(a->tokens[t], b->tokens[t], "%s: case %d, sample %d token %zu",
                             plugin, c, s, t);
                cr_expect(fabs((double)a->logprobs[t] - b->logprobs[t]) <= tol,
                          "%s: case %d, sample %d logp %zu: %g without a listener, %g with",
                          plugin, c, s, t, a->logprobs[t], b->logprobs[t]);
            }
        }
    }
    for (int c = 0; c < 4; c++)
        for (int s = 0; s < (c == 3 ? (int)n_samples[0] : NS); s++) {
            ops->free_buffer(h.state, out[c][s].tokens);
            ops->free_buffer(h.state, out[c][s].logprobs);
        }
    harness_close(&h);
}
