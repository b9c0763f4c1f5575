/* test_gen_driver.c: generation's sampling loop (generation/gen_driver.c)
 * over a fake decoder whose logits are a fixed function of the fed token and
 * its position, so any batching gives the same bits: slots refilled from the
 * queue (continuous batching) and rows sampled on several threads must give
 * exactly what one batch on one thread gives, with a vocabulary large
 * enough that the sampling runs on the threads. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "generation/generate.h"
#include "layers/pool.h"
#include "tern/model.h"

enum { V = 33000, NR = 7, NS = 18 };

/* The fake decoder: logits[j] = a hash of (token, position, j) in [-4, 4). */
typedef struct fake {
    const llama_batch *all;
    int slots, opened, max_busy;
    int prefills, steps;
    float *logits;
    int *busy; /* [slots] */
} fake;

static float logit(int32_t tok, int32_t pos, int j)
{
    uint64_t h = (uint64_t)(uint32_t)tok * 0x9e3779b97f4a7c15ull ^
                 (uint64_t)(uint32_t)pos * 0xc2b2ae3d27d4eb4full ^ (uint64_t)j * 0x165667b19e3779f9ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (float)(h % 8000) / 1000.0f - 4.0f;
}

static void fill(float *row, int32_t tok, int32_t pos)
{
    for (int j = 0; j < V; j++)
        row[j] = logit(tok, pos, j);
}

static int f_open(void *self, const llama_batch *all, int slots, int P, int own, float **logits,
                  char *err, size_t errn)
{
    (void)P, (void)own, (void)err, (void)errn;
    fake *f = self;
    f->all = all;
    f->slots = slots;
    f->logits = malloc((size_t)slots * V * sizeof(float));
    f->busy = calloc((size_t)slots, sizeof(int));
    cr_assert(f->logits && f->busy);
    f->opened = 1;
    *logits = f->logits;
    return 0;
}

static int f_prefill(void *self, int i0, int i1, const int32_t *sample_prompt,
                     const int32_t *slot, int n, char *err, size_t errn)
{
    (void)err, (void)errn;
    fake *f = self;
    f->prefills++;
    for (int k = 0; k < n; k++) {
        cr_assert(sample_prompt[k] >= i0 && sample_prompt[k] < i1);
        cr_assert(slot[k] >= 0 && slot[k] < f->slots);
        const int32_t last = f->all->seq_start[sample_prompt[k] + 1] - 1;
        fill(f->logits + (size_t)slot[k] * V, f->all->tokens[last], f->all->pos[last]);
    }
    return 0;
}

static int f_step(void *self, const int32_t *tok, const int32_t *pos, const int32_t *row_slot,
                  int B, char *err, size_t errn)
{
    (void)err, (void)errn;
    fake *f = self;
    f->steps++;
    cr_assert(B <= f->slots);
    for (int r = 0; r < B; r++) {
        cr_assert(r == 0 || row_slot[r] > row_slot[r - 1], "rows in slot order");
        fill(f->logits + (size_t)r * V, tok[r], pos[r]);
    }
    f->max_busy = B > f->max_busy ? B : f->max_busy;
    return 0;
}

static void f_finish(void *self)
{
    fake *f = self;
    free(f->logits), free(f->busy);
    f->logits = NULL;
    f->busy = NULL;
}

/* What a prompt's on_token heard (ABI 1.15), and when it answers STOP. */
typedef struct heard {
    int n_samples;
    size_t stop_at[8];        /* STOP on sample k's stop_at[k]-th token; 0: never */
    size_t calls[8];          /* per sample */
    int32_t tok[8][64];
    float lp[8][64];
    int out_of_range, other_thread, total;
    pthread_t thread;         /* gen_run's caller */
} heard;

static int first_sample[NR + 1]; /* set by run(): prompt i's first sample */

