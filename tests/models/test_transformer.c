/* test_transformer.c: the `transformer` model plugin against PyTorch and
 * against itself: parity with the fixture made by tests/ref/llama_ref.py
 * (logits, log-probs, entropies, every gradient, greedy decoding),
 * generate/score consistency, bit-exact save/load, clear errors for corrupt
 * checkpoints, and a few AdamW steps that must reduce the loss. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"
#include "decoder/model.h"
#include "harness.h"
#include "hf/checkpoint.h"
#include "hf/hf_config.h"
#include "hf/safetensors.h"
#include "layers/fastexp.h"
#include "layers/simd.h"
#include "model_checks.h"
#include "tern/model.h"

#define FIXTURE TERN_TEST_SOURCE_DIR "/tests/fixtures/llama_micro"

/* ‖a − b‖ / ‖b‖ */
static double rel_err(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1e-300));
}

static float *tensor(const st_file *f, const char *name, size_t *n)
{
    const st_tensor *t = st_find(f, name);
    cr_assert_not_null(t, "fixture lacks %s", name);
    float *out = malloc(t->numel * sizeof(float));
    char err[256];
    cr_assert_eq(st_to_f32(t, out, t->numel, err, sizeof err), 0, "%s", err);
    *n = t->numel;
    return out;
}

/* The fixture's three sequences packed as a batch, with the objective's
 * coefficients moved to the rows that predict each position. */
typedef struct ref_batch {
    int32_t start[4], tokens[64], pos[64], target[64];
    float a[64], b[64], logp[64], ent[64];
    size_t len[3];
    llama_batch batch;
} ref_batch;

static void load_ref_batch(const st_file *ref, ref_batch *rb)
{
    int r = 0;
    rb->start[0] = 0;
    for (int s = 0; s < 3; s++) {
        char name[64];
        size_t n, k;
        snprintf(name, sizeof name, "tokens.%d", s);
        float *tok = tensor(ref, name, &n);
        snprintf(name, sizeof name, "coef_logp.%d", s);
        float *ca = tensor(ref, name, &k);
        snprintf(name, sizeof name, "coef_entropy.%d", s);
        float *cb = tensor(ref, name, &k);
        snprintf(name, sizeof name, "logp.%d", s);
        float *lp = tensor(ref, name, &k);
        snprintf(name, sizeof name, "entropy.%d", s);
        float *en = tensor(ref, name, &k);
        rb->len[s] = n;
        for (size_t i = 0; i < n; i++, r++) {
            int last = i + 1 == n;
            rb->tokens[r] = (int32_t)tok[i];
            rb->pos[r] = (int32_t)i;
            rb->target[r] = last ? -1 : (int32_t)tok[i + 1];
            rb->a[r] = last ? 0 : ca[i + 1];
            rb->b[r] = last ? 0 : cb[i + 1];
            rb->logp[r] = last ? 0 : lp[i + 1];
            rb->ent[r] = last ? 0 : en[i + 1];
        }
        rb->start[s + 1] = r;
        free(tok), free(ca), free(cb), free(lp), free(en);
    }
    rb->batch = (llama_batch){.n_seqs = 3, .n_rows = r, .seq_start = rb->start,
                              .tokens = rb->tokens, .pos = rb->pos, .target = rb->target};
}

