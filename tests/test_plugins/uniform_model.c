/*
 * uniform_model.c: the `test_uniform_model` plugin, a model built only for
 * the tests of `tern model init`, `tern generate` and `tern score`. It
 * declares the settings of the transformer plugin, so the commands drive it
 * exactly as they drive a real model:
 *
 *   model = { plugin = "test_uniform_model"; path = "DIR"; threads = 1; };
 *   model = { plugin = "test_uniform_model"; init = { preset = "tiny"; seed = 1; }; };
 *
 *   vocabulary  ids 0-255 are the bytes of the text, 256 is BOS (added by
 *               tokenize() when asked), 257 is EOS (never generated); BOS and
 *               EOS detokenize to nothing; tokenize() refuses byte 0x01
 *   special     special_tokens(): BOS 256, EOS 257, PAD -1 (none)
 *   tokens
 *   generate    each token uniform over the bytes the request keeps, from a
 *               tern_rng seeded by the request: log-prob -log(256) with no
 *               truncation; greedy (temperature 0) gives byte 0, log-prob 0
 *   score       every position: log-prob -log(256), entropy log(256)
 *   backward,   accepted and ignored (no parameters; grad norm 0)
 *   step
 *   tensors     none
 *   save, load  DIR/config.json holding {"model_type":"uniform_bytes", ...};
 *               load refuses a directory without it; save fails (after
 *               writing config.json) for a model of seed 666
 */
#define _POSIX_C_SOURCE 200809L /* mkdir */

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tern/model.h>
#include <tern/plugin.h>
#include <tern/rng.h>

#define N_BYTES 256   /* byte tokens: ids 0-255 */
#define BOS_ID 256    /* beginning of sequence */
#define EOS_ID 257    /* end of sequence */
#define PAD_ID (-1)   /* no padding token */
#define VOCAB 258     /* ids 0-257 */
#define MODEL_TYPE "uniform_bytes"
#define ME "test_uniform_model: " /* starts every message */

/* The host table (logging, errors, settings, ...), kept by the entry point;
 * valid for the life of the process. */
static const tern_host *host;

/* One instance: no parameters, only where it came from. */
typedef struct model_state {
    tern_ctx *ctx; /* for host->fail() and host->log() */
    char preset[32];
    int64_t seed;
    int64_t threads;
} model_state;

static int model_load(void *state, const char *dir, int with_optimizer);

static int model_create(tern_ctx *ctx, void **state)
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
    model_state *m = calloc(1, sizeof *m);
    if (!m)
        return host->fail(ctx, TERN_ENOMEM, ME "out of memory creating the model");
    m->ctx = ctx;
    m->seed = 1;
    m->threads = 1;
    host->get_int(ctx, "threads", &m->threads);
    if (have_init) {
        snprintf(m->preset, sizeof m->preset, "%s", preset);
        m->seed = seed;
    } else {
        struct stat st;
        int rc = TERN_OK;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            rc = host->fail(ctx, TERN_ENOTFOUND,
                            "%s: no such model directory; save one there first (tern model "
                            "init)", path);
        else
            rc = model_load(m, path, 0);
        if (rc != TERN_OK) {
            free(m);
            return rc;
        }
    }
    *state = m;
    return TERN_OK;
}

static void model_destroy(void *state) { free(state); }

static void model_free_buffer(void *state, void *p)
{
    (void)state;
    free(p); /* every buffer this model hands out comes from malloc */
}

/* ---- text <-> tokens ----------------------------------------------------- */

static int model_tokenize(void *state, const char *text, size_t text_len, int add_bos,
                          int32_t **ids, size_t *n)
{
    model_state *m = state;
    if (!ids || !n || (!text && text_len > 0))
        return host->fail(m->ctx, TERN_EINVAL,
                          ME "tokenize needs text (or text_len 0), ids and n");
    /* one token per byte; byte 0x01 is refused, to test how callers report
     * a text the tokenizer rejects */
    const char *bad = text_len ? memchr(text, 0x01, text_len) : NULL;
    if (bad)
        return host->fail(m->ctx, TERN_EINVAL,
                          ME "byte 0x01 at offset %zu cannot be tokenized (this test model "
                          "refuses it)", (size_t)(bad - text));
    size_t count = text_len + (add_bos ? 1 : 0);
    int32_t *out = malloc((count ? count : 1) * sizeof *out);
    if (!out)
        return host->fail(m->ctx, TERN_ENOMEM, ME "out of memory tokenizing %zu bytes",
                          text_len);
    size_t k = 0;
    if (add_bos)
        out[k++] = BOS_ID;
    for (size_t i = 0; i < text_len; i++)
        out[k++] = (unsigned char)text[i];
    *ids = out;
    *n = count;
    return TERN_OK;
}