static int on_token(void *user, uint32_t sample, int32_t token, float logprob)
{
    heard *h = user;
    h->other_thread += !pthread_equal(pthread_self(), h->thread);
    if (sample >= (uint32_t)h->n_samples || h->calls[sample] >= 64) {
        h->out_of_range++;
        return TERN_GEN_CONTINUE;
    }
    const size_t k = h->calls[sample]++;
    h->tok[sample][k] = token;
    h->lp[sample][k] = logprob;
    h->total++;
    return k + 1 == h->stop_at[sample] ? TERN_GEN_STOP : TERN_GEN_CONTINUE;
}

/* Seven prompts of 1 to 7 samples, varied lengths and truncations; a stop
 * token ends some samples early, and prompt 1 (sample 3) asks for none.
 * heard[NR] or NULL: each prompt's on_token listener. */
static void run_heard(int max_rows, int threads, gen_sample *out, fake *f, heard *hd)
{
    static int32_t toks[NR][8];
    static int32_t stop[400];
    static gen_params gp[NR];
    gen_prompt pr[NR];
    static const int n_samples[NR] = {3, 1, 4, 2, 1, 5, 2};
    for (int k = 0; k < 400; k++)
        stop[k] = k; /* about one draw in 80 */
    for (int i = 0; i < NR; i++) {
        for (int t = 0; t < 8; t++)
            toks[i][t] = (int32_t)(100 + i * 13 + t * 7);
        gp[i] = (gen_params){.temperature = i % 3 ? 1.0f : 0.7f, .top_k = i == 2 ? 50 : 0,
                             .top_p = i == 4 ? 0.9f : 1.0f, .max_new = i == 1 ? 0 : 6 + 5 * i,
                             .stop = stop, .n_stop = 400, .seed = 77 + (uint64_t)i};
        pr[i] = (gen_prompt){.tokens = toks[i], .len = (size_t)(1 + i % 8), .n_samples = n_samples[i],
                             .params = &gp[i]};
        first_sample[i + 1] = first_sample[i] + n_samples[i];
        if (hd) {
            cr_assert(n_samples[i] <= 8);
            hd[i].n_samples = n_samples[i];
            hd[i].thread = pthread_self();
            pr[i].on_token = on_token;
            pr[i].on_token_user = &hd[i];
        }
    }
    pool *tp = threads > 1 ? pool_new(threads) : NULL;
    cr_assert(threads == 1 || tp);
    memset(f, 0, sizeof *f);
    gen_backend be = {.self = f, .open = f_open, .prefill = f_prefill, .step = f_step,
                      .finish = f_finish, .sampler = tp};
    char err[256];
    cr_assert_eq(gen_run(&be, V, 64, max_rows, pr, NR, out, err, sizeof err), 0, "%s", err);
    cr_expect(f->opened && !f->logits, "open and finish once");
    pool_free(tp);
}

static void run(int max_rows, int threads, gen_sample *out, fake *f)
{
    run_heard(max_rows, threads, out, f, NULL);
}

static void expect_same(const gen_sample *a, const gen_sample *b, const char *what)
{
    for (int s = 0; s < NS; s++) {
        cr_assert_eq(a[s].len, b[s].len, "%s: sample %d: %zu and %zu tokens", what, s, a[s].len,
                     b[s].len);
        cr_expect_eq(a[s].finish, b[s].finish, "%s: sample %d's finish", what, s);
        if (a[s].len == 0)
            continue; /* no arrays to compare */
        cr_expect_eq(memcmp(a[s].tokens, b[s].tokens, a[s].len * sizeof(int32_t)), 0,
                     "%s: sample %d's tokens", what, s);
        cr_expect_eq(memcmp(a[s].logprobs, b[s].logprobs, a[s].len * sizeof(float)), 0,
                     "%s: sample %d's log-probs", what, s);
    }
}

static void free_all(gen_sample *o)
{
    for (int s = 0; s < NS; s++)
        free(o[s].tokens), free(o[s].logprobs);
}

