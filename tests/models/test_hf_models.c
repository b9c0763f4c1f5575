/* test_hf_models.c: the Hugging Face architectures beyond plain Llama
 * against PyTorch (fixtures of tests/ref/hf_models_ref.py):
 *
 *   qwen2_micro   Qwen2ForCausalLM, q/k/v biases, untied, F32 in 2 shards
 *   llama3_micro  LlamaForCausalLM, Llama 3 RoPE scaling, attention and MLP
 *                 biases, tied, BF16
 *   gpt2_micro    GPT2LMHeadModel, names without "transformer.", with the
 *                 attn.bias buffers of old files
 *
 * Each is loaded the way the plugin loads it (hf_config_read,
 * checkpoint_load_weights), and checked: logits, log-probs and entropies,
 * every gradient, greedy decoding through the KV cache, a save -> reload
 * round trip in HF naming and layout, and that the features matter (a model
 * without the bias / the scaling / the positions gives other logits, so the
 * parity checks would notice them missing). Then the refusals, each naming
 * its file and key. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"
#include "decoder/model.h"
#include "generation/generate.h"
#include "harness.h"
#include "hf/checkpoint.h"
#include "hf/hf_config.h"
#include "hf/safetensors.h"
#include "tern/model.h"
#include "tokenizer/tokenizer.h"

#define FIXTURES TERN_TEST_SOURCE_DIR "/tests/fixtures/"
#define N_SEQS 2
#define MAX_ROWS 64

static float *tensor(const st_file *f, const char *name, size_t *n)
{
    const st_tensor *t = st_find(f, name);
    cr_assert_not_null(t, "reference lacks %s", name);
    float *out = malloc(t->numel * sizeof(float));
    char err[256];
    cr_assert_eq(st_to_f32(t, out, t->numel, err, sizeof err), 0, "%s", err);
    *n = t->numel;
    return out;
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

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

/* A fixture directory loaded as the plugin loads a `path`. */
static void load_dir(const char *dir, llama_model *m)
{
    char cfg[1024], err[1024];
    llama_config c;
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    cr_assert_eq(hf_config_read(cfg, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(llama_model_init(m, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(checkpoint_load_weights(dir, m, NULL, err, sizeof err), 0, "%s", err);
}

/* The reference's sequences packed as a batch, the objective's coefficients
 * moved to the rows that predict each position. */
typedef struct ref_batch {
    int32_t start[N_SEQS + 1], tokens[MAX_ROWS], pos[MAX_ROWS], target[MAX_ROWS];
    float a[MAX_ROWS], b[MAX_ROWS], logp[MAX_ROWS], ent[MAX_ROWS];
    llama_batch batch;
} ref_batch;

static void load_ref_batch(const st_file *ref, ref_batch *rb)
{
    int r = 0;
    rb->start[0] = 0;
    for (int s = 0; s < N_SEQS; s++) {
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
    rb->batch = (llama_batch){.n_seqs = N_SEQS, .n_rows = r, .seq_start = rb->start,
                              .tokens = rb->tokens, .pos = rb->pos, .target = rb->target};
}

/* Max |logits − reference| over the fixture's sequences after a forward. */
static double logits_diff(const llama_model *m, const st_file *ref, const ref_batch *rb)
{
    double worst = 0;
    for (int s = 0; s < N_SEQS; s++) {
        char name[64];
        size_t n;
        snprintf(name, sizeof name, "logits.%d", s);
        float *want = tensor(ref, name, &n);
        cr_assert_eq(n, (size_t)(rb->start[s + 1] - rb->start[s]) * (size_t)m->cfg.vocab_size);
        worst = fmax(worst, max_abs_diff(m->logits + (size_t)rb->start[s] * m->cfg.vocab_size,
                                         want, n));
        free(want);
    }
    return worst;
}

/* ---- parity: logits, log-probs, entropies, gradients ---------------------- */

static void check_parity(const char *name, int threads)
{
    char dir[512], path[600], err[512];
    snprintf(dir, sizeof dir, FIXTURES "%s", name);
    llama_model m;
    load_dir(dir, &m);
    cr_assert_eq(llama_model_set_threads(&m, threads), 0);
    st_file ref;
    snprintf(path, sizeof path, "%s/reference.safetensors", dir);
    cr_assert_eq(st_open(path, &ref, err, sizeof err), 0, "%s", err);
    ref_batch rb;
    load_ref_batch(&ref, &rb);
    float logp[MAX_ROWS], ent[MAX_ROWS];
    cr_assert_eq(llama_forward(&m, &rb.batch, logp, ent, err, sizeof err), 0, "%s", err);

    const int N = rb.batch.n_rows;
    double dl = logits_diff(&m, &ref, &rb), dp = max_abs_diff(logp, rb.logp, (size_t)N),
           de = max_abs_diff(ent, rb.ent, (size_t)N);
    cr_expect_lt(dl, 1e-4, "%s: max |logits - pytorch| = %g", name, dl);
    cr_expect_lt(dp, 1e-4, "%s: max |logp - pytorch| = %g", name, dp);
    cr_expect_lt(de, 1e-4, "%s: max |entropy - pytorch| = %g", name, de);

    llama_zero_grad(&m);
    llama_backward(&m, &rb.batch, rb.a, rb.b);
    double worst_rel = 0, worst_abs = 0;
    for (size_t t = 0; t < llama_tensor_count(&m.cfg); t++) {
        llama_tensor_info ti;
        llama_tensor_describe(&m.cfg, t, &ti);
        char gname[160];
        size_t n;
        snprintf(gname, sizeof gname, "grad.%s", ti.name);
        float *want = tensor(&ref, gname, &n);
        cr_assert_eq(n, ti.numel, "%s", gname);
        double e = rel_err(m.grads + ti.offset, want, n), a = max_abs_diff(m.grads + ti.offset,
                                                                            want, n);
        cr_expect_lt(e, 1e-4, "%s %s: relative error %g (max abs %g)", name, gname, e, a);
        worst_rel = fmax(worst_rel, e);
        worst_abs = fmax(worst_abs, a);
        free(want);
    }
    cr_log_info("%s (%d threads): max |dlogits| %.3g, |dlogp| %.3g, |dentropy| %.3g; gradients: "
                "max rel %.3g, max abs %.3g", name, threads, dl, dp, de, worst_rel, worst_abs);
    st_close(&ref);
    llama_model_free(&m);
}

Test(parity, qwen2_sharded_matches_pytorch) { check_parity("qwen2_micro", 1); }
Test(parity, llama3_bf16_matches_pytorch) { check_parity("llama3_micro", 1); }
Test(parity, gpt2_matches_pytorch) { check_parity("gpt2_micro", 1); }
/* 3 workers: uneven column shares of the Conv1D and biased products */
Test(parity, gpt2_matches_pytorch_on_3_threads) { check_parity("gpt2_micro", 3); }
Test(parity, qwen2_matches_pytorch_on_3_threads) { check_parity("qwen2_micro", 3); }

/* ---- the features matter ------------------------------------------------- */

/* max |logits − reference| after `change` alters the loaded model: large
 * means the parity checks above would catch the feature missing. */
static double diff_without(const char *name, void (*change)(llama_model *))
{
    char dir[512], path[600], err[512];
    snprintf(dir, sizeof dir, FIXTURES "%s", name);
    llama_model m;
    load_dir(dir, &m);
    change(&m);
    st_file ref;
    snprintf(path, sizeof path, "%s/reference.safetensors", dir);
    cr_assert_eq(st_open(path, &ref, err, sizeof err), 0, "%s", err);
    ref_batch rb;
    load_ref_batch(&ref, &rb);
    float logp[MAX_ROWS];
    cr_assert_eq(llama_forward(&m, &rb.batch, logp, NULL, err, sizeof err), 0, "%s", err);
    double d = logits_diff(&m, &ref, &rb);
    st_close(&ref);
    llama_model_free(&m);
    return d;
}

static void zero(float *x, int n) { memset(x, 0, (size_t)n * sizeof *x); }
static void no_q_bias(llama_model *m) { zero(m->p.layers[0].bq, m->cfg.hidden_size); }
static void no_k_bias(llama_model *m) { zero(m->p.layers[1].bk, m->cfg.hidden_size / m->cfg.n_heads); }
static void no_o_bias(llama_model *m) { zero(m->p.layers[0].bo, m->cfg.hidden_size); }
static void no_down_bias(llama_model *m) { zero(m->p.layers[1].b_down, m->cfg.hidden_size); }
static void no_ln_bias(llama_model *m) { zero(m->p.layers[0].attn_norm_b, m->cfg.hidden_size); }
static void no_final_bias(llama_model *m) { zero(m->p.final_norm_b, m->cfg.hidden_size); }
static void no_positions(llama_model *m)
{
    zero(m->p.pos_embed, m->cfg.max_positions * m->cfg.hidden_size);
}
static void plain_rope(llama_model *m)
{
    rope_tables(m->rope_cos, m->rope_sin, m->cfg.max_positions,
                m->cfg.hidden_size / m->cfg.n_heads, m->cfg.rope_theta);
}
static void v_bias_into_k(llama_model *m)
{
    /* GPT-2's c_attn split: k and v swapped in the bias */
    llama_layer *l = &m->p.layers[0];
    float tmp[64];
    int d = m->cfg.hidden_size;
    memcpy(tmp, l->bk, (size_t)d * sizeof *tmp);
    memcpy(l->bk, l->bv, (size_t)d * sizeof *tmp);
    memcpy(l->bv, tmp, (size_t)d * sizeof *tmp);
}

Test(sensitivity, each_feature_changes_the_logits)
{
    const struct {
        const char *fixture, *what;
        void (*change)(llama_model *);
    } cases[] = {
        {"qwen2_micro", "q_proj bias", no_q_bias},
        {"qwen2_micro", "k_proj bias", no_k_bias},
        {"llama3_micro", "o_proj bias (attention_bias)", no_o_bias},
        {"llama3_micro", "down_proj bias (mlp_bias)", no_down_bias},
        {"llama3_micro", "Llama 3 RoPE scaling", plain_rope},
        {"gpt2_micro", "ln_1 bias", no_ln_bias},
        {"gpt2_micro", "ln_f bias", no_final_bias},
        {"gpt2_micro", "position embeddings", no_positions},
        {"gpt2_micro", "c_attn k/v order", v_bias_into_k},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double d = diff_without(cases[i].fixture, cases[i].change);
        cr_log_info("%s without %s: max |dlogits| %.3g", cases[i].fixture, cases[i].what, d);
        cr_expect_gt(d, 1e-3, "%s: without %s the logits move by only %g", cases[i].fixture,
                     cases[i].what, d);
    }
}

/* ---- greedy decoding through the KV cache -------------------------------- */

static void check_greedy(const char *name)
{
    char dir[512], path[600], err[512];
    snprintf(dir, sizeof dir, FIXTURES "%s", name);
    llama_model m;
    load_dir(dir, &m);
    st_file ref;
    snprintf(path, sizeof path, "%s/reference.safetensors", dir);
    cr_assert_eq(st_open(path, &ref, err, sizeof err), 0, "%s", err);
    size_t np, nt, nl;
    float *prompt_f = tensor(&ref, "greedy.prompt", &np);
    float *want_tok = tensor(&ref, "greedy.tokens", &nt);
    float *want_lp = tensor(&ref, "greedy.logp", &nl);
    int32_t prompt[16], seq[32];
    for (size_t i = 0; i < np; i++)
        prompt[i] = seq[i] = (int32_t)prompt_f[i];
    gen_params gp = {.temperature = 0, .top_p = 1, .max_new = (int)nt, .seed = 1};
    gen_prompt pr = {.tokens = prompt, .len = np, .n_samples = 1, .params = &gp};
    gen_sample out;
    cr_assert_eq(llama_generate(&m, &pr, 1, 0, &out, err, sizeof err), 0, "%s", err);
    cr_assert_eq(out.len, nt);
    for (size_t i = 0; i < nt; i++) {
        cr_expect_eq(out.tokens[i], (int32_t)want_tok[i], "%s: token %zu", name, i);
        seq[np + i] = out.tokens[i];
    }
    /* the temperature-1 log-probs of those tokens, from a full forward */
    int32_t start[2] = {0, (int32_t)(np + nt)}, pos[32], tgt[32];
    float lp[32];
    for (size_t i = 0; i < np + nt; i++) {
        pos[i] = (int32_t)i;
        tgt[i] = i + 1 < np + nt ? seq[i + 1] : -1;
    }
    llama_batch b = {.n_seqs = 1, .n_rows = (int)(np + nt), .seq_start = start, .tokens = seq,
                     .pos = pos, .target = tgt};
    cr_assert_eq(llama_forward(&m, &b, lp, NULL, err, sizeof err), 0, "%s", err);
    for (size_t i = 0; i < nt; i++)
        cr_expect_float_eq(lp[np - 1 + i], want_lp[i], 1e-4, "%s: logp of token %zu", name, i);
    free(out.tokens), free(out.logprobs);
    free(prompt_f), free(want_tok), free(want_lp);
    st_close(&ref);
    llama_model_free(&m);
}

/* Sampling at temperature 1 through the KV cache reports each token's
 * log-prob under the decode step's logits: they must equal a full forward's
 * (the cache, the positions, the biases of the decode path). */
static void check_sampled_logprobs(const char *name)
{
    char dir[512], err[512];
    snprintf(dir, sizeof dir, FIXTURES "%s", name);
    llama_model m;
    load_dir(dir, &m);
    const int32_t prompt[3] = {256, 72, 105};
    const size_t np = 3, nt = 12;
    gen_params gp = {.temperature = 1, .top_p = 1, .max_new = (int)nt, .seed = 7};
    gen_prompt pr = {.tokens = prompt, .len = np, .n_samples = 3, .params = &gp};
    gen_sample out[3];
    cr_assert_eq(llama_generate(&m, &pr, 1, 0, out, err, sizeof err), 0, "%s", err);
    double worst = 0;
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(out[k].len, nt);
        int32_t seq[32], start[2] = {0, (int32_t)(np + nt)}, pos[32], tgt[32];
        float lp[32];
        memcpy(seq, prompt, sizeof prompt);
        memcpy(seq + np, out[k].tokens, nt * sizeof *seq);
        for (size_t i = 0; i < np + nt; i++) {
            pos[i] = (int32_t)i;
            tgt[i] = i + 1 < np + nt ? seq[i + 1] : -1;
        }
        llama_batch b = {.n_seqs = 1, .n_rows = (int)(np + nt), .seq_start = start,
                         .tokens = seq, .pos = pos, .target = tgt};
        cr_assert_eq(llama_forward(&m, &b, lp, NULL, err, sizeof err), 0, "%s", err);
        for (size_t i = 0; i < nt; i++)
            worst = fmax(worst, fabs((double)lp[np - 1 + i] - out[k].logprobs[i]));
        free(out[k].tokens), free(out[k].logprobs);
    }
    cr_expect_lt(worst, 1e-4, "%s: max |generate - forward| log-prob = %g", name, worst);
    llama_model_free(&m);
}

Test(generate, qwen2_sampled_logprobs_match_forward) { check_sampled_logprobs("qwen2_micro"); }
Test(generate, llama3_sampled_logprobs_match_forward) { check_sampled_logprobs("llama3_micro"); }
Test(generate, gpt2_sampled_logprobs_match_forward) { check_sampled_logprobs("gpt2_micro"); }

Test(generate, qwen2_greedy_matches_pytorch) { check_greedy("qwen2_micro"); }
Test(generate, llama3_greedy_matches_pytorch) { check_greedy("llama3_micro"); }
Test(generate, gpt2_greedy_matches_pytorch) { check_greedy("gpt2_micro"); }

/* ---- save -> reload ------------------------------------------------------ */

typedef struct want_tensor {
    const char *name;
    int64_t d0, d1; /* d1 = 0: a vector; d0 = -1: must be absent */
} want_tensor;

static void check_round_trip(const char *name, const want_tensor *want, size_t n_want,
                             const char *const *config_keys)
{
    char dir[512], out[512], path[700], err[1024];
    snprintf(dir, sizeof dir, FIXTURES "%s", name);
    snprintf(out, sizeof out, "%s/hfm_%s_%d", TERN_TEST_WORK_DIR, name, (int)getpid());
    llama_model m, m2;
    load_dir(dir, &m);
    tokenizer *tok;
    cr_assert_eq(tokenizer_new_bytes(&tok), 0);
    cr_assert_eq(checkpoint_save(out, &m, tok, NULL, err, sizeof err), 0, "%s", err);
    tokenizer_free(tok);
    load_dir(out, &m2);
    cr_assert_eq(memcmp(&m.cfg, &m2.cfg, sizeof m.cfg), 0, "%s: the config changed", name);
    cr_assert_eq(memcmp(m.params, m2.params, m.n_params * sizeof(float)), 0,
                 "%s: the weights changed", name);

    /* identical logits */
    int32_t start[2] = {0, 5}, toks[5] = {256, 72, 105, 33, 10}, pos[5] = {0, 1, 2, 3, 4},
            tgt[5] = {72, 105, 33, 10, -1};
    llama_batch b = {.n_seqs = 1, .n_rows = 5, .seq_start = start, .tokens = toks, .pos = pos,
                     .target = tgt};
    float lp[5];
    cr_assert_eq(llama_forward(&m, &b, lp, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(llama_forward(&m2, &b, lp, NULL, err, sizeof err), 0, "%s", err);
    cr_expect_eq(memcmp(m.logits, m2.logits, 5 * (size_t)m.cfg.vocab_size * sizeof(float)), 0,
                 "%s: logits differ after save -> reload", name);

    /* the HF names and shapes, one F32 file */
    st_file f;
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    cr_assert_eq(st_open(path, &f, err, sizeof err), 0, "%s", err);
    cr_expect_eq(f.n_tensors, llama_tensor_count(&m.cfg));
    for (size_t i = 0; i < n_want; i++) {
        const st_tensor *t = st_find(&f, want[i].name);
        if (want[i].d0 < 0) {
            cr_expect_null(t, "%s: %s should not be saved", name, want[i].name);
            continue;
        }
        cr_assert_not_null(t, "%s: %s is not saved", name, want[i].name);
        cr_expect_str_eq(t->dtype_name, "F32");
        cr_expect_eq(t->ndim, want[i].d1 ? 2 : 1, "%s: %s ndim", name, want[i].name);
        cr_expect(t->shape[0] == want[i].d0 && (!want[i].d1 || t->shape[1] == want[i].d1),
                  "%s: %s has shape [%lld, %lld], HF's is [%lld, %lld]", name, want[i].name,
                  (long long)t->shape[0], (long long)(t->ndim > 1 ? t->shape[1] : 0),
                  (long long)want[i].d0, (long long)want[i].d1);
    }
    st_close(&f);

    /* config.json: "key=json value" pairs as HF's config class reads them */
    snprintf(path, sizeof path, "%s/config.json", out);
    json_error_t jerr;
    json_t *cfg = json_load_file(path, 0, &jerr);
    cr_assert_not_null(cfg, "%s", jerr.text);
    for (size_t i = 0; config_keys[i]; i++) {
        const char *eq = strchr(config_keys[i], '=');
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - config_keys[i]), config_keys[i]);
        json_t *want_v = json_loads(eq + 1, JSON_DECODE_ANY, &jerr);
        cr_assert_not_null(want_v, "bad expectation %s", config_keys[i]);
        json_t *got = json_object_get(cfg, key);
        char *text = got ? json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        cr_expect(got && json_equal(got, want_v), "%s: config.json has %s = %s, expected %s",
                  name, key, text ? text : "(absent)", eq + 1);
        free(text);
        json_decref(want_v);
    }
    json_decref(cfg);
    llama_model_free(&m);
    llama_model_free(&m2);
    result r;
    run(&r, "rm -rf %s", out);
}

Test(round_trip, qwen2_saves_hf_names_and_reloads_identically)
{
    const want_tensor want[] = {
        {"model.embed_tokens.weight", 259, 16},
        {"model.layers.0.self_attn.q_proj.weight", 16, 16},
        {"model.layers.0.self_attn.q_proj.bias", 16, 0},
        {"model.layers.1.self_attn.k_proj.bias", 8, 0},
        {"model.layers.1.self_attn.v_proj.bias", 8, 0},
        {"model.layers.0.self_attn.o_proj.bias", -1, 0},
        {"lm_head.weight", 259, 16},
    };
    const char *keys[] = {"architectures=[\"Qwen2ForCausalLM\"]", "model_type=\"qwen2\"",
                          "use_sliding_window=false", "rope_theta=1000000.0",
                          "rms_norm_eps=1e-06", "tie_word_embeddings=false",
                          "num_key_value_heads=1", NULL};
    check_round_trip("qwen2_micro", want, sizeof want / sizeof want[0], keys);
}

Test(round_trip, llama3_saves_hf_names_and_reloads_identically)
{
    const want_tensor want[] = {
        {"model.layers.0.self_attn.o_proj.bias", 16, 0},
        {"model.layers.1.mlp.gate_proj.bias", 32, 0},
        {"model.layers.1.mlp.down_proj.bias", 16, 0},
        {"lm_head.weight", -1, 0},
    };
    const char *keys[] = {"architectures=[\"LlamaForCausalLM\"]", "model_type=\"llama\"",
                          "attention_bias=true", "mlp_bias=true", "rope_theta=500000.0",
                          "rope_scaling={\"rope_type\": \"llama3\", \"factor\": 8.0, "
                          "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                          "\"original_max_position_embeddings\": 512}",
                          "tie_word_embeddings=true", NULL};
    check_round_trip("llama3_micro", want, sizeof want / sizeof want[0], keys);
}

Test(round_trip, gpt2_saves_hf_names_and_reloads_identically)
{
    /* GPT2LMHeadModel's state_dict names, Conv1D weights [in, out] */
    const want_tensor want[] = {
        {"transformer.wte.weight", 259, 16},
        {"transformer.wpe.weight", 32, 16},
        {"transformer.h.0.ln_1.weight", 16, 0},
        {"transformer.h.0.ln_1.bias", 16, 0},
        {"transformer.h.0.attn.c_attn.weight", 16, 48},
        {"transformer.h.0.attn.c_attn.bias", 48, 0},
        {"transformer.h.1.attn.c_proj.weight", 16, 16},
        {"transformer.h.1.mlp.c_fc.weight", 16, 64},
        {"transformer.h.1.mlp.c_fc.bias", 64, 0},
        {"transformer.h.1.mlp.c_proj.weight", 64, 16},
        {"transformer.ln_f.bias", 16, 0},
        {"h.0.attn.bias", -1, 0},
        {"h.0.ln_1.weight", -1, 0},
        {"lm_head.weight", -1, 0},
    };
    const char *keys[] = {"architectures=[\"GPT2LMHeadModel\"]", "model_type=\"gpt2\"",
                          "n_embd=16", "n_head=2", "n_layer=2", "n_positions=32", "n_inner=64",
                          "activation_function=\"gelu_new\"", "layer_norm_epsilon=1e-05",
                          "scale_attn_weights=true", "tie_word_embeddings=true", NULL};
    check_round_trip("gpt2_micro", want, sizeof want / sizeof want[0], keys);
}

/* ---- through the plugin -------------------------------------------------- */

/* The plugin opens each fixture from `path` and scores like PyTorch. */
static void check_plugin_score(const char *name)
{
    char group[700], path[600], err[512];
    snprintf(group, sizeof group, "path = \"" FIXTURES "%s\"; threads = 2;", name);
    harness h;
    cr_assert_eq(harness_open(&h, "transformer", TERN_KIND_MODEL, group), TERN_OK, "%s", h.error);
    const tern_model_ops *ops = harness_ops(&h);
    st_file ref;
    snprintf(path, sizeof path, FIXTURES "%s/reference.safetensors", name);
    cr_assert_eq(st_open(path, &ref, err, sizeof err), 0, "%s", err);
    size_t n, k;
    float *tok = tensor(&ref, "tokens.1", &n), *want = tensor(&ref, "logp.1", &k);
    int32_t ids[MAX_ROWS];
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)tok[i];
    tern_sequence s = {.size = sizeof s, .tokens = ids, .len = n, .start = 1};
    float lpbuf[MAX_ROWS], *lp = lpbuf;
    cr_assert_eq(ops->score(h.state, &s, 1, &lp, NULL), TERN_OK);
    double d = max_abs_diff(lp + 1, want + 1, n - 1);
    cr_expect_lt(d, 1e-4, "%s through the plugin: max |logp - pytorch| = %g", name, d);
    free(tok), free(want);
    st_close(&ref);
    harness_close(&h);
}

Test(plugin, loads_and_scores_each_architecture)
{
    check_plugin_score("qwen2_micro");
    check_plugin_score("llama3_micro");
    check_plugin_score("gpt2_micro");
}

/* A few AdamW steps through the plugin lower the loss of a GPT-2 model
 * (forward, backward and step all run on the GPT-2 layout). */
Test(plugin, gpt2_trains)
{
    harness h;
    cr_assert_eq(harness_open(&h, "transformer", TERN_KIND_MODEL,
                              "path = \"" FIXTURES "gpt2_micro\";"), TERN_OK, "%s", h.error);
    const tern_model_ops *ops = harness_ops(&h);
    int32_t toks[8] = {256, 104, 101, 108, 108, 111, 33, 257};
    tern_sequence s = {.size = sizeof s, .tokens = toks, .len = 8, .start = 1};
    float d[8] = {0, -1, -1, -1, -1, -1, -1, -1}, lpbuf[8], *lp = lpbuf;
    const float *g[1] = {d};
    tern_optim_step st = {.size = sizeof st, .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999,
                          .eps = 1e-8, .grad_clip = 1.0};
    double first = 0, last = 0;
    for (int step = 0; step < 6; step++) {
        cr_assert_eq(ops->score(h.state, &s, 1, &lp, NULL), TERN_OK);
        double loss = 0;
        for (int i = 1; i < 8; i++)
            loss -= lp[i];
        if (step == 0)
            first = loss;
        last = loss;
        cr_assert_eq(ops->backward(h.state, &s, 1, g, NULL), TERN_OK);
        cr_assert_eq(ops->step(h.state, &st), TERN_OK);
    }
    cr_expect_lt(last, first * 0.8, "loss %g -> %g", first, last);
    harness_close(&h);
}

/* ---- refusals ------------------------------------------------------------ */

/* Copy a fixture to a scratch dir, run `mutate` (a shell command) in it, and
 * expect loading to fail with both fragments in the message. */
static void expect_load_error(const char *fixture, const char *mutate, const char *frag1,
                              const char *frag2)
{
    char dir[512], err[2048] = "";
    snprintf(dir, sizeof dir, "%s/hfm_broken_%d", TERN_TEST_WORK_DIR, (int)getpid());
    result r;
    run(&r, "rm -rf %s && cp -r " FIXTURES "%s %s && cd %s && %s", dir, fixture, dir, dir,
        mutate);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    llama_config c;
    int rc = hf_config_read(cfg, &c, err, sizeof err);
    if (rc == 0) {
        llama_model m;
        cr_assert_eq(llama_model_init(&m, &c, err, sizeof err), 0, "%s", err);
        rc = checkpoint_load_weights(dir, &m, NULL, err, sizeof err);
        llama_model_free(&m);
    }
    cr_expect_neq(rc, 0, "%s: `%s` was accepted", fixture, mutate);
    cr_expect(strstr(err, frag1), "expected '%s' in: %s", frag1, err);
    if (frag2)
        cr_expect(strstr(err, frag2), "expected '%s' in: %s", frag2, err);
    run(&r, "rm -rf %s", dir);
}

#define SED(from, to) "sed -i 's/" from "/" to "/' config.json"

Test(refusals, unknown_architecture_names_the_file_and_key)
{
    expect_load_error("gpt2_micro", SED("\"model_type\": \"gpt2\"", "\"model_type\": \"gpt_neo\""),
                      "config.json: key \"model_type\" is \"gpt_neo\"", "GPT2LMHeadModel");
    expect_load_error("qwen2_micro", SED("Qwen2ForCausalLM", "Qwen3ForCausalLM"),
                      "config.json: key \"architectures\" is [\"Qwen3ForCausalLM\"]", NULL);
}

Test(refusals, unsupported_options_name_the_key)
{
    expect_load_error("llama3_micro", SED("\"llama3\"", "\"yarn\""),
                      "key \"rope_scaling.rope_type\" is \"yarn\"", "\"llama3\" only");
    expect_load_error("llama3_micro", SED("\"rope_type\": \"llama3\"", "\"type\": \"linear\""),
                      "key \"rope_scaling.type\" is \"linear\"", NULL);
    expect_load_error("llama3_micro", SED("\"low_freq_factor\": 1.0,", ""),
                      "key \"rope_scaling\" has rope_type \"llama3\" but no \"low_freq_factor\"",
                      NULL);
    expect_load_error("llama3_micro", SED("\"head_dim\": 8", "\"head_dim\": 16"),
                      "key \"head_dim\" is 16", NULL);
    expect_load_error("qwen2_micro", SED("\"use_sliding_window\": false",
                                         "\"use_sliding_window\": true"),
                      "config.json: key \"use_sliding_window\" is true", NULL);
    expect_load_error("gpt2_micro", SED("gelu_new", "relu"),
                      "key \"activation_function\" is \"relu\"", NULL);
    expect_load_error("gpt2_micro", SED("\"scale_attn_weights\": true",
                                        "\"scale_attn_weights\": false"),
                      "key \"scale_attn_weights\" is false", NULL);
    expect_load_error("gpt2_micro", SED("\"reorder_and_upcast_attn\": false",
                                        "\"reorder_and_upcast_attn\": true"),
                      "key \"reorder_and_upcast_attn\" is true", NULL);
    expect_load_error("gpt2_micro", SED("\"scale_attn_by_inverse_layer_idx\": false",
                                        "\"scale_attn_by_inverse_layer_idx\": true"),
                      "key \"scale_attn_by_inverse_layer_idx\" is true", NULL);
}

Test(refusals, sharded_checkpoint_errors_name_the_file)
{
    expect_load_error("qwen2_micro", "rm model-00002-of-00002.safetensors",
                      "model.safetensors.index.json: shard \"model-00002-of-00002.safetensors\"",
                      "cannot open");
    expect_load_error("qwen2_micro",
                      "sed -i '/\"model.layers.1.self_attn.k_proj.bias\"/d' "
                      "model.safetensors.index.json",
                      "model.safetensors.index.json: tensor "
                      "'model.layers.1.self_attn.k_proj.bias' is missing from the weight_map",
                      NULL);
    expect_load_error("qwen2_micro", "echo '{\"weight_map\": []}' > model.safetensors.index.json",
                      "model.safetensors.index.json: must be a JSON object with a non-empty "
                      "object \"weight_map\"", NULL);
    expect_load_error("qwen2_micro", "echo '{\"weight_map\": ' > model.safetensors.index.json",
                      "model.safetensors.index.json: not a valid JSON file", NULL);
    expect_load_error("qwen2_micro",
                      "sed -i 's|\"model-00002-of-00002.safetensors\"|\"../x.safetensors\"|' "
                      "model.safetensors.index.json",
                      "must be the file name of a shard in the same directory", NULL);
    /* the map sends a tensor to a shard that does not hold it */
    expect_load_error("qwen2_micro",
                      "sed -i 's|\"lm_head.weight\": \"model-00002-of-00002.safetensors\"|"
                      "\"lm_head.weight\": \"model-00001-of-00002.safetensors\"|' "
                      "model.safetensors.index.json",
                      "puts tensor 'lm_head.weight' in", "which does not hold it");
    expect_load_error("qwen2_micro", "rm model.safetensors.index.json",
                      "no model.safetensors and no model.safetensors.index.json", NULL);
}

Test(refusals, gpt2_missing_and_misshapen_tensors_are_named)
{
    /* a tensor absent under both spellings is named as GPT2LMHeadModel names it */
    expect_load_error("gpt2_micro", SED("\"n_layer\": 2", "\"n_layer\": 3"),
                      "tensor 'transformer.h.2.ln_1.weight' is missing", "GPT2LMHeadModel");
    expect_load_error("gpt2_micro", SED("\"n_inner\": null", "\"n_inner\": 32"),
                      "tensor 'transformer.h.0.mlp.c_fc.weight' has shape [16, 64], config.json "
                      "implies [16, 32]", NULL);
}

/* ---- published configs ----------------------------------------------------- */

static llama_config read_text(const char *name, const char *text)
{
    char path[512], err[1024] = "";
    snprintf(path, sizeof path, "%s/hfm_%s", TERN_TEST_WORK_DIR, name);
    write_file(path, text);
    llama_config c;
    cr_assert_eq(hf_config_read(path, &c, err, sizeof err), 0, "%s: %s", name, err);
    return c;
}

Test(configs, reads_published_configs)
{
    /* Qwen/Qwen2.5-0.5B */
    llama_config c = read_text(
        "qwen25.json",
        "{\"architectures\": [\"Qwen2ForCausalLM\"], \"attention_dropout\": 0.0, "
        "\"bos_token_id\": 151643, \"eos_token_id\": 151643, \"hidden_act\": \"silu\", "
        "\"hidden_size\": 896, \"initializer_range\": 0.02, \"intermediate_size\": 4864, "
        "\"max_position_embeddings\": 32768, \"max_window_layers\": 24, \"model_type\": "
        "\"qwen2\", \"num_attention_heads\": 14, \"num_hidden_layers\": 24, "
        "\"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000.0, "
        "\"sliding_window\": 32768, \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", "
        "\"transformers_version\": \"4.40.1\", \"use_cache\": true, \"use_mrope\": false, "
        "\"use_sliding_window\": false, \"vocab_size\": 151936}");
    cr_expect(c.arch == ARCH_QWEN2 && c.qkv_bias && !c.o_bias && !c.mlp_bias && c.tie_embeddings);
    cr_expect(c.hidden_size == 896 && c.n_heads == 14 && c.n_kv_heads == 2 && c.n_layers == 24);
    cr_expect(c.rope_theta == 1e6f && c.rms_eps == 1e-6f && c.rope_factor == 0);

    /* openai-community/gpt2 (no n_inner, no tie_word_embeddings: the defaults) */
    c = read_text(
        "gpt2.json",
        "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"], "
        "\"attn_pdrop\": 0.1, \"bos_token_id\": 50256, \"embd_pdrop\": 0.1, \"eos_token_id\": "
        "50256, \"initializer_range\": 0.02, \"layer_norm_epsilon\": 1e-05, \"model_type\": "
        "\"gpt2\", \"n_ctx\": 1024, \"n_embd\": 768, \"n_head\": 12, \"n_layer\": 12, "
        "\"n_positions\": 1024, \"resid_pdrop\": 0.1, \"summary_activation\": null, "
        "\"summary_first_dropout\": 0.1, \"summary_proj_to_labels\": true, \"summary_type\": "
        "\"cls_index\", \"summary_use_proj\": true, \"task_specific_params\": "
        "{\"text-generation\": {\"do_sample\": true, \"max_length\": 50}}, \"vocab_size\": 50257}");
    cr_expect(c.arch == ARCH_GPT2 && c.tie_embeddings && c.qkv_bias && c.o_bias && c.mlp_bias);
    cr_expect(c.hidden_size == 768 && c.intermediate_size == 3072 && c.n_heads == 12 &&
              c.n_kv_heads == 12 && c.max_positions == 1024 && c.vocab_size == 50257);
    cr_expect(c.rms_eps == 1e-5f && c.pad_id == 50256);
    /* 124,439,808 parameters: the published size of GPT-2 small */
    cr_expect_eq(llama_param_count(&c), 124439808);

    /* meta-llama/Llama-3.2-1B */
    c = read_text(
        "llama32.json",
        "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, "
        "\"attention_dropout\": 0.0, \"bos_token_id\": 128000, \"eos_token_id\": 128001, "
        "\"head_dim\": 64, \"hidden_act\": \"silu\", \"hidden_size\": 2048, "
        "\"initializer_range\": 0.02, \"intermediate_size\": 8192, "
        "\"max_position_embeddings\": 131072, \"mlp_bias\": false, \"model_type\": \"llama\", "
        "\"num_attention_heads\": 32, \"num_hidden_layers\": 16, \"num_key_value_heads\": 8, "
        "\"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 32.0, "
        "\"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0, "
        "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}, "
        "\"rope_theta\": 500000.0, \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", "
        "\"transformers_version\": \"4.45.0.dev0\", \"use_cache\": true, \"vocab_size\": 128256}");
    cr_expect(c.arch == ARCH_LLAMA && !c.qkv_bias && c.tie_embeddings);
    cr_expect(c.rope_factor == 32.0f && c.rope_low_freq == 1.0f && c.rope_high_freq == 4.0f &&
              c.rope_orig_max_pos == 8192 && c.rope_theta == 500000.0f);
    /* 1,235,814,400 parameters: Llama 3.2 1B */
    cr_expect_eq(llama_param_count(&c), 1235814400);
}

Test(configs, written_configs_read_back_identically)
{
    const char *dirs[] = {"qwen2_micro", "llama3_micro", "gpt2_micro"};
    for (int i = 0; i < 3; i++) {
        char in[600], out[600], err[1024];
        llama_config c, back;
        snprintf(in, sizeof in, FIXTURES "%s/config.json", dirs[i]);
        snprintf(out, sizeof out, "%s/hfm_cfg_%s.json", TERN_TEST_WORK_DIR, dirs[i]);
        cr_assert_eq(hf_config_read(in, &c, err, sizeof err), 0, "%s", err);
        cr_assert_eq(hf_config_write(out, &c, err, sizeof err), 0, "%s", err);
        cr_assert_eq(hf_config_read(out, &back, err, sizeof err), 0, "%s", err);
        cr_expect_eq(memcmp(&c, &back, sizeof c), 0, "%s: config changed on write/read",
                     dirs[i]);
    }
    /* Qwen2-VL's multimodal RoPE is refused */
    expect_load_error("qwen2_micro", SED("\"use_sliding_window\": false",
                                         "\"use_sliding_window\": false, \"use_mrope\": true"),
                      "key \"use_mrope\" is true", NULL);
}
