/*
 * uniform_model.c: the `test_uniform_model` plugin, a model built only for
 * the tests of `tern model init`, `tern generate` and `tern score`. It is the
 * model `tern new-plugin model` writes: its template
 * (cli/new_plugin/templates/model/plugin.c.in, expanded with NAME =
 * test_uniform_model by CMakeLists.txt) is included below and every op is the
 * template's, but for what the tests need on top:
 *
 *   settings    those of the transformer plugin, so the commands drive it
 *               exactly as they drive a real model:
 *                 model = { plugin = "test_uniform_model"; path = "DIR"; threads = 1; };
 *                 model = { plugin = "test_uniform_model";
 *                           init = { preset = "tiny"; seed = 1; }; };
 *               create() loads the model saved in path, or starts one from init
 *   tokenize    refuses byte 0x01, to test how callers report a text the
 *               tokenizer rejects
 *   save        config.json also holds the preset and seed,
 *               {"model_type":"uniform_bytes","preset":"tiny","seed":1}; a
 *               model of seed 666 fails to save after writing it, to test how
 *               callers clean up
 *   generate    aborts on a prompt that ends in the bytes "crash", to test the
 *               crash report that names the plugin and the op (base/op_watch.h)
 */
#define _POSIX_C_SOURCE 200809L /* as the template: mkdir, stat */

#include <tern/plugin.h>

/* The template's entry point becomes template_entry(), static: this file's
 * tern_plugin_entry() is the one the library exports. */
#pragma push_macro("TERN_PLUGIN_EXPORT")
#undef TERN_PLUGIN_EXPORT
#define TERN_PLUGIN_EXPORT static
#define tern_plugin_entry template_entry
#include "uniform_model_template.c"
#undef tern_plugin_entry
#pragma pop_macro("TERN_PLUGIN_EXPORT")

#define ME "test_uniform_model: " /* starts every message, as in the template */

/* One instance: the template's, and where it came from. */
typedef struct test_state {
    model_state base; /* first: the template's ops take a test_state */
    char preset[32];  /* init.preset; "" when loaded from path */
    int64_t seed;     /* init.seed (default 1) */
} test_state;

static int test_create(tern_ctx *ctx, void **state)
{
    const char *path = NULL, *preset = NULL;
    int have_path = host->get_string(ctx, "path", &path) == TERN_OK;
    int have_init = host->get_string(ctx, "init.preset", &preset) == TERN_OK;
    int64_t seed = 1;
    int have_seed = host->get_int(ctx, "init.seed", &seed) == TERN_OK;
    if (have_seed && !have_init)
        return host->setting_error(ctx, "init", "init needs preset = \"tiny\" or \"bench\"");
    if (have_path && have_init)
        return host->setting_error(ctx, "init", "give either path (a saved model) or init (a "
                                   "fresh one), not both");
    if (!have_path && !have_init)
        return host->fail(ctx, TERN_ECONFIG,
                          ME "give path = \"DIR\" (a saved model) or init = "
                          "{ preset = \"tiny\"; } (a fresh one)");
    test_state *t = calloc(1, sizeof *t);
    if (!t)
        return host->fail(ctx, TERN_ENOMEM, ME "out of memory creating the model");
    t->base.ctx = ctx;
    t->seed = 1;
    if (have_init) {
        snprintf(t->preset, sizeof t->preset, "%s", preset);
        t->seed = seed;
    } else {
        struct stat st;
        int rc = TERN_OK;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            rc = host->fail(ctx, TERN_ENOTFOUND,
                            "%s: no such model directory; save one there first (tern model "
                            "init)", path);
        else
            rc = model_load(t, path, 0);
        if (rc != TERN_OK) {
            free(t);
            return rc;
        }
    }
    *state = t;
    return TERN_OK;
}