Test(gen_driver, refilled_slots_and_sampling_threads_give_one_batchs_bits)
{
    static gen_sample one[NS], threads[NS], slots[NS], both[NS];
    fake f;
    run(0, 1, one, &f);
    cr_expect_eq(f.prefills, 1, "one batch: one prefill");
    int lengths = 0, stops = 0;
    for (int s = 0; s < NS; s++) {
        lengths += s > 0 && one[s].len != one[s - 1].len;
        stops += one[s].finish == TERN_FINISH_STOP;
    }
    cr_expect_gt(lengths, 5, "the samples' lengths vary");
    cr_expect_gt(stops, 0, "a stop token ends some sample");
    cr_expect(one[3].len == 0 && one[3].finish == TERN_FINISH_LENGTH,
              "max_new 0: no token, finish LENGTH (%zu tokens, finish %d)", one[3].len,
              one[3].finish);
    run(0, 3, threads, &f);
    expect_same(one, threads, "3 sampling threads");
    run(6, 1, slots, &f);
    cr_expect_gt(f.prefills, 2, "6 slots for 18 samples: the queue refills them");
    cr_expect_leq(f.max_busy, 6);
    expect_same(one, slots, "6 slots");
    run(1, 4, both, &f); /* the widest request (5 samples) raises 1 to 5 */
    cr_expect_leq(f.max_busy, 5);
    expect_same(one, both, "5 slots and 4 sampling threads");
    free_all(one), free_all(threads), free_all(slots), free_all(both);
}

/* A fresh listener per prompt that never answers STOP. */
static void listen_all(heard *hd) { memset(hd, 0, NR * sizeof *hd); }

/* (a) on_token hears every drawn token once, on the caller's thread, with
 * the token and log-prob its sample keeps, each sample's in order; and a
 * listener that always goes on changes nothing (c), with continuous
 * batching and sampling threads too. */
Test(gen_driver, on_token_hears_each_samples_tokens_in_order)
{
    static gen_sample plain[NS], out[NS];
    static heard hd[NR];
    fake f;
    run(0, 1, plain, &f);
    const int cases[2][2] = {{0, 1}, {6, 3}}; /* max_rows, threads */
    for (int c = 0; c < 2; c++) {
        listen_all(hd);
        run_heard(cases[c][0], cases[c][1], out, &f, hd);
        expect_same(plain, out, "a listener that goes on");
        int total = 0;
        for (int i = 0; i < NR; i++) {
            cr_expect_eq(hd[i].out_of_range, 0, "prompt %d: a sample index out of range", i);
            cr_expect_eq(hd[i].other_thread, 0, "prompt %d: called on another thread", i);
            for (int k = 0; k < hd[i].n_samples; k++) {
                const gen_sample *o = &out[first_sample[i] + k];
                cr_assert_eq(hd[i].calls[k], o->len, "prompt %d sample %d: %zu calls for %zu "
                             "tokens", i, k, hd[i].calls[k], o->len);
                for (size_t t = 0; t < o->len; t++) {
                    cr_expect_eq(hd[i].tok[k][t], o->tokens[t], "prompt %d sample %d token %zu",
                                 i, k, t);
                    cr_expect_eq(memcmp(&hd[i].lp[k][t], &o->logprobs[t], sizeof(float)), 0,
                                 "prompt %d sample %d log-prob %zu: %g heard, %g kept", i, k, t,
                                 (double)hd[i].lp[k][t], (double)o->logprobs[t]);
                }
            }
            total += hd[i].total;
        }
        int tokens = 0;
        for (int s = 0; s < NS; s++)
            tokens += (int)out[s].len;
        cr_expect_eq(total, tokens, "one call per drawn token");
        free_all(out);
    }
    free_all(plain);
}