static int model_detokenize(void *state, const int32_t *ids, size_t n, char **text,
                            size_t *text_len)
{
    model_state *m = state;
    if (!text || !text_len || (!ids && n > 0))
        return host->fail(m->ctx, TERN_EINVAL,
                          ME "detokenize needs ids (or n 0), text and text_len");
    char *out = malloc(n + 1);
    if (!out)
        return host->fail(m->ctx, TERN_ENOMEM, ME "out of memory detokenizing %zu tokens",
                          n);
    /* each byte token is its byte; BOS and EOS are dropped */
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] == BOS_ID || ids[i] == EOS_ID)
            continue;
        if (ids[i] < 0 || ids[i] >= N_BYTES) {
            free(out);
            return host->fail(m->ctx, TERN_EINVAL,
                              ME "token id %d at position %zu is not in the vocabulary "
                              "(0-255 bytes, 256 BOS, 257 EOS)", (int)ids[i], i);
        }
        out[len++] = (char)(unsigned char)ids[i];
    }
    out[len] = '\0';
    *text = out;
    *text_len = len;
    return TERN_OK;
}

/* The special token ids (ABI 1.1), which `tern run` needs: EOS ends
 * responses and supervised targets. */
static int model_special_tokens(void *state, tern_special_tokens *out)
{
    model_state *m = state;
    /* out->size is the caller's struct: write only the members it covers */
    if (!out || !TERN_HAS(out, pad))
        return host->fail(m->ctx, TERN_EINVAL,
                          ME "special_tokens got a tern_special_tokens that is too small");
    out->bos = BOS_ID;
    out->eos = EOS_ID;
    out->pad = PAD_ID;
    return TERN_OK;
}

/* ---- generation ---------------------------------------------------------- */

/* How many tokens request `q` keeps to sample from. All 256 byte tokens are
 * equally likely, so temperature changes nothing and truncation keeps the
 * lowest ids (ties are broken by id): temperature 0 (greedy) keeps 1 (id 0),
 * top_k keeps k, top_p the smallest set with mass >= top_p. The sampled
 * distribution is uniform over the kept tokens, each with log-prob
 * -log(kept): -log(256) with no truncation, 0 when greedy. */
static int kept_tokens(model_state *m, const tern_gen_request *q, size_t i, uint32_t *kept)
{
    if (!(q->temperature >= 0))
        return host->fail(m->ctx, TERN_EINVAL,
                          ME "request %zu has temperature %g; use 0 for greedy or > 0", i,
                          (double)q->temperature);
    if (q->top_k < 0)
        return host->fail(m->ctx, TERN_EINVAL,
                          ME "request %zu has top_k %d; use 0 for off or >= 1", i,
                          (int)q->top_k);
    if (!(q->top_p > 0 && q->top_p <= 1))
        return host->fail(m->ctx, TERN_EINVAL,
                          ME "request %zu has top_p %g; use a value in (0, 1], 1 for off",
                          i, (double)q->top_p);
    uint32_t k = N_BYTES;
    if (q->temperature == 0)
        k = 1;
    if (q->top_k > 0 && (uint32_t)q->top_k < k)
        k = (uint32_t)q->top_k;
    uint32_t by_p = (uint32_t)ceil((double)q->top_p * N_BYTES);
    if (by_p < 1)
        by_p = 1;
    if (by_p < k)
        k = by_p;
    *kept = k;
    return TERN_OK;
}

static int is_stop(const tern_gen_request *q, int32_t token)
{
    for (size_t s = 0; s < q->n_stop; s++)
        if (q->stop[s] == token)
            return 1;
    return 0;
}

/* Draw one continuation of request q into out. */
static int generate_one(model_state *m, const tern_gen_request *q, uint32_t kept, tern_rng *rng,
                        tern_gen_output *out)
{
    size_t cap = q->max_new_tokens ? q->max_new_tokens : 1;
    out->tokens = malloc(cap * sizeof *out->tokens);
    out->logprobs = malloc(cap * sizeof *out->logprobs);
    out->len = 0;
    out->finish = 2; /* max_new_tokens, unless a stop token comes first */
    if (!out->tokens || !out->logprobs) {
        free(out->tokens);
        free(out->logprobs);
        out->tokens = NULL;
        out->logprobs = NULL;
        return host->fail(m->ctx, TERN_ENOMEM,
                          ME "out of memory for %u new tokens; lower max_new_tokens",
                          q->max_new_tokens);
    }
    float logprob = (float)-log((double)kept);
    while (out->len < q->max_new_tokens) {
        int32_t token = kept == 1 ? 0 : (int32_t)(tern_rng_uniform(rng) * kept);
        out->tokens[out->len] = token;
        out->logprobs[out->len] = logprob;
        out->len++;
        if (is_stop(q, token)) {
            out->finish = 1;
            break;
        }
    }
    return TERN_OK;
}