static int test_tokenize(void *state, const char *text, size_t text_len, int add_bos,
                         int32_t **ids, size_t *n)
{
    test_state *t = state;
    const char *bad = text && text_len ? memchr(text, 0x01, text_len) : NULL;
    if (bad)
        return host->fail(t->base.ctx, TERN_EINVAL,
                          ME "byte 0x01 at offset %zu cannot be tokenized (this test model "
                          "refuses it)", (size_t)(bad - text));
    return model_tokenize(state, text, text_len, add_bos, ids, n);
}

/* The template's save, then config.json again with the preset and seed. */
static int test_save(void *state, const char *dir, int with_optimizer)
{
    test_state *t = state;
    int rc = model_save(state, dir, with_optimizer);
    if (rc != TERN_OK)
        return rc;
    char *path = config_path(dir);
    if (!path)
        return host->fail(t->base.ctx, TERN_ENOMEM, ME "out of memory saving to %s", dir);
    FILE *f = fopen(path, "w");
    int ok = f && fprintf(f, "{\"model_type\":\"" MODEL_TYPE "\",\"preset\":\"%s\","
                             "\"seed\":%lld}\n", t->preset, (long long)t->seed) >= 0;
    int err = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    rc = ok ? TERN_OK
            : host->fail(t->base.ctx, TERN_EIO, "%s: cannot write: %s", path, strerror(err));
    if (rc == TERN_OK && t->seed == 666) /* to test how callers clean up */
        rc = host->fail(t->base.ctx, TERN_EIO, ME "a model of seed 666 fails to save after "
                        "writing config.json");
    free(path);
    return rc;
}

/* The settings of the transformer plugin (the contract of `tern model init`,
 * `tern generate` and `tern score`). */
static const tern_setting_spec init_keys[] = {
    /* Neither required nor defaulted: either would make the core create an
     * init group in every config that gives only path. */
    TERN_SETTING(.name = "preset", .type = TERN_SETTING_STRING, .choices = "tiny|bench",
                 .doc = "size of the fresh model (required in init)"),
    TERN_SETTING(.name = "seed", .type = TERN_SETTING_INT, .min = 0,
                 .max = 9007199254740992.0, .doc = "seed of the initial weights (default 1)"),
    TERN_SETTINGS_END,
};

static const tern_setting_spec test_settings[] = {
    TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING,
                 .doc = "directory of a saved model to load"),
    TERN_SETTING(.name = "init", .type = TERN_SETTING_GROUP, .children = init_keys,
                 .doc = "a fresh model instead of path"),
    TERN_SETTING(.name = "threads", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 256,
                 .doc = "threads of the instance"),
    TERN_SETTINGS_END,
};

static int test_generate(void *state, const tern_gen_request *req, size_t n,
                         tern_gen_output *outs)
{
    static const char word[] = "crash";
    for (size_t i = 0; req && i < n; i++) {
        const tern_gen_request *q = &req[i];
        size_t k = sizeof word - 1, at = q->prompt_len >= k ? q->prompt_len - k : 0;
        int same = q->prompt && q->prompt_len >= k;
        for (size_t j = 0; same && j < k; j++)
            same = q->prompt[at + j] == (unsigned char)word[j];
        if (same)
            abort(); /* to test the crash report */
    }
    return model_generate(state, req, n, outs);
}

/* The template's descriptor and ops, with the changes above. The entry point
 * may be called more than once: each call writes the same values. */
static tern_model_ops test_ops;
static tern_plugin_descriptor test_descriptor;

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    const tern_plugin_descriptor *base = template_entry(h); /* keeps `host` */
    test_ops = *(const tern_model_ops *)base->ops;
    test_ops.create = test_create;
    test_ops.tokenize = test_tokenize;
    test_ops.save = test_save;
    test_ops.generate = test_generate;
    test_descriptor = *base;
    test_descriptor.summary = "test model: uniform over 256 byte tokens, transformer's settings";
    test_descriptor.ops = &test_ops;
    test_descriptor.settings = test_settings;
    return &test_descriptor;
}