/* (b) STOP after 3 tokens of prompt 0's sample 1: that sample keeps those 3
 * and finishes STOPPED, its slot goes to the queue (6 slots), and every
 * other sample is what the run without a listener gives, bit for bit. */
Test(gen_driver, on_token_stop_ends_one_sample_and_no_other)
{
    static gen_sample plain[NS], out[NS];
    static heard hd[NR];
    fake f;
    const int cases[2][2] = {{0, 1}, {6, 3}};
    for (int c = 0; c < 2; c++) {
        run(cases[c][0], cases[c][1], plain, &f);
        cr_assert_gt(plain[1].len, 3, "prompt 0's sample 1 has %zu tokens; the test needs more "
                     "than 3", plain[1].len);
        listen_all(hd);
        hd[0].stop_at[1] = 3;
        run_heard(cases[c][0], cases[c][1], out, &f, hd);
        cr_expect_eq(out[1].len, 3, "the stopped sample has %zu tokens", out[1].len);
        cr_expect_eq(out[1].finish, TERN_FINISH_STOPPED, "finish %d", out[1].finish);
        cr_expect_eq(memcmp(out[1].tokens, plain[1].tokens, 3 * sizeof(int32_t)), 0,
                     "the stopped sample's tokens are its first 3");
        cr_expect_eq(hd[0].calls[1], 3, "no call after STOP (%zu calls)", hd[0].calls[1]);
        gen_sample keep = plain[1]; /* compare the others only */
        plain[1] = out[1];
        expect_same(plain, out, "one sample stopped");
        plain[1] = keep;
        free_all(plain), free_all(out);
    }
}

/* A STOP on the token that ends its sample anyway (its stop token, its
 * length limit) changes nothing: the finish stays STOP or LENGTH. */
Test(gen_driver, on_token_stop_on_a_last_token_keeps_its_finish)
{
    static gen_sample plain[NS], out[NS];
    static heard hd[NR];
    fake f;
    run(0, 1, plain, &f);
    listen_all(hd);
    for (int i = 0; i < NR; i++)
        for (int k = 0; k < first_sample[i + 1] - first_sample[i]; k++)
            hd[i].stop_at[k] = plain[first_sample[i] + k].len;
    run_heard(0, 1, out, &f, hd);
    expect_same(plain, out, "STOP on every sample's last token");
    int stops = 0, lengths = 0;
    for (int s = 0; s < NS; s++) {
        stops += out[s].finish == TERN_FINISH_STOP;
        lengths += out[s].finish == TERN_FINISH_LENGTH && out[s].len > 0;
    }
    cr_expect(stops > 0 && lengths > 0, "both ends met a STOP: %d stop tokens, %d length limits",
              stops, lengths);
    free_all(plain), free_all(out);
}

/* What a prompt's on_top heard (ABI 1.16), and whether each came right
 * before its token's on_token. */
typedef struct tops_heard {
    uint32_t k_want;
    int pending, order_bad, k_bad, n_top, n_tok;
    int32_t ids[64][TERN_TOP_LOGPROBS_MAX];
    float lps[64][TERN_TOP_LOGPROBS_MAX];
} tops_heard;

static void on_top_heard(void *user, uint32_t sample, const int32_t *ids, const float *lps,
                         uint32_t k)
{
    tops_heard *h = user;
    h->order_bad += sample != 0 || h->pending;
    h->pending = 1;
    h->k_bad += k != h->k_want;
    if (h->n_top < 64 && k <= TERN_TOP_LOGPROBS_MAX) {
        memcpy(h->ids[h->n_top], ids, k * sizeof *ids);
        memcpy(h->lps[h->n_top], lps, k * sizeof *lps);
    }
    h->n_top++;
}

static int on_token_after_top(void *user, uint32_t sample, int32_t token, float logprob)
{
    (void)sample, (void)token, (void)logprob;
    tops_heard *h = user;
    h->order_bad += !h->pending;
    h->pending = 0;
    h->n_tok++;
    return TERN_GEN_CONTINUE;
}

