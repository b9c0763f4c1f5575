/* test_gen_driver.c: generation's sampling loop (generation/gen_driver.c)
 * over a fake decoder whose logits are a fixed function of the fed token and
 * its position, so any batching gives the same bits: slots refilled from the
 * queue (continuous batching) and rows sampled on several threads must give
 * exactly what one batch on one thread gives, with a vocabulary large
 * enough that the sampling runs on the threads. */
#include <criterion/criterion.h>
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

/* Seven prompts of 1 to 7 samples, varied lengths and truncations; a stop
 * token ends some samples early, and prompt 1 (sample 3) asks for none. */
static void run(int max_rows, int threads, gen_sample *out, fake *f)
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
