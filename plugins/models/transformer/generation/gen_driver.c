/*
 * gen_driver.c: the sampling loop of batched generation, over any decoder
 * (generate.h's gen_backend: the CPU one in generate.c, the CUDA plugin's
 * own). The decoder does the arithmetic; this file decides which rows
 * advance and what they sample, so every backend samples the same way.
 *
 * 1. Admit: queued prompts, in order, while their samples fit in free
 *    slots; one prefill runs them, and each sample's cache starts from its
 *    prompt and its logits from the prompt's last row.
 * 2. Decode: each sample in a slot draws a token from its logits
 *    (sample_token, with its own RNG stream), tells its prompt's on_top
 *    (the token's alternatives, top_tokens) and on_token where there are, stops at a stop token, its length limit or
 *    on_token's TERN_GEN_STOP and frees its slot, and the rest advance
 *    together one row each. Freed slots admit the next prompts (continuous
 *    batching), so the batch stays full while prompts wait and lengths vary.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generation/generate.h"
#include "layers/pool.h"
#include "tern/model.h"

typedef struct sample_state {
    const gen_params *p;
    int prompt;    /* its prompt's index */
    uint64_t rng;
    size_t prompt_len;
    int max_new;   /* limited by the context */
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

/* One decode step's sampling: row j of the n active slots draws token
 * tok[j] (log-prob lp[j]) from its slot's logits. Rows are spread over the
 * sampler's workers, each with its own scratch (work: 2V floats, idx: V
 * ints per worker). */
typedef struct sample_job {
    const float *logits;
    sample_state *st;
    const int32_t *slot_sample, *act; /* act[j]: row j's slot */
    int n, V;
    int32_t *tok;
    float *lp, *work;
    int *idx;
    int32_t *top_ids; /* [n, TERN_TOP_LOGPROBS_MAX]: row j's alternatives, where asked */
    float *top_lp;
} sample_job;

/* A step's sampling goes to the sampler's threads from this many softmax
 * elements (rows x vocabulary; about 0.2 ms on one core): below it, waking
 * the team costs more than it saves (a byte vocabulary of 259 tokens needs
 * 254 rows, a 50 257-token one 2). */
enum { PARALLEL_SAMPLING_ELEMENTS = 65536 };

static int sample_in_parallel(int rows, int V)
{
    return rows > 1 && (size_t)rows * (size_t)V >= PARALLEL_SAMPLING_ELEMENTS;
}

static void sample_rows(void *arg, int w, int nw)
{
    const sample_job *j = arg;
    int lo, hi;
    pool_share(j->n, w, nw, &lo, &hi);
    for (int r = lo; r < hi; r++) {
        const int k = j->act[r];
        sample_state *ss = &j->st[j->slot_sample[k]];
        j->tok[r] = sample_token(j->logits + (size_t)k * j->V, j->V, ss->p, &ss->rng, &j->lp[r],
                                 j->work + (size_t)w * 2 * j->V, j->idx + (size_t)w * j->V);
        if (ss->p->top_n > 0)
            top_tokens(j->logits + (size_t)k * j->V, j->V, ss->p->temperature,
                       ss->p->top_n < j->V ? ss->p->top_n : j->V,
                       j->top_ids + (size_t)r * TERN_TOP_LOGPROBS_MAX,
                       j->top_lp + (size_t)r * TERN_TOP_LOGPROBS_MAX);
    }
}

/* The call's queue and slots. */
typedef struct driver {
    const gen_backend *be;
    const gen_prompt *prompts;
    int n_prompts, slots, next; /* next: the first prompt not yet admitted */
    int32_t *first;             /* [prompts + 1] index of prompt i's first sample */
    int32_t *slot_sample;       /* [slots] the sample in the slot, or -1 */
    int32_t *new_prompt, *new_slot; /* [slots] an admission's samples */
    const sample_state *st;     /* [samples] */
} driver;