static int model_generate(void *state, const tern_gen_request *req, size_t n_req,
                          tern_gen_output *outs)
{
    model_state *m = state;
    if (n_req > 0 && (!req || !outs))
        return host->fail(m->ctx, TERN_EINVAL,
                          ME "generate got %zu requests with req or outs = NULL", n_req);
    size_t done = 0; /* outputs filled so far, freed again on failure */
    int rc = TERN_OK;
    for (size_t i = 0; i < n_req && rc == TERN_OK; i++) {
        const tern_gen_request *q = &req[i];
        uint32_t kept = 0;
        rc = kept_tokens(m, q, i, &kept);
        if (rc == TERN_OK && q->n_samples < 1)
            rc = host->fail(m->ctx, TERN_EINVAL,
                            ME "request %zu asks for 0 samples; ask for at least 1", i);
        if (rc == TERN_OK && ((!q->prompt && q->prompt_len > 0) || (!q->stop && q->n_stop > 0)))
            rc = host->fail(m->ctx, TERN_EINVAL,
                            ME "request %zu has prompt or stop = NULL with a length", i);
        /* The same seed and request give the same samples: one stream per
         * request, its samples drawn in order. */
        tern_rng rng;
        tern_rng_seed(&rng, q->seed);
        for (uint32_t s = 0; rc == TERN_OK && s < q->n_samples; s++) {
            rc = generate_one(m, q, kept, &rng, &outs[done]);
            if (rc == TERN_OK)
                done++;
        }
    }
    if (rc != TERN_OK) {
        for (size_t j = 0; j < done; j++) {
            free(outs[j].tokens);
            free(outs[j].logprobs);
            outs[j].tokens = NULL;
            outs[j].logprobs = NULL;
            outs[j].len = 0;
        }
    }
    return rc;
}

/* ---- scoring and training ------------------------------------------------ */

static int check_sequences(model_state *m, const char *op, const tern_sequence *seqs, size_t n)
{
    if (n > 0 && !seqs)
        return host->fail(m->ctx, TERN_EINVAL, ME "%s got %zu sequences = NULL", op, n);
    for (size_t i = 0; i < n; i++) {
        const tern_sequence *q = &seqs[i];
        if (!q->tokens && q->len > 0)
            return host->fail(m->ctx, TERN_EINVAL,
                              ME "%s: sequence %zu has tokens = NULL with len %zu", op, i,
                              q->len);
        if (q->start < 1 || q->start > q->len)
            return host->fail(m->ctx, TERN_EINVAL,
                              ME "%s: sequence %zu has start %zu; use 1 <= start <= len "
                              "(%zu)", op, i, q->start, q->len);
        for (size_t p = 0; p < q->len; p++)
            if (q->tokens[p] < 0 || q->tokens[p] >= VOCAB)
                return host->fail(m->ctx, TERN_EINVAL,
                                  ME "%s: sequence %zu has token id %d at position %zu, "
                                  "outside the vocabulary (0-257)", op, i, (int)q->tokens[p], p);
    }
    return TERN_OK;
}

static int model_score(void *state, const tern_sequence *seqs, size_t n, float **logprobs,
                       float **entropies)
{
    model_state *m = state;
    int rc = check_sequences(m, "score", seqs, n);
    if (rc != TERN_OK)
        return rc;
    if (n > 0 && !logprobs)
        return host->fail(m->ctx, TERN_EINVAL, ME "score got logprobs = NULL");
    /* Entry 0 and positions before start are not wanted: they are set to 0. */
    const float lp = (float)-log((double)N_BYTES), h = (float)log((double)N_BYTES);
    for (size_t i = 0; i < n; i++) {
        if (!logprobs[i] || (entropies && !entropies[i]))
            return host->fail(m->ctx, TERN_EINVAL,
                              ME "score: output array %zu is NULL; pass one array of len "
                              "floats per sequence", i);
        for (size_t p = 0; p < seqs[i].len; p++) {
            int counted = p >= seqs[i].start;
            logprobs[i][p] = counted ? lp : 0.0f;
            if (entropies)
                entropies[i][p] = counted ? h : 0.0f;
        }
    }
    return TERN_OK;
}

static int model_backward(void *state, const tern_sequence *seqs, size_t n,
                          const float *const *dlogp, const float *const *dentropy)
{
    model_state *m = state;
    (void)dentropy; /* NULL when zero */
    int rc = check_sequences(m, "backward", seqs, n);
    if (rc != TERN_OK)
        return rc;
    if (n > 0 && !dlogp)
        return host->fail(m->ctx, TERN_EINVAL, ME "backward got dlogp = NULL");
    return TERN_OK;
}

