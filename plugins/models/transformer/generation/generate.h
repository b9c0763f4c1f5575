/* generate.h: batched sampling with a KV cache. */
#ifndef TERN_GENERATE_H
#define TERN_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/model.h"
#include "layers/pool.h"

typedef struct gen_params {
    float temperature;     /* 0: greedy */
    int top_k;             /* 0: off */
    float top_p;           /* 1: off */
    int max_new;           /* most new tokens */
    const int32_t *stop;   /* generation ends after any of these */
    size_t n_stop;
    uint64_t seed;
    int top_n;             /* alternatives per token for on_top, [0, TERN_TOP_LOGPROBS_MAX] */
} gen_params;

typedef struct gen_prompt {
    const int32_t *tokens;
    size_t len;            /* >= 1 */
    int n_samples;         /* >= 1 */
    const gen_params *params;
    /* [len] or NULL: row t's input vector ([D] floats) instead of its
     * token's embedding where not NULL (a LLaVA's image rows,
     * llama_batch.row_input); the prompt's owner keeps them until the call
     * returns */
    const float *const *row_input;
    /* NULL, or called on gen_run's thread right after each of this prompt's
     * samples draws a token (tern_gen_request.on_token, ABI 1.15): `sample`
     * in [0, n_samples), the token and log-prob as the sample keeps them.
     * TERN_GEN_CONTINUE (0) goes on; any other answer ends the sample there,
     * finish 3 (TERN_FINISH_STOPPED), unless that token ended it anyway (a
     * stop token, its length limit). */
    int (*on_token)(void *user, uint32_t sample, int32_t token, float logprob);
    void *on_token_user;
    /* NULL, or called just before on_token with the token's params->top_n
     * alternatives (top_tokens; tern_gen_request.on_top, ABI 1.16), the same
     * user */
    void (*on_top)(void *user, uint32_t sample, const int32_t *ids, const float *logprobs,
                   uint32_t k);
} gen_prompt;

typedef struct gen_sample {
    int32_t *tokens;       /* malloc'd, the new tokens */
    float *logprobs;       /* malloc'd, under the distribution sampled from */
    size_t len;
    int finish;            /* 1: stop token, 2: max_new or the context's end,
                              3: the prompt's on_token stopped it */
} gen_sample;

/* A decoder with a KV cache, driven by gen_run (gen_driver.c). It decodes
 * at most `slots` samples at once; a sample keeps its slot from its prompt's
 * prefill to its last token, and a freed slot takes the next queued prompt's
 * samples (continuous batching). */
typedef struct gen_backend {
    void *self;
    /* Make room for one call: the prompts of `all` (packed, targets -1; the
     * caller keeps it until finish), their keys and values, and `slots`
     * samples' own rows: `own` of them each (P less the shortest prompt,
     * what the longest-lived sample can add), positions up to P (the
     * longest prompt and its new tokens, at most the model's). *logits:
     * where prefill and step write, [slots, V] floats on the host that the
     * backend owns until finish. 0, or -1 with a message. */
    int (*open)(void *self, const llama_batch *all, int slots, int P, int own, float **logits,
                char *err, size_t errn);
    /* Run prompts [i0, i1) of `all` and start n samples: sample k is of
     * prompt sample_prompt[k] (in [i0, i1)) and decodes in slot slot[k]
     * (free until now), its cache starting from its prompt's rows; writes
     * that prompt's last-row logits at logits[slot[k] * V]. 0, or -1. */
    int (*prefill)(void *self, int i0, int i1, const int32_t *sample_prompt,
                   const int32_t *slot, int n, char *err, size_t errn);
    /* Advance B rows: row r feeds token tok[r] at position pos[r] to the
     * sample in slot row_slot[r] (ascending); logits[r * V] out for r < B.
     * 0, or -1 with a message. */
    int (*step)(void *self, const int32_t *tok, const int32_t *pos, const int32_t *row_slot,
                int B, char *err, size_t errn);
    /* Free what open made; called once after open (even a failed one). */
    void (*finish)(void *self);
    /* The threads that sample each step's rows, one row per worker at a time
     * (NULL: the caller's thread alone); the samples are the same for any
     * team, each row drawing from its own stream. */
    pool *sampler;
} gen_backend;

/* Sample every prompt's continuations with decoder `be` of a model with V
 * tokens and P positions: out has sum(n_samples) entries in prompt order.
 * At most max_rows samples decode at once (0: all of them; never fewer than
 * the largest n_samples, whose samples start together from one prefill);
 * when a sample ends, the next queued prompt takes the freed slots. Every
 * sample draws from its own stream, so the result is the same for any
 * max_rows (up to the rounding of products over other batch rows).
 * Deterministic for given inputs and seeds (and on_token answers): a sample
 * that on_token ends frees its slot as a stop token would, and the other
 * samples draw on from their own streams. On failure frees what it
 * allocated in out and returns -1 with a message. */
int gen_run(const gen_backend *be, int V, int P, int max_rows, const gen_prompt *prompts,
            int n_prompts, gen_sample *out, char *err, size_t errn);

/* gen_run over the CPU decoder (generate.c). */
int llama_generate(llama_model *m, const gen_prompt *prompts, int n_prompts, int max_rows,
                   gen_sample *out, char *err, size_t errn);

/* Choose a token from logits[V] under p (exposed for tests). Writes the
 * log-prob of the choice under the distribution actually sampled from:
 * softmax(logits / T) restricted to the top-k, then to the top-p nucleus,
 * renormalised; greedy (T = 0) is a point mass, so its log-prob is 0.
 * work: 2 * V floats and V ints of scratch. */
int32_t sample_token(const float *logits, int v, const gen_params *p, uint64_t *rng_state,
                     float *logprob, float *work, int *idx);

/* The n most likely tokens of logits[V] (n <= V), most likely first, ties
 * to the lower id: ids[n] and their log-probs lps[n] under
 * softmax(logits / T), T = temperature, or 1 when temperature <= 0 (greedy
 * has alternatives too). No truncation: top_k and top_p change the draw,
 * not the model's ranking. */
void top_tokens(const float *logits, int v, float temperature, int n, int32_t *ids, float *lps);

#endif