/* An admission waits for 1/ADMIT_SHARE of the slots to be free (or for
 * room for the whole queue): each is a prefill pass, whose cost on a GPU is
 * mostly fixed (its kernel launches: 1.17x static batching's speed without
 * the wait, 1.20x with it, docs/performance.md), and on a CPU a pass of few
 * rows runs narrow products. */
enum { ADMIT_SHARE = 8 };

/* Admit queued prompts, in order, while all the samples of the next one fit
 * in the free slots (lowest first); one prefill runs them. A prompt with no
 * room for new tokens (its samples ended LENGTH at the start) takes none. 0,
 * or -1. */
static int admit(driver *q, char *err, size_t errn)
{
    int free_slots = 0, n = 0, i0 = q->next;
    for (int k = 0; k < q->slots; k++)
        free_slots += q->slot_sample[k] < 0;
    const int waiting = q->first[q->n_prompts] - q->first[q->next];
    const int want = q->slots / ADMIT_SHARE < waiting ? q->slots / ADMIT_SHARE : waiting;
    if (waiting == 0 || free_slots < want)
        return 0;
    for (int k = 0; q->next < q->n_prompts; q->next++) {
        const int i = q->next;
        const int g = q->st[q->first[i]].max_new > 0 ? q->prompts[i].n_samples : 0;
        if (g > free_slots)
            break;
        for (int j = 0; j < g; j++, k++) {
            while (q->slot_sample[k] >= 0)
                k++;
            q->slot_sample[k] = q->first[i] + j;
            q->new_prompt[n] = i;
            q->new_slot[n++] = k;
        }
        free_slots -= g;
    }
    if (n == 0) /* nothing admitted, or only prompts without room */
        return 0;
    return q->be->prefill(q->be->self, i0, q->next, q->new_prompt, q->new_slot, n, err, errn);
}