static int model_step(void *state, tern_optim_step *step)
{
    model_state *m = state;
    if (!step)
        return host->fail(m->ctx, TERN_EINVAL, ME "step got step = NULL");
    if (TERN_HAS(step, grad_norm))
        step->grad_norm = 0.0; /* no parameters, no gradient */
    return TERN_OK;
}

static int model_tensors(void *state, const tern_tensor **out, size_t *n)
{
    model_state *m = state;
    if (!out || !n)
        return host->fail(m->ctx, TERN_EINVAL, ME "tensors needs out and n");
    *out = NULL;
    *n = 0;
    return TERN_OK;
}

/* ---- checkpoints --------------------------------------------------------- */

/* dir + "/config.json" in a malloc'd string, or NULL. */
static char *config_path(const char *dir)
{
    size_t len = strlen(dir) + sizeof "/config.json";
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%s/config.json", dir);
    return p;
}

static int model_save(void *state, const char *dir, int with_optimizer)
{
    model_state *m = state;
    (void)with_optimizer; /* no optimiser state to save */
    if (!dir)
        return host->fail(m->ctx, TERN_EINVAL, ME "save got dir = NULL");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return host->fail(m->ctx, TERN_EIO, "%s: cannot create directory: %s", dir,
                          strerror(errno));
    char *path = config_path(dir);
    if (!path)
        return host->fail(m->ctx, TERN_ENOMEM, ME "out of memory saving to %s", dir);
    FILE *f = fopen(path, "w");
    int ok = f && fprintf(f, "{\"model_type\":\"" MODEL_TYPE "\",\"preset\":\"%s\","
                             "\"seed\":%lld}\n", m->preset, (long long)m->seed) >= 0;
    int err = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    int rc = ok ? TERN_OK
                : host->fail(m->ctx, TERN_EIO, "%s: cannot write: %s", path, strerror(err));
    if (rc == TERN_OK && m->seed == 666) /* to test how callers clean up */
        rc = host->fail(m->ctx, TERN_EIO, ME "a model of seed 666 fails to save after writing "
                        "config.json");
    free(path);
    return rc;
}

static int model_load(void *state, const char *dir, int with_optimizer)
{
    model_state *m = state;
    (void)with_optimizer; /* no optimiser state to load */
    if (!dir)
        return host->fail(m->ctx, TERN_EINVAL, ME "load got dir = NULL");
    char *path = config_path(dir);
    if (!path)
        return host->fail(m->ctx, TERN_ENOMEM, ME "out of memory loading from %s", dir);
    FILE *f = fopen(path, "r");
    char text[512] = "";
    int rc = TERN_OK;
    if (!f) {
        int err = errno;
        rc = host->fail(m->ctx, err == ENOENT ? TERN_ENOTFOUND : TERN_EIO,
                        "%s: cannot read: %s; save a checkpoint there first", path,
                        strerror(err));
    } else {
        size_t got = fread(text, 1, sizeof text - 1, f);
        text[got] = '\0';
        fclose(f);
        if (!strstr(text, "\"" MODEL_TYPE "\""))
            rc = host->fail(m->ctx, TERN_EINVAL,
                            "%s: not a checkpoint of this model (no \"model_type\":\""
                            MODEL_TYPE "\")", path);
    }
    free(path);
    return rc;
}

/* ---- descriptor ---------------------------------------------------------- */

static const tern_model_ops model_ops = {
    .size = sizeof model_ops,
    .create = model_create,
    .destroy = model_destroy,
    .free_buffer = model_free_buffer,
    .tokenize = model_tokenize,
    .detokenize = model_detokenize,
    .generate = model_generate,
    .score = model_score,
    .backward = model_backward,
    .step = model_step,
    .tensors = model_tensors,
    .save = model_save,
    .load = model_load,
    .special_tokens = model_special_tokens,
};

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

static const tern_setting_spec model_settings[] = {
    TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING,
                 .doc = "directory of a saved model to load"),
    TERN_SETTING(.name = "init", .type = TERN_SETTING_GROUP, .children = init_keys,
                 .doc = "a fresh model instead of path"),
    TERN_SETTING(.name = "threads", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 256,
                 .doc = "threads of the instance"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor model_descriptor = {
    .size = sizeof model_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_MODEL,
    .name = "test_uniform_model",
    .version = "0.1.0",
    .summary = "test model: uniform over 256 byte tokens, transformer's settings",
    .caps = 0, /* one thread drives an instance; add TERN_CAP_GPU if you need CUDA */
    .ops = &model_ops,
    .settings = model_settings,
};

/* The only exported symbol (build with -fvisibility=hidden). Called when the
 * file is loaded, also by `tern plugins`: keep it cheap, with no side effect
 * beyond keeping `host`. */
TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &model_descriptor;
}
