/*
 * scripted_model.c: the `scripted_model` plugin, a test double for the runs
 * with tools (docs/agents.md, "Tools"): the real transformer plugin (loaded
 * from TERN_TEST_TRANSFORMER, every op and setting its own) whose generate()
 * writes a script instead of sampling, so a test knows which tool calls a
 * trajectory makes:
 *
 *   script     strings: turn k of every trajectory is script[k-1] (the last
 *              one again past the end), tokenized, then the end-of-turn
 *              token; k is how many assistant turns the prompt has opened
 *              (ChatML: "\nassistant\n" in its text without special tokens)
 *
 * The log-probs it reports are the model's own for those tokens (score() at
 * the request's temperature), so the trainer's ratio is 1 on them as after
 * a real sample. The script is read when an instance is made, and shared by
 * every instance (all have the same settings in a run).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tern/model.h>
#include <tern/plugin.h>

#define MAX_SCRIPT 16
#define MAX_SETTINGS 64

static const tern_host *host;
static const tern_plugin_descriptor *inner;
static const tern_model_ops *in_ops;
static tern_model_ops ops;
static tern_setting_spec settings[MAX_SETTINGS];
static tern_plugin_descriptor desc;
static char *script[MAX_SCRIPT];
static size_t n_script;

/* The script outlives the instances; freed when the module is unloaded. */
__attribute__((destructor)) static void free_script(void)
{
    for (size_t i = 0; i < n_script; i++)
        free(script[i]);
    n_script = 0;
}

static int create(tern_ctx *ctx, void **state)
{
    size_t n = 0;
    host->get_count(ctx, "script", &n);
    if (n == 0 || n > MAX_SCRIPT)
        return host->setting_error(ctx, "script", "give 1 to %d turns", MAX_SCRIPT);
    for (size_t i = 0; i < n_script; i++)
        free(script[i]);
    n_script = 0;
    for (size_t i = 0; i < n; i++) {
        char key[32];
        const char *s = NULL;
        snprintf(key, sizeof key, "script.%zu", i);
        host->get_string(ctx, key, &s);
        if (!(script[n_script++] = strdup(s ? s : "")))
            return host->fail(ctx, TERN_ENOMEM, "out of memory");
    }
    return in_ops->create(ctx, state);
}

/* How many assistant turns the prompt ids[0..n) has opened. */
static int turn_of(void *state, const int32_t *ids, size_t n, size_t *turn)
{
    char *text = NULL;
    size_t len = 0;
    int rc = in_ops->detokenize(state, ids, n, &text, &len);
    if (rc != TERN_OK)
        return rc;
    *turn = 0;
    /* the text without special tokens: each opened turn is "\nassistant\n" */
    for (const char *p = text; (p = strstr(p, "\nassistant\n")); p++)
        (*turn)++;
    in_ops->free_buffer(state, text);
    return TERN_OK;
}

static int generate(void *state, const tern_gen_request *req, size_t n_req,
                    tern_gen_output *outs)
{
    tern_special_tokens sp = {.size = sizeof sp};
    int rc = in_ops->special_tokens(state, &sp);
    size_t o = 0;
    for (size_t i = 0; rc == TERN_OK && i < n_req; i++)
        if (TERN_HAS(&req[i], on_top) && req[i].top_logprobs > 0 && req[i].on_top)
            rc = host->fail(NULL, TERN_EUNSUPPORTED, "scripted_model writes its script: it has "
                            "no alternatives to list (top_logprobs)");
    for (size_t i = 0; rc == TERN_OK && i < n_req; i++) {
        size_t turn = 0;
        rc = turn_of(state, req[i].prompt, req[i].prompt_len, &turn);
        const char *line = script[turn == 0 ? 0 : turn - 1 < n_script ? turn - 1 : n_script - 1];
        int32_t *ids = NULL;
        size_t n = 0;
        if (rc == TERN_OK)
            rc = in_ops->tokenize(state, line, strlen(line), 0, &ids, &n);
        /* the prompt, the script's tokens, the end-of-turn token; cut at
         * max_new_tokens as a sample would be */
        uint32_t finish = TERN_FINISH_STOP;
        size_t m = n + 1;
        if (m > req[i].max_new_tokens)
            m = req[i].max_new_tokens, finish = TERN_FINISH_LENGTH;
        size_t len = req[i].prompt_len + n + 1;
        int32_t *seq = rc == TERN_OK ? malloc(len * sizeof *seq) : NULL;
        float *lp = seq ? calloc(len, sizeof *lp) : NULL;
        if (rc == TERN_OK && !lp)
            rc = host->fail(NULL, TERN_ENOMEM, "out of memory");
        if (rc == TERN_OK) {
            memcpy(seq, req[i].prompt, req[i].prompt_len * sizeof *seq);
            memcpy(seq + req[i].prompt_len, ids, n * sizeof *ids);
            seq[len - 1] = sp.eos;
            tern_sequence s = {.size = sizeof s, .tokens = seq, .len = len,
                               .start = req[i].prompt_len, .temperature = req[i].temperature};
            rc = in_ops->score(state, &s, 1, &lp, NULL);
        }
        for (uint32_t k = 0; rc == TERN_OK && k < req[i].n_samples; k++, o++) {
            outs[o].len = m;
            outs[o].finish = finish;
            outs[o].tokens = malloc((m ? m : 1) * sizeof *outs[o].tokens);
            outs[o].logprobs = malloc((m ? m : 1) * sizeof *outs[o].logprobs);
            if (!outs[o].tokens || !outs[o].logprobs) {
                rc = host->fail(NULL, TERN_ENOMEM, "out of memory");
                break;
            }
            memcpy(outs[o].tokens, seq + req[i].prompt_len, m * sizeof *seq);
            memcpy(outs[o].logprobs, lp + req[i].prompt_len, m * sizeof *lp);
        }
        in_ops->free_buffer(state, ids);
        free(seq);
        free(lp);
    }
    return rc;
}

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    if (inner)
        return &desc;
    void *lib = dlopen(TERN_TEST_TRANSFORMER, RTLD_NOW | RTLD_LOCAL);
    tern_plugin_entry_fn entry = lib ? (tern_plugin_entry_fn)(uintptr_t)dlsym(
                                           lib, TERN_PLUGIN_ENTRY_SYMBOL)
                                     : NULL;
    if (!entry || !(inner = entry(h))) {
        h->log(NULL, TERN_LOG_ERROR, "scripted_model: cannot load %s: %s", TERN_TEST_TRANSFORMER,
               dlerror());
        return NULL;
    }
    in_ops = inner->ops;
    memcpy(&ops, in_ops, in_ops->size < sizeof ops ? in_ops->size : sizeof ops);
    ops.size = sizeof ops;
    ops.create = create;
    ops.generate = generate; /* its outputs malloc'd: the transformer's free_buffer is free() */
    size_t k = 0;
    for (const tern_setting_spec *s = inner->settings; s && s->name && k + 2 < MAX_SETTINGS; s++)
        settings[k++] = *s;
    settings[k++] = (tern_setting_spec)TERN_SETTING(
        .name = "script", .type = TERN_SETTING_STRINGS, .flags = TERN_SETTING_REQUIRED,
        .doc = "the text of each turn of the model");
    settings[k] = (tern_setting_spec)TERN_SETTINGS_END;
    desc = *inner;
    desc.name = "scripted_model";
    desc.summary = "the transformer, writing a script (tests)";
    desc.ops = &ops;
    desc.settings = settings;
    return &desc;
}