int gen_run(const gen_backend *be, int V, int P, int max_rows, const gen_prompt *prompts,
            int n_prompts, gen_sample *out, char *err, size_t errn)
{
    int S = 0, cache_P = 1, widest = 1, shortest = P;
    size_t rows = 0;
    for (int i = 0; i < n_prompts; i++) {
        if (prompts[i].len < 1 || prompts[i].len >= (size_t)P || prompts[i].n_samples < 1) {
            snprintf(err, errn, "prompt %d has %zu tokens and %d samples; prompts need 1 to %d "
                     "tokens (the context is %d) and at least one sample", i, prompts[i].len,
                     prompts[i].n_samples, P - 1, P);
            return -1;
        }
        S += prompts[i].n_samples;
        widest = prompts[i].n_samples > widest ? prompts[i].n_samples : widest;
        shortest = (int)prompts[i].len < shortest ? (int)prompts[i].len : shortest;
        rows += prompts[i].len;
        /* the cache holds what is fed: the prompt and all but the last new token; an
         * 8K-context model asked for 64 new tokens needs no 8K cache per sample */
        int64_t need = (int64_t)prompts[i].len + (prompts[i].params->max_new > 0
                                                     ? prompts[i].params->max_new : 0);
        if (need > cache_P)
            cache_P = need < P ? (int)need : P;
    }
    /* a prompt's samples start together, from one prefill */
    int slots = max_rows > 0 && max_rows < S ? max_rows : S;
    slots = slots > widest ? slots : widest;
    /* a slot's own rows: what the longest-lived sample can add */
    const int own = P - shortest > 1 ? P - shortest : 1;
    driver q = {.be = be, .prompts = prompts, .n_prompts = n_prompts, .slots = slots};
    int32_t *start = malloc(((size_t)n_prompts + 1) * sizeof *start);
    int32_t *tok = malloc((rows ? rows : 1) * sizeof *tok);
    int32_t *pos = malloc((rows ? rows : 1) * sizeof *pos);
    int32_t *tgt = malloc((rows ? rows : 1) * sizeof *tgt);
    q.first = malloc(((size_t)n_prompts + 1) * sizeof *q.first);
    q.slot_sample = malloc((size_t)slots * sizeof *q.slot_sample);
    q.new_prompt = malloc((size_t)slots * sizeof *q.new_prompt);
    q.new_slot = malloc((size_t)slots * sizeof *q.new_slot);
    int32_t *row_tok = malloc((size_t)slots * sizeof *row_tok);
    int32_t *row_pos = malloc((size_t)slots * sizeof *row_pos);
    int32_t *row_slot = malloc((size_t)slots * sizeof *row_slot);
    sample_state *st = calloc((size_t)S + 1, sizeof *st);
    float *logits = NULL;
    const size_t nw = (size_t)pool_size(be->sampler);
    int32_t *act = malloc((size_t)slots * sizeof *act), *drawn = malloc((size_t)slots * sizeof *drawn);
    float *drawn_lp = malloc((size_t)slots * sizeof *drawn_lp);
    float *work = malloc(nw * 2 * (size_t)V * sizeof(float));
    int *idx = malloc(nw * (size_t)V * sizeof(int));
    int32_t *top_ids = malloc((size_t)slots * TERN_TOP_LOGPROBS_MAX * sizeof *top_ids);
    float *top_lp = malloc((size_t)slots * TERN_TOP_LOGPROBS_MAX * sizeof *top_lp);
    const float **row_in = NULL; /* [rows]: the prompts' row_input, packed */
    int rc = -1, opened = 0;
    memset(out, 0, (size_t)S * sizeof *out);
    if (!start || !tok || !pos || !tgt || !q.first || !q.slot_sample || !q.new_prompt ||
        !q.new_slot || !row_tok || !row_pos || !row_slot || !st || !act || !drawn ||
        !drawn_lp || !work || !idx || !top_ids || !top_lp) {
        snprintf(err, errn, "out of memory for generating %d samples", S);
        goto done;
    }

    /* the prompts packed, and every sample's stream */
    start[0] = q.first[0] = 0;
    int vectors = 0; /* some prompt rows are given as vectors */
    for (int i = 0; i < n_prompts; i++)
        vectors |= prompts[i].row_input != NULL;
    if (vectors && !(row_in = calloc(rows, sizeof *row_in))) {
        snprintf(err, errn, "out of memory for generating %d samples", S);
        goto done;
    }
    for (int i = 0, r = 0, s = 0; i < n_prompts; i++) {
        for (size_t t = 0; t < prompts[i].len; t++, r++) {
            tok[r] = prompts[i].tokens[t];
            pos[r] = (int32_t)t;
            tgt[r] = -1;
            if (prompts[i].row_input)
                row_in[r] = prompts[i].row_input[t];
        }
        start[i + 1] = start[i] + (int32_t)prompts[i].len;
        q.first[i + 1] = q.first[i] + prompts[i].n_samples;
        const size_t len = prompts[i].len;
        const gen_params *gp = prompts[i].params;
        for (int k = 0; k < prompts[i].n_samples; k++, s++) {
            st[s].p = gp;
            st[s].prompt = i;
            /* one independent stream per sample, from the request's seed */
            st[s].rng = gp->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(k + 1));
            st[s].prompt_len = len;
            st[s].max_new = gp->max_new < P - (int)len ? gp->max_new : P - (int)len;
            if (st[s].max_new <= 0)
                out[s].finish = TERN_FINISH_LENGTH;
        }
    }
    for (int k = 0; k < slots; k++)
        q.slot_sample[k] = -1;
    q.st = st;
    llama_batch all = {.n_seqs = n_prompts, .n_rows = (int)rows, .seq_start = start,
                       .tokens = tok, .pos = pos, .target = tgt, .row_input = row_in};
    opened = 1;
    if (be->open(be->self, &all, slots, cache_P, own, &logits, err, errn) != 0 ||
        admit(&q, err, errn) != 0)
        goto done;

    /* decode: sample from each slot's logits (the sampler's workers a share
     * of the rows each), advance the rows that go on, then fill the slots
     * that ended from the queue */
    for (;;) {
        int B = 0, busy = 0, n_act = 0;
        for (int k = 0; k < slots; k++)
            if (q.slot_sample[k] >= 0)
                act[n_act++] = k;
        sample_job job = {.logits = logits, .st = st, .slot_sample = q.slot_sample, .act = act,
                          .n = n_act, .V = V, .tok = drawn, .lp = drawn_lp, .work = work,
                          .idx = idx, .top_ids = top_ids, .top_lp = top_lp};
        if (n_act > 0)
            pool_run(sample_in_parallel(n_act, V) ? be->sampler : NULL, sample_rows, &job);
        for (int j = 0; j < n_act; j++) {
            const int k = act[j], s = q.slot_sample[k];
            const int32_t t = drawn[j];
            if (push(&out[s], &st[s].cap, t, drawn_lp[j]) != 0) {
                snprintf(err, errn, "out of memory while generating");
                goto done;
            }
            /* the caller hears every token, in slot order (the same order for
             * any sampler team); a stop token or the length limit still ends
             * the sample as it would without it */
            const gen_prompt *pr = &prompts[st[s].prompt];
            const uint32_t in_prompt = (uint32_t)(s - q.first[st[s].prompt]);
            if (pr->on_top && st[s].p->top_n > 0)
                pr->on_top(pr->on_token_user, in_prompt,
                           top_ids + (size_t)j * TERN_TOP_LOGPROBS_MAX,
                           top_lp + (size_t)j * TERN_TOP_LOGPROBS_MAX,
                           (uint32_t)(st[s].p->top_n < V ? st[s].p->top_n : V));
            const int halt = pr->on_token &&
                             pr->on_token(pr->on_token_user, in_prompt, t, drawn_lp[j]) !=
                                 TERN_GEN_CONTINUE;
            const int stop = is_stop(st[s].p, t), full = (int)out[s].len >= st[s].max_new;
            if (stop || full || halt) {
                out[s].finish = stop ? TERN_FINISH_STOP
                                     : full ? TERN_FINISH_LENGTH : TERN_FINISH_STOPPED;
                q.slot_sample[k] = -1;
                continue;
            }
            row_tok[B] = t;
            row_pos[B] = (int32_t)(st[s].prompt_len + out[s].len - 1);
            row_slot[B] = k;
            B++;
        }
        if (B > 0) {
            if (be->step(be->self, row_tok, row_pos, row_slot, B, err, errn) != 0)
                goto done;
            /* row r's logits to its slot (rows in slot order: r <= row_slot[r],
             * so going backwards never overwrites unread rows) */
            for (int r = B - 1; r >= 0; r--)
                if (row_slot[r] != r)
                    memcpy(logits + (size_t)row_slot[r] * V, logits + (size_t)r * V,
                           (size_t)V * sizeof(float));
        }
        if (admit(&q, err, errn) != 0)
            goto done;
        for (int k = 0; k < slots; k++)
            busy += q.slot_sample[k] >= 0;
        if (busy == 0)
            break;
    }
    rc = 0;
done:
    if (rc != 0)
        for (int s = 0; s < S; s++) {
            free(out[s].tokens);
            free(out[s].logprobs);
            memset(&out[s], 0, sizeof out[s]);
        }
    if (opened)
        be->finish(be->self);
    free(start), free(tok), free(pos), free(tgt), free(q.first), free(q.slot_sample);
    free(q.new_prompt), free(q.new_slot), free(row_tok), free(row_pos), free(row_slot), free(st);
    free(act), free(drawn), free(drawn_lp), free(work), free(idx), free(row_in);
    free(top_ids), free(top_lp);
    return rc;
}