static const float *sort_row; /* by_logit's row */
static int by_logit(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    if (sort_row[i] != sort_row[j])
        return sort_row[i] > sort_row[j] ? -1 : 1;
    return i - j;
}

/* Each token's alternatives are the k most likely of the logits it was
 * drawn from (ties to the lower id: the fake's logits take 8000 values over
 * 33000 tokens), with log-probs of softmax(logits / T), T = 1 when greedy,
 * before top_k; on_top comes right before on_token; listing them changes no
 * draw; greedy draws the first. */
Test(gen_driver, on_top_lists_each_tokens_most_likely_alternatives)
{
    static const float temps[3] = {0.0f, 0.7f, 1.0f};
    static int order[V];
    static float row[V];
    int32_t prompt[3] = {11, 12, 13};
    for (int c = 0; c < 3; c++) {
        gen_params gp = {.temperature = temps[c], .top_k = c == 2 ? 50 : 0, .top_p = 1.0f,
                         .max_new = 12, .seed = 5 + (uint64_t)c, .top_n = c == 1 ? 20 : 3};
        tops_heard h = {.k_want = (uint32_t)gp.top_n};
        gen_prompt listened = {.tokens = prompt, .len = 3, .n_samples = 1, .params = &gp,
                               .on_token = on_token_after_top, .on_token_user = &h,
                               .on_top = on_top_heard};
        gen_prompt plain = {.tokens = prompt, .len = 3, .n_samples = 1, .params = &gp};
        gen_sample a = {0}, b = {0};
        fake f;
        char err[256];
        gen_backend be = {.self = &f, .open = f_open, .prefill = f_prefill, .step = f_step,
                          .finish = f_finish};
        memset(&f, 0, sizeof f);
        cr_assert_eq(gen_run(&be, V, 64, 0, &listened, 1, &a, err, sizeof err), 0, "%s", err);
        memset(&f, 0, sizeof f);
        cr_assert_eq(gen_run(&be, V, 64, 0, &plain, 1, &b, err, sizeof err), 0, "%s", err);
        cr_assert_eq(a.len, 12);
        cr_expect_eq(memcmp(a.tokens, b.tokens, a.len * sizeof *a.tokens), 0,
                     "T %g: listing alternatives changes no draw", (double)temps[c]);
        cr_expect_eq(h.order_bad, 0, "on_top right before each on_token");
        cr_expect_eq(h.k_bad, 0, "k alternatives each time");
        cr_expect_eq(h.n_top, (int)a.len);
        const double inv_t = temps[c] > 0 ? 1.0 / temps[c] : 1.0;
        for (size_t t = 0; t < a.len; t++) {
            /* the logits token t was drawn from: the prompt's last row, then each token's */
            fill(row, t == 0 ? prompt[2] : a.tokens[t - 1], (int32_t)(2 + t));
            for (int j = 0; j < V; j++)
                order[j] = j;
            sort_row = row;
            qsort(order, V, sizeof *order, by_logit);
            double m = row[order[0]] * inv_t, z = 0;
            for (int j = 0; j < V; j++)
                z += exp(row[j] * inv_t - m);
            for (int i = 0; i < gp.top_n; i++) {
                cr_expect_eq(h.ids[t][i], order[i], "T %g, token %zu, alternative %d: id %d, "
                             "want %d", (double)temps[c], t, i, h.ids[t][i], order[i]);
                double want = row[order[i]] * inv_t - m - log(z);
                cr_expect_float_eq(h.lps[t][i], want, 1e-4, "T %g, token %zu, alternative %d",
                                   (double)temps[c], t, i);
            }
            if (temps[c] == 0.0f)
                cr_expect_eq(a.tokens[t], h.ids[t][0], "greedy draws the first alternative");
        }
        free(a.tokens), free(a.logprobs), free(b.tokens), free(b.logprobs);
    }
}