static void load_fixture_model(llama_model *m)
{
    llama_config c;
    char err[512];
    cr_assert_eq(hf_config_read(FIXTURE "/config.json", &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(llama_model_init(m, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(checkpoint_load_weights(FIXTURE, m, NULL, err, sizeof err), 0, "%s", err);
}

/* head: LLAMA_HEAD_ALL, or LLAMA_HEAD_TARGETS (logits for the rows with a
 * target only, compacted: the log-probs and gradients must not change). */
static void check_parity(int threads, llama_head head)
{
    llama_model m;
    load_fixture_model(&m);
    cr_assert_eq(llama_model_set_threads(&m, threads), 0);
    st_file ref;
    char err[512];
    cr_assert_eq(st_open(FIXTURE "/reference.safetensors", &ref, err, sizeof err), 0, "%s", err);
    ref_batch rb;
    load_ref_batch(&ref, &rb);
    rb.batch.head = head;
    float logp[64], ent[64];
    cr_assert_eq(llama_forward(&m, &rb.batch, logp, ent, err, sizeof err), 0, "%s", err);

    /* logits, per sequence */
    for (int s = 0; s < 3 && head == LLAMA_HEAD_ALL; s++) {
        char name[64];
        size_t n;
        snprintf(name, sizeof name, "logits.%d", s);
        float *want = tensor(&ref, name, &n);
        double e = rel_err(m.logits + (size_t)rb.start[s] * m.cfg.vocab_size, want, n);
        cr_expect_lt(e, 1e-4, "logits of sequence %d: relative error %g", s, e);
        free(want);
    }
    double el = rel_err(logp, rb.logp, (size_t)rb.batch.n_rows);
    double ee = rel_err(ent, rb.ent, (size_t)rb.batch.n_rows);
    cr_expect_lt(el, 1e-4, "log-probs: relative error %g", el);
    cr_expect_lt(ee, 1e-4, "entropies: relative error %g", ee);

    llama_zero_grad(&m);
    llama_backward(&m, &rb.batch, rb.a, rb.b);
    for (size_t t = 0; t < llama_tensor_count(&m.cfg); t++) {
        llama_tensor_info ti;
        llama_tensor_describe(&m.cfg, t, &ti);
        char name[128];
        size_t n;
        snprintf(name, sizeof name, "grad.%s", ti.name);
        float *want = tensor(&ref, name, &n);
        cr_assert_eq(n, ti.numel);
        double e = rel_err(m.grads + ti.offset, want, n);
        cr_expect_lt(e, 1e-4, "%s: relative error %g", name, e);
        free(want);
    }
    st_close(&ref);
    llama_model_free(&m);
}

Test(parity, forward_and_gradients_match_pytorch) { check_parity(1, LLAMA_HEAD_ALL); }
/* the plain C loops every vector path falls back to (other CPUs, other
 * architectures): TERN_SIMD=none, read once per process, and each test runs
 * in a process of its own */
static void plain_c(void) { setenv("TERN_SIMD", "none", 1); }
Test(parity, forward_and_gradients_match_pytorch_in_plain_c, .init = plain_c)
{
    cr_assert_eq(simd_level_in_force(), SIMD_PLAIN);
    cr_assert_str_eq(simd_exp_path(), "libm expf");
    check_parity(1, LLAMA_HEAD_ALL);
}
/* 3 workers: uneven shares of rows, columns and (sequence, kv head) items */
Test(parity, forward_and_gradients_match_pytorch_on_3_threads)
{
    check_parity(3, LLAMA_HEAD_ALL);
}
Test(parity, gradients_match_pytorch_with_the_head_on_target_rows_only)
{
    check_parity(1, LLAMA_HEAD_TARGETS);
}

static const tern_model_ops *open_fixture_threads(harness *h, int threads)
{
    char group[256];
    snprintf(group, sizeof group, "path = \"" FIXTURE "\"; threads = %d;", threads);
    int rc = harness_open(h, "transformer", TERN_KIND_MODEL, group);
    cr_assert_eq(rc, TERN_OK, "%s", h->error);
    return harness_ops(h);
}

static const tern_model_ops *open_fixture(harness *h) { return open_fixture_threads(h, 1); }

Test(parity, greedy_decoding_matches_pytorch)
{
    harness h;
    const tern_model_ops *ops = open_fixture(&h);
    st_file ref;
    char err[512];
    cr_assert_eq(st_open(FIXTURE "/reference.safetensors", &ref, err, sizeof err), 0, "%s", err);
    size_t np, nt, nl;
    float *prompt_f = tensor(&ref, "greedy.prompt", &np);
    float *want_tok = tensor(&ref, "greedy.tokens", &nt);
    float *want_lp = tensor(&ref, "greedy.logp", &nl);
    int32_t prompt[16];
    for (size_t i = 0; i < np; i++)
        prompt[i] = (int32_t)prompt_f[i];
    tern_gen_request req = {.size = sizeof req, .prompt = prompt, .prompt_len = np,
                            .n_samples = 1, .max_new_tokens = (uint32_t)nt, .temperature = 0,
                            .top_p = 1, .seed = 1};
    tern_gen_output out = {.size = sizeof out};
    cr_assert_eq(ops->generate(h.state, &req, 1, &out), TERN_OK);
    cr_assert_eq(out.len, nt);
    for (size_t i = 0; i < nt; i++)
        cr_expect_eq(out.tokens[i], (int32_t)want_tok[i], "token %zu", i);
    /* greedy reports log-prob 0 (a point mass); the temperature-1 log-probs of
     * the same tokens come from score and must match PyTorch's */
    int32_t seq[32];
    memcpy(seq, prompt, np * sizeof *seq);
    memcpy(seq + np, out.tokens, nt * sizeof *seq);
    tern_sequence s = {.size = sizeof s, .tokens = seq, .len = np + nt, .start = np};
    float *lp = calloc(np + nt, sizeof *lp);
    cr_assert_eq(ops->score(h.state, &s, 1, &lp, NULL), TERN_OK);
    for (size_t i = 0; i < nt; i++) {
        cr_expect_float_eq(lp[np + i], want_lp[i], 1e-4, "logp of token %zu", i);
        cr_expect_eq(out.logprobs[i], 0.0f);
    }
    free(lp);
    ops->free_buffer(h.state, out.tokens);
    ops->free_buffer(h.state, out.logprobs);
    free(prompt_f), free(want_tok), free(want_lp);
    st_close(&ref);
    harness_close(&h);
}

/* Sampled log-probs equal score's at the same temperature (no truncation). */
static void check_generate_score(float temperature, int threads)
{
    char group[256];
    snprintf(group, sizeof group, "path = \"" FIXTURE "\"; threads = %d;", threads);
    expect_generate_matches_score("transformer", group, temperature);
}

Test(consistency, generate_and_score_agree_at_temperature_1) { check_generate_score(1.0f, 1); }
Test(consistency, generate_and_score_agree_at_temperature_0_7) { check_generate_score(0.7f, 1); }
Test(consistency, generate_and_score_agree_on_2_threads) { check_generate_score(1.0f, 2); }

Test(consistency, generation_is_deterministic_for_a_seed)
{
    harness h;
    const tern_model_ops *ops = open_fixture(&h);
    int32_t prompt[2] = {256, 65};
    tern_gen_output a = {.size = sizeof a}, b = {.size = sizeof b}, c = {.size = sizeof c};
    tern_gen_request req = {.size = sizeof req, .prompt = prompt, .prompt_len = 2,
                            .n_samples = 1, .max_new_tokens = 30, .temperature = 1,
                            .top_k = 40, .top_p = 0.9f, .seed = 7};
    cr_assert_eq(ops->generate(h.state, &req, 1, &a), TERN_OK);
    cr_assert_eq(ops->generate(h.state, &req, 1, &b), TERN_OK);
    req.seed = 8;
    cr_assert_eq(ops->generate(h.state, &req, 1, &c), TERN_OK);
    cr_expect_eq(a.len, b.len);
    cr_expect(memcmp(a.tokens, b.tokens, a.len * sizeof *a.tokens) == 0, "same seed, same text");
    cr_expect(a.len != c.len || memcmp(a.tokens, c.tokens, a.len * sizeof *a.tokens) != 0,
              "another seed, another text");
    for (size_t i = 0; i < a.len; i++)
        cr_expect_leq(a.logprobs[i], 0.0f);
    tern_gen_output *all[3] = {&a, &b, &c};
    for (int i = 0; i < 3; i++) {
        ops->free_buffer(h.state, all[i]->tokens);
        ops->free_buffer(h.state, all[i]->logprobs);
    }
    harness_close(&h);
}

/* Many prompts are prefilled a few at a time (generate.c's PREFILL_ROWS):
 * each sample is what its prompt alone gives, whichever pass held it. */
Test(consistency, prompts_prefilled_in_parts_give_each_prompts_samples)
{
    harness h;
    const tern_model_ops *ops = open_fixture(&h);
    enum { NP = 12, LEN = 50, NEW = 10 }; /* 600 prompt rows: more than one pass */
    int32_t prompts[NP][LEN];
    tern_gen_request req[NP];
    for (int i = 0; i < NP; i++) {
        prompts[i][0] = 256;
        for (int t = 1; t < LEN; t++)
            prompts[i][t] = (int32_t)((i * 31 + t * 7) % 250);
        req[i] = (tern_gen_request){.size = sizeof req[i], .prompt = prompts[i],
                                    .prompt_len = LEN, .n_samples = 2, .max_new_tokens = NEW,
                                    .temperature = 1, .top_p = 1, .seed = 100 + (uint64_t)i};
    }
    tern_gen_output all[2 * NP];
    for (int s = 0; s < 2 * NP; s++)
        all[s] = (tern_gen_output){.size = sizeof all[s]};
    cr_assert_eq(ops->generate(h.state, req, NP, all), TERN_OK);
    for (int i = 0; i < NP; i++) {
        tern_gen_output one[2] = {{.size = sizeof one[0]}, {.size = sizeof one[1]}};
        cr_assert_eq(ops->generate(h.state, &req[i], 1, one), TERN_OK);
        for (int k = 0; k < 2; k++) {
            const tern_gen_output *a = &all[2 * i + k], *b = &one[k];
            cr_assert_eq(a->len, b->len, "prompt %d sample %d: %zu and %zu tokens", i, k,
                         a->len, b->len);
            for (size_t t = 0; t < a->len; t++) {
                cr_expect_eq(a->tokens[t], b->tokens[t], "prompt %d sample %d token %zu", i, k, t);
                cr_expect_float_eq(a->logprobs[t], b->logprobs[t], 1e-5,
                                   "prompt %d sample %d logp %zu: %g and %g", i, k, t,
                                   a->logprobs[t], b->logprobs[t]);
            }
            ops->free_buffer(h.state, b->tokens);
            ops->free_buffer(h.state, b->logprobs);
        }
    }
    for (int s = 0; s < 2 * NP; s++) {
        ops->free_buffer(h.state, all[s].tokens);
        ops->free_buffer(h.state, all[s].logprobs);
    }
    harness_close(&h);
}

/* A request's n_samples share one copy of its prompt's keys and values
 * (generate.c): its samples are what as many copies of the prompt, one sample
 * each, give. Sample k of a request draws from the stream seed ^ (c * (k + 1))
 * (gen_driver.c), so copy k gets the seed that makes its one stream that. */
Test(consistency, samples_sharing_a_prompt_equal_copies_of_the_prompt)
{
    harness h;
    const tern_model_ops *ops = open_fixture_threads(&h, 2);
    enum { G = 5, LEN = 40, NEW = 16 };
    const uint64_t c = 0x9e3779b97f4a7c15ull, seed = 77;
    int32_t prompt[LEN];
    prompt[0] = 256;
    for (int t = 1; t < LEN; t++)
        prompt[t] = (int32_t)((t * 13) % 250);
    tern_gen_request shared = {.size = sizeof shared, .prompt = prompt, .prompt_len = LEN,
                               .n_samples = G, .max_new_tokens = NEW, .temperature = 1,
                               .top_p = 1, .seed = seed};
    tern_gen_request copies[G];
    for (int k = 0; k < G; k++) {
        copies[k] = shared;
        copies[k].n_samples = 1;
        copies[k].seed = seed ^ (c * (uint64_t)(k + 1)) ^ c;
    }
    tern_gen_output a[G], b[G];
    for (int k = 0; k < G; k++)
        a[k] = b[k] = (tern_gen_output){.size = sizeof a[k]};
    cr_assert_eq(ops->generate(h.state, &shared, 1, a), TERN_OK);
    cr_assert_eq(ops->generate(h.state, copies, G, b), TERN_OK);
    int differ = 0;
    for (int k = 0; k < G; k++) {
        cr_assert_eq(a[k].len, b[k].len, "sample %d: %zu and %zu tokens", k, a[k].len, b[k].len);
        for (size_t t = 0; t < a[k].len; t++) {
            cr_expect_eq(a[k].tokens[t], b[k].tokens[t], "sample %d token %zu", k, t);
            cr_expect_float_eq(a[k].logprobs[t], b[k].logprobs[t], 1e-5,
                               "sample %d logp %zu: %g and %g", k, t, a[k].logprobs[t],
                               b[k].logprobs[t]);
        }
        differ += k > 0 && (a[k].len != a[0].len ||
                            memcmp(a[k].tokens, a[0].tokens, a[k].len * sizeof(int32_t)) != 0);
    }
    cr_expect_gt(differ, 0, "the samples of one prompt all came out the same");
    for (int k = 0; k < G; k++) {
        ops->free_buffer(h.state, a[k].tokens);
        ops->free_buffer(h.state, a[k].logprobs);
        ops->free_buffer(h.state, b[k].tokens);
        ops->free_buffer(h.state, b[k].logprobs);
    }
    harness_close(&h);
}

/* Continuous batching (gen_driver.c): fewer slots than samples, refilled as
 * samples end, give what one batch of all of them gives. */
Test(consistency, continuous_batching_equals_one_batch)
{
    expect_decode_rows_change_nothing("transformer", "path = \"" FIXTURE "\"; threads = 2;",
                                      1e-5);
}

/* tern_gen_request.on_token (ABI 1.15): heard token by token, a STOP ends
 * one sample only, a 1.14 caller's request is never heard */
Test(consistency, on_token_hears_each_token_and_stops_one_sample)
{
    expect_on_token_hears_and_stops("transformer", "path = \"" FIXTURE "\"; threads = 2;", 1e-5);
}

/* 1 and 3 threads draw the same tokens with the same log-probs, truncation
 * included: the products split their rows and columns over the threads in
 * ways that keep the bits. (The byte vocabulary is too small for a step's
 * rows to be sampled on the threads; test_gen_driver checks that part.) */
Test(consistency, samples_are_the_same_on_1_and_3_threads)
{
    enum { NS = 8 };
    int32_t p0[4] = {256, 72, 105, 33}, p1[6] = {256, 65, 66, 67, 68, 69};
    tern_gen_request req[2];
    for (int i = 0; i < 2; i++)
        req[i] = (tern_gen_request){.size = sizeof req[i], .prompt = i ? p1 : p0,
                                    .prompt_len = i ? 6 : 4, .n_samples = NS / 2,
                                    .max_new_tokens = 24, .temperature = 0.9f, .top_k = 20,
                                    .top_p = 0.95f, .seed = 5 + (uint64_t)i};
    tern_gen_output out[2][NS];
    harness h[2];
    for (int c = 0; c < 2; c++) {
        const tern_model_ops *ops = open_fixture_threads(&h[c], c ? 3 : 1);
        for (int s = 0; s < NS; s++)
            out[c][s] = (tern_gen_output){.size = sizeof out[c][s]};
        cr_assert_eq(ops->generate(h[c].state, req, 2, out[c]), TERN_OK, "%s", h[c].error);
    }
    for (int s = 0; s < NS; s++) {
        cr_assert_eq(out[0][s].len, out[1][s].len, "sample %d: %zu and %zu tokens", s,
                     out[0][s].len, out[1][s].len);
        cr_expect_eq(memcmp(out[0][s].tokens, out[1][s].tokens, out[0][s].len * 4), 0,
                     "sample %d's tokens on 1 and 3 threads", s);
        cr_expect_eq(memcmp(out[0][s].logprobs, out[1][s].logprobs, out[0][s].len * 4), 0,
                     "sample %d's log-probs on 1 and 3 threads", s);
    }
    for (int c = 0; c < 2; c++) {
        const tern_model_ops *ops = harness_ops(&h[c]);
        for (int s = 0; s < NS; s++) {
            ops->free_buffer(h[c].state, out[c][s].tokens);
            ops->free_buffer(h[c].state, out[c][s].logprobs);
        }
        harness_close(&h[c]);
    }
}

Test(consistency, stop_tokens_end_a_sample)
{
    harness h;
    const tern_model_ops *ops = open_fixture(&h);
    int32_t prompt[2] = {256, 65}, stop[1];
    tern_gen_output a = {.size = sizeof a};
    tern_gen_request req = {.size = sizeof req, .prompt = prompt, .prompt_len = 2,
                            .n_samples = 1, .max_new_tokens = 10, .temperature = 0, .top_p = 1};
    cr_assert_eq(ops->generate(h.state, &req, 1, &a), TERN_OK);
    stop[0] = a.tokens[2]; /* greedy: the third token will come again */
    ops->free_buffer(h.state, a.tokens);
    ops->free_buffer(h.state, a.logprobs);
    req.stop = stop;
    req.n_stop = 1;
    a = (tern_gen_output){.size = sizeof a};
    cr_assert_eq(ops->generate(h.state, &req, 1, &a), TERN_OK);
    cr_expect_leq(a.len, 3);
    cr_expect_eq(a.tokens[a.len - 1], stop[0]);
    cr_expect_eq(a.finish, 1);
    ops->free_buffer(h.state, a.tokens);
    ops->free_buffer(h.state, a.logprobs);
    harness_close(&h);
}

Test(training, adamw_steps_reduce_the_loss)
{
    expect_training_halves_nll("transformer", "init = { preset = \"tiny\"; seed = 3; "
                                              "num_hidden_layers = 2; };");
}

Test(checkpoint, save_load_round_trip_is_bit_exact)
{
    harness h;
    int rc = harness_open(&h, "transformer", TERN_KIND_MODEL,
                          "init = { preset = \"tiny\"; seed = 5; num_hidden_layers = 1; };");
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    const tern_model_ops *ops = harness_ops(&h);
    /* one optimizer step, so the AdamW state is not all zeros */
    int32_t toks[5] = {256, 1, 2, 3, 4};
    tern_sequence s = {.size = sizeof s, .tokens = toks, .len = 5, .start = 1};
    float d[5] = {0, -1, -1, -1, -1};
    const float *g[1] = {d};
    cr_assert_eq(ops->backward(h.state, &s, 1, g, NULL), TERN_OK);
    tern_optim_step st = {.size = sizeof st, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999,
                          .eps = 1e-8, .grad_clip = 1.0};
    cr_assert_eq(ops->step(h.state, &st), TERN_OK);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ckpt_%d", TERN_TEST_WORK_DIR, (int)getpid());
    cr_assert_eq(ops->save(h.state, dir, 1), TERN_OK);

    harness h2;
    char group[700];
    snprintf(group, sizeof group, "path = \"%s\";", dir);
    cr_assert_eq(harness_open(&h2, "transformer", TERN_KIND_MODEL, group), TERN_OK, "%s",
                 h2.error);
    cr_assert_eq(ops->load(h2.state, dir, 1), TERN_OK);
    const tern_tensor *a, *b;
    size_t na, nb;
    cr_assert_eq(ops->tensors(h.state, &a, &na), TERN_OK);
    cr_assert_eq(ops->tensors(h2.state, &b, &nb), TERN_OK);
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_expect_str_eq(a[i].name, b[i].name);
        cr_expect(a[i].bytes == b[i].bytes && memcmp(a[i].data, b[i].data, a[i].bytes) == 0,
                  "%s differs after save/load", a[i].name);
    }
    /* the same next step from both: the optimizer state came back too */
    cr_assert_eq(ops->backward(h.state, &s, 1, g, NULL), TERN_OK);
    cr_assert_eq(ops->backward(h2.state, &s, 1, g, NULL), TERN_OK);
    cr_assert_eq(ops->step(h.state, &st), TERN_OK);
    cr_assert_eq(ops->step(h2.state, &st), TERN_OK);
    for (size_t i = 0; i < na; i++)
        cr_expect(memcmp(a[i].data, b[i].data, a[i].bytes) == 0, "%s differs after a step",
                  a[i].name);
    harness_close(&h2);
    harness_close(&h);
    result r;
    run(&r, "rm -rf %s", dir);
}

/* The gradients op (ABI 1.7) as data-parallel trainer ranks use it: one
 * instance's backward over two sequences equals the gradients of two
 * instances, one sequence each, summed into one of them before its step. */
Test(training, gradients_summed_across_instances_equal_one_batch)
{
    const char *init = "init = { preset = \"tiny\"; seed = 7; num_hidden_layers = 2; };";
    harness whole, half1, half2;
    cr_assert_eq(harness_open(&whole, "transformer", TERN_KIND_MODEL, init), TERN_OK, "%s",
                 whole.error);
    cr_assert_eq(harness_open(&half1, "transformer", TERN_KIND_MODEL, init), TERN_OK, "%s",
                 half1.error);
    cr_assert_eq(harness_open(&half2, "transformer", TERN_KIND_MODEL, init), TERN_OK, "%s",
                 half2.error);
    const tern_model_ops *ops = harness_ops(&whole);
    cr_assert(TERN_HAS(ops, gradients) && ops->gradients, "transformer has no gradients op");
    int32_t t1[6] = {256, 10, 20, 30, 40, 50}, t2[4] = {256, 7, 8, 9};
    tern_sequence s[2] = {{.size = sizeof s[0], .tokens = t1, .len = 6, .start = 2},
                          {.size = sizeof s[1], .tokens = t2, .len = 4, .start = 1}};
    float d1[6] = {0, 0, -0.5f, 0.25f, -1, 0.75f}, d2[4] = {0, 1, -0.5f, -0.25f};
    const float *g[2] = {d1, d2};
    cr_assert_eq(ops->backward(whole.state, s, 2, g, NULL), TERN_OK);
    cr_assert_eq(ops->backward(half1.state, &s[0], 1, &g[0], NULL), TERN_OK);
    cr_assert_eq(ops->backward(half2.state, &s[1], 1, &g[1], NULL), TERN_OK);

    const tern_tensor *p, *ga, *gb, *gw;
    size_t np, na, nb, nw;
    cr_assert_eq(ops->tensors(whole.state, &p, &np), TERN_OK);
    cr_assert_eq(ops->gradients(whole.state, &gw, &nw), TERN_OK);
    cr_assert_eq(ops->gradients(half1.state, &ga, &na), TERN_OK);
    cr_assert_eq(ops->gradients(half2.state, &gb, &nb), TERN_OK);
    cr_assert(na == np && nb == np, "%zu and %zu gradient tensors for %zu tensors", na, nb, np);
    double norm = 0;
    for (size_t i = 0; i < np; i++) {
        cr_assert_str_eq(ga[i].name, p[i].name);
        cr_assert_eq(ga[i].bytes, p[i].bytes, "%s", p[i].name);
        cr_assert_eq(ga[i].dtype, TERN_DTYPE_F32);
        float *a = ga[i].data;
        const float *b = gb[i].data;
        for (size_t k = 0; k < ga[i].bytes / sizeof(float); k++) {
            a[k] += b[k]; /* what MPI_Allreduce's sum does */
            norm += (double)a[k] * a[k];
        }
        double e = rel_err(a, gw[i].data, ga[i].bytes / sizeof(float));
        cr_expect_lt(e, 1e-5, "%s: the summed gradient differs by %g", p[i].name, e);
    }
    cr_assert_gt(norm, 0, "backward left no gradients");
    tern_optim_step st = {.size = sizeof st, .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999,
                          .eps = 1e-8, .grad_clip = 1.0};
    tern_optim_step st2 = st;
    cr_assert_eq(ops->step(whole.state, &st), TERN_OK);
    cr_assert_eq(ops->step(half1.state, &st2), TERN_OK);
    cr_expect_float_eq(st.grad_norm, st2.grad_norm, 1e-5 * st.grad_norm, "norms %g and %g",
                       st.grad_norm, st2.grad_norm);
    const tern_tensor *q;
    size_t nq;
    cr_assert_eq(ops->tensors(half1.state, &q, &nq), TERN_OK);
    for (size_t i = 0; i < np; i++) {
        size_t n = p[i].bytes / sizeof(float);
        double e = rel_err(q[i].data, p[i].data, n);
        /* AdamW's first step moves each weight by about lr whatever the
         * gradient's size, so a rounding difference in a gradient near 0
         * moves a weight by up to 2 lr */
        cr_expect_lt(e, 1e-4, "%s: relative difference %g after the step", p[i].name, e);
    }
    /* the step used and zeroed them */
    cr_assert_eq(ops->gradients(half1.state, &ga, &na), TERN_OK);
    for (size_t i = 0; i < na; i++)
        for (size_t k = 0; k < ga[i].bytes / sizeof(float); k++)
            cr_assert_eq(((const float *)ga[i].data)[k], 0.0f, "%s not zeroed", ga[i].name);
    harness_close(&half2);
    harness_close(&half1);
    harness_close(&whole);
}

/* batch_tokens splits score and backward into chunks of whole sequences:
 * the log-probs and the accumulated gradients are those of one pass. */
Test(training, chunks_of_batch_tokens_give_one_batchs_results)
{
    harness whole, chunked;
    cr_assert_eq(harness_open(&whole, "transformer", TERN_KIND_MODEL,
                              "init = { preset = \"tiny\"; seed = 7; num_hidden_layers = 2; };"),
                 TERN_OK, "%s", whole.error);
    /* 7 tokens a chunk: the 6-token sequence alone, then the 4 and 3 of the others apart */
    cr_assert_eq(harness_open(&chunked, "transformer", TERN_KIND_MODEL,
                              "init = { preset = \"tiny\"; seed = 7; num_hidden_layers = 2; }; "
                              "batch_tokens = 7;"),
                 TERN_OK, "%s", chunked.error);
    const tern_model_ops *ops = harness_ops(&whole);
    int32_t t1[6] = {256, 10, 20, 30, 40, 50}, t2[4] = {256, 7, 8, 9}, t3[3] = {256, 1, 2};
    tern_sequence s[3] = {{.size = sizeof s[0], .tokens = t1, .len = 6, .start = 2},
                          {.size = sizeof s[1], .tokens = t2, .len = 4, .start = 1},
                          {.size = sizeof s[2], .tokens = t3, .len = 3, .start = 1}};
    float d1[6] = {0, 0, -0.5f, 0.25f, -1, 0.75f}, d2[4] = {0, 1, -0.5f, -0.25f},
          d3[3] = {0, 0.5f, 2};
    const float *g[3] = {d1, d2, d3};
    float lw[13], lc[13], ew[13], ec[13];
    float *lpw[3] = {lw, lw + 6, lw + 10}, *lpc[3] = {lc, lc + 6, lc + 10};
    float *enw[3] = {ew, ew + 6, ew + 10}, *enc[3] = {ec, ec + 6, ec + 10};
    cr_assert_eq(ops->score(whole.state, s, 3, lpw, enw), TERN_OK);
    cr_assert_eq(ops->score(chunked.state, s, 3, lpc, enc), TERN_OK);
    for (int i = 0; i < 13; i++) {
        cr_expect_float_eq(lw[i], lc[i], 1e-5, "logp %d: %g and %g", i, lw[i], lc[i]);
        cr_expect_float_eq(ew[i], ec[i], 1e-5, "entropy %d: %g and %g", i, ew[i], ec[i]);
    }
    cr_assert_eq(ops->backward(whole.state, s, 3, g, NULL), TERN_OK);
    cr_assert_eq(ops->backward(chunked.state, s, 3, g, NULL), TERN_OK);
    const tern_tensor *gw, *gc;
    size_t nw, nc;
    cr_assert_eq(ops->gradients(whole.state, &gw, &nw), TERN_OK);
    cr_assert_eq(ops->gradients(chunked.state, &gc, &nc), TERN_OK);
    cr_assert_eq(nw, nc);
    double norm = 0;
    for (size_t i = 0; i < nw; i++) {
        size_t n = gw[i].bytes / sizeof(float);
        for (size_t k = 0; k < n; k++)
            norm += (double)((const float *)gw[i].data)[k] * ((const float *)gw[i].data)[k];
        double e = rel_err(gc[i].data, gw[i].data, n);
        cr_expect_lt(e, 1e-5, "%s: chunked gradient differs by %g", gw[i].name, e);
    }
    cr_assert_gt(norm, 0);
    harness_close(&chunked);
    harness_close(&whole);
}

/* The responses of a group share their prompt in one packed sequence
 * (front.c's branches): the log-probs, entropies and gradients are those of
 * the sequences scored one at a time, where nothing can be shared. */
Test(training, shared_prompts_give_each_sequences_results)
{
    harness one, apart;
    const char *init = "init = { preset = \"tiny\"; seed = 11; num_hidden_layers = 2; };";
    cr_assert_eq(harness_open(&one, "transformer", TERN_KIND_MODEL, init), TERN_OK, "%s",
                 one.error);
    cr_assert_eq(harness_open(&apart, "transformer", TERN_KIND_MODEL, init), TERN_OK, "%s",
                 apart.error);
    const tern_model_ops *ops = harness_ops(&one);
    /* three responses to one 4-token prompt, of 3, 1 and 5 tokens, then another prompt */
    int32_t a[7] = {256, 5, 6, 7, 40, 41, 42}, b[5] = {256, 5, 6, 7, 90},
            c[9] = {256, 5, 6, 7, 40, 12, 13, 14, 15}, d[5] = {256, 5, 9, 70, 71};
    tern_sequence s[4] = {{.size = sizeof s[0], .tokens = a, .len = 7, .start = 4},
                          {.size = sizeof s[1], .tokens = b, .len = 5, .start = 4},
                          {.size = sizeof s[2], .tokens = c, .len = 9, .start = 4},
                          {.size = sizeof s[3], .tokens = d, .len = 5, .start = 3}};
    float l1[26], l2[26], e1[26], e2[26];
    float *lp1[4] = {l1, l1 + 7, l1 + 12, l1 + 21}, *lp2[4] = {l2, l2 + 7, l2 + 12, l2 + 21};
    float *en1[4] = {e1, e1 + 7, e1 + 12, e1 + 21}, *en2[4] = {e2, e2 + 7, e2 + 12, e2 + 21};
    cr_assert_eq(ops->score(one.state, s, 4, lp1, en1), TERN_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(ops->score(apart.state, &s[i], 1, &lp2[i], &en2[i]), TERN_OK);
    for (int i = 0; i < 26; i++) {
        cr_expect_float_eq(l1[i], l2[i], 1e-5, "logp %d: %g shared, %g apart", i, l1[i], l2[i]);
        cr_expect_float_eq(e1[i], e2[i], 1e-5, "entropy %d: %g shared, %g apart", i, e1[i],
                           e2[i]);
    }
    cr_assert_lt(l1[7 + 4], -1e-3, "the second response's token was not scored");
    float g[26];
    for (int i = 0; i < 26; i++)
        g[i] = (float)((i * 7) % 5) * 0.25f - 0.5f;
    const float *gs[4] = {g, g + 7, g + 12, g + 21};
    cr_assert_eq(ops->backward(one.state, s, 4, gs, (const float *const *)gs), TERN_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(ops->backward(apart.state, &s[i], 1, &gs[i], &gs[i]), TERN_OK);
    const tern_tensor *g1, *g2;
    size_t n1, n2;
    cr_assert_eq(ops->gradients(one.state, &g1, &n1), TERN_OK);
    cr_assert_eq(ops->gradients(apart.state, &g2, &n2), TERN_OK);
    cr_assert_eq(n1, n2);
    double norm = 0;
    for (size_t i = 0; i < n1; i++) {
        size_t n = g1[i].bytes / sizeof(float);
        for (size_t k = 0; k < n; k++)
            norm += (double)((const float *)g2[i].data)[k] * ((const float *)g2[i].data)[k];
        double e = rel_err(g1[i].data, g2[i].data, n);
        cr_expect_lt(e, 1e-5, "%s: the shared-prompt gradient differs by %g", g1[i].name, e);
    }
    cr_assert_gt(norm, 0);
    harness_close(&apart);
    harness_close(&one);
}

/* Copy the fixture to a scratch dir, let `mutate` (a shell command run in it)
 * break it, and expect loading to fail with `want` in the message. */
static void expect_load_error(const char *mutate, const char *want)
{
    char dir[512], group[700];
    snprintf(dir, sizeof dir, "%s/broken_%d", TERN_TEST_WORK_DIR, (int)getpid());
    result r;
    run(&r, "rm -rf %s && cp -r %s %s && cd %s && %s", dir, FIXTURE, dir, dir, mutate);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(group, sizeof group, "path = \"%s\";", dir);
    harness h;
    cr_expect_neq(harness_open(&h, "transformer", TERN_KIND_MODEL, group), TERN_OK);
    cr_expect(strstr(h.error, want), "expected '%s' in: %s", want, h.error);
    harness_close(&h);
    run(&r, "rm -rf %s", dir);
}

Test(checkpoint, truncated_safetensors_is_named)
{
    expect_load_error("truncate -s -100 model.safetensors", "truncated");
}

Test(checkpoint, shape_disagreeing_with_config_is_named)
{
    expect_load_error("sed -i 's/\"intermediate_size\": 80/\"intermediate_size\": 96/' config.json",
                      "model.layers.0.mlp.gate_proj.weight' has shape [80, 32], config.json "
                      "implies [96, 32]");
}

Test(checkpoint, missing_tensor_is_named)
{
    expect_load_error("sed -i 's/\"num_hidden_layers\": 2/\"num_hidden_layers\": 3/' config.json",
                      "tensor 'model.layers.2.input_layernorm.weight' is missing");
}

Test(checkpoint, missing_directory_and_bad_config)
{
    harness h;
    cr_expect_neq(harness_open(&h, "transformer", TERN_KIND_MODEL, "path = \"/nonexistent/m\";"),
                  TERN_OK);
    /* named as missing, not as a directory without a config.json */
    cr_expect(strstr(h.error, "/nonexistent/m: no such file or directory"), "%s", h.error);
    harness_close(&h);
    expect_load_error("sed -i 's/LlamaForCausalLM/Qwen2ForCausalLM/' config.json",
                      "Qwen2ForCausalLM");
}

Test(settings, path_and_init_together_are_refused)
{
    harness h;
    cr_expect_neq(harness_open(&h, "transformer", TERN_KIND_MODEL,
                               "path = \"x\"; init = { preset = \"tiny\"; };"),
                  TERN_OK);
    cr_expect(strstr(h.error, "give either path"), "%s", h.error);
    harness_close(&h);
}

/* The thread count changes no result: the same batch scored and
 * back-propagated on 1, 2 and 3 threads gives the same log-probs and the same
 * gradients, bit for bit, so a run's figures do not depend on
 * model.threads (issue 23: reproducible figures). */
Test(consistency, thread_count_changes_no_bit)
{
    enum { NS = 24, LEN = 40 };
    static int32_t toks[NS][LEN];
    tern_sequence seqs[NS];
    for (int s = 0; s < NS; s++) {
        for (int i = 0; i < LEN; i++)
            toks[s][i] = (int32_t)((31 * s + 7 * i + 5) % 200);
        seqs[s] = (tern_sequence){.size = sizeof seqs[s], .tokens = toks[s],
                                  .len = (size_t)(LEN - s % 7), .start = 3,
                                  .temperature = 1};
    }
    static float lp[3][NS][LEN], dl[NS][LEN];
    float *plp[NS], *pdl[NS];
    for (int s = 0; s < NS; s++) {
        pdl[s] = dl[s];
        for (int i = 0; i < LEN; i++)
            dl[s][i] = i >= 3 ? -1.0f / (float)(i + s + 1) : 0;
    }
    const tern_tensor *g[3];
    size_t n[3];
    harness h[3];
    for (int k = 0; k < 3; k++) {
        char group[256];
        snprintf(group, sizeof group,
                 "init = { preset = \"tiny\"; seed = 1; }; threads = %d;", k + 1);
        cr_assert_eq(harness_open(&h[k], "transformer", TERN_KIND_MODEL, group), TERN_OK, "%s",
                     h[k].error);
        const tern_model_ops *o = harness_ops(&h[k]);
        for (int s = 0; s < NS; s++)
            plp[s] = lp[k][s];
        cr_assert_eq(o->score(h[k].state, seqs, NS, plp, NULL), TERN_OK);
        cr_assert_eq(o->backward(h[k].state, seqs, NS, (const float *const *)pdl, NULL),
                     TERN_OK);
        cr_assert_eq(o->gradients(h[k].state, &g[k], &n[k]), TERN_OK);
    }
    for (int k = 1; k < 3; k++) {
        cr_expect_eq(memcmp(lp[0], lp[k], sizeof lp[0]), 0, "log-probs on %d threads", k + 1);
        cr_assert_eq(n[k], n[0]);
        for (size_t t = 0; t < n[0]; t++)
            cr_expect_eq(memcmp(g[0][t].data, g[k][t].data, g[0][t].bytes), 0,
                         "gradient of %s on %d threads differs from 1 thread's", g[0][t].name,
                         k + 1);
    }
    for (int k = 0; k < 3; k++)
        harness_close(&h[k]);
}
