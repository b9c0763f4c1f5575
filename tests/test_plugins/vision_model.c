/*
 * vision_model.c: the `test_vision_model` plugin, a test double of a model
 * that reads images (ABI 1.12), built only for the tests of how the core
 * carries a task's image to the model ops (issue 27: run checks, runs,
 * `tern generate --image`). Like test_uniform_model it is the model `tern
 * new-plugin model` writes (the template, expanded with NAME =
 * test_vision_model, is included below), with on top:
 *
 *   image_spec  an encoder of image_size x image_size pixels (default 8,
 *               fit "exact"), placeholder "<image>", tokens_per_image
 *               image tokens (default 4) per image, max_images (default 1);
 *               reads_images = false makes it answer TERN_EUNSUPPORTED (a
 *               text-only instance of a plugin that has the op)
 *   tokenize    each "<image>" becomes tokens_per_image copies of the image
 *               token, id 258 (258 ids of the template + this one);
 *               detokenize drops them
 *   generate,   refuse a request or sequence whose runs of image tokens do
 *   score,      not match its images one to one, or an image that is not
 *   backward    the spec's size (exact fit) or has no pixels: the core's
 *               contract, checked on every call
 *   generate    for a prompt with an image, the response is the red value
 *               of its top-left pixel in decimal ("200"), then EOS: an
 *               answer that depends on the pixels; text prompts as the
 *               template (uniform bytes)
 *   trace       a file (setting `trace`) every generate, score and backward
 *               appends one line to per request or sequence:
 *               "OP images=N sum=S" (S: the sum of every pixel byte of its
 *               images), so a test sees which pixels reached which op
 *   touch_images  (setting, default false) after each generate, the last
 *               byte of every image file it was given (tern_image.source) is
 *               changed: the trainer must then refuse the group, whose
 *               image changed since it was sampled
 *
 * Settings: path or init = { preset; seed; } and threads as the transformer
 * plugin (so `tern model init`, `tern generate` drive it), plus image_size,
 * image_fit, tokens_per_image, max_images, reads_images, trace, touch_images.
 */
#define _POSIX_C_SOURCE 200809L /* as the template: mkdir, stat */

#include <tern/plugin.h>

#pragma push_macro("TERN_PLUGIN_EXPORT")
#undef TERN_PLUGIN_EXPORT
#define TERN_PLUGIN_EXPORT static
#define tern_plugin_entry template_entry
#include "vision_model_template.c"
#undef tern_plugin_entry
#pragma pop_macro("TERN_PLUGIN_EXPORT")

#define ME "test_vision_model: "
#define IMAGE_ID 258 /* the image token, after the template's 258 ids */
#define PLACEHOLDER "<image>"

typedef struct vision_state {
    model_state base; /* first: the template's ops take it */
    tern_image_spec spec;
    int reads_images, touch_images;
    char trace[4096]; /* "" for none */
} vision_state;

static const char *const fit_names[] = {"any", "resize", "exact"};

static int vision_create(tern_ctx *ctx, void **state)
{
    const char *path = NULL, *preset = NULL, *fit = "exact", *trace = NULL;
    int have_path = host->get_string(ctx, "path", &path) == TERN_OK;
    int have_init = host->get_string(ctx, "init.preset", &preset) == TERN_OK;
    if (have_path == have_init)
        return host->fail(ctx, TERN_ECONFIG,
                          ME "give path = \"DIR\" (a saved model) or init = { preset = \"tiny\"; }");
    int64_t size = 8, per = 4, max = 1;
    int reads = 1;
    host->get_int(ctx, "image_size", &size);
    host->get_int(ctx, "tokens_per_image", &per);
    host->get_int(ctx, "max_images", &max);
    host->get_bool(ctx, "reads_images", &reads);
    int touch = 0;
    host->get_bool(ctx, "touch_images", &touch);
    host->get_string(ctx, "image_fit", &fit);
    host->get_string(ctx, "trace", &trace);
    vision_state *v = calloc(1, sizeof *v);
    if (!v)
        return host->fail(ctx, TERN_ENOMEM, ME "out of memory");
    v->base.ctx = ctx;
    v->reads_images = reads;
    v->touch_images = touch;
    v->spec = (tern_image_spec){.size = sizeof v->spec, .width = (int32_t)size,
                                .height = (int32_t)size, .max_images = (uint32_t)max,
                                .tokens_per_image = (int32_t)per};
    for (uint32_t f = 0; f < 3; f++)
        if (strcmp(fit, fit_names[f]) == 0)
            v->spec.fit = f;
    snprintf(v->spec.placeholder, sizeof v->spec.placeholder, "%s", PLACEHOLDER);
    snprintf(v->trace, sizeof v->trace, "%s", trace ? trace : "");
    if (have_path) {
        struct stat st;
        int rc = stat(path, &st) != 0 || !S_ISDIR(st.st_mode)
                     ? host->fail(ctx, TERN_ENOTFOUND, "%s: no such model directory", path)
                     : model_load(v, path, 0);
        if (rc != TERN_OK) {
            free(v);
            return rc;
        }
    }
    *state = v;
    return TERN_OK;
}

static int vision_image_spec(void *state, tern_image_spec *out)
{
    vision_state *v = state;
    if (!v->reads_images)
        return TERN_EUNSUPPORTED;
    if (!out || !TERN_HAS(out, tokens_per_image))
        return host->fail(v->base.ctx, TERN_EINVAL, ME "image_spec got a struct too small");
    size_t size = out->size;
    *out = v->spec;
    out->size = size;
    return TERN_OK;
}

static int vision_tokenize(void *state, const char *text, size_t text_len, int add_bos,
                           int32_t **ids, size_t *n)
{
    vision_state *v = state;
    size_t k = strlen(PLACEHOLDER), per = (size_t)v->spec.tokens_per_image;
    /* at most one id per byte, or per image tokens per placeholder */
    size_t cap = (add_bos ? 1 : 0) + text_len * (per > k ? per : 1) + 1;
    int32_t *out = malloc(cap * sizeof *out);
    if (!out)
        return host->fail(v->base.ctx, TERN_ENOMEM, ME "out of memory");
    size_t m = 0;
    if (add_bos)
        out[m++] = BOS_ID;
    for (size_t i = 0; i < text_len;) {
        if (v->reads_images && text_len - i >= k && memcmp(text + i, PLACEHOLDER, k) == 0) {
            for (size_t j = 0; j < per; j++)
                out[m++] = IMAGE_ID;
            i += k;
        } else {
            out[m++] = (unsigned char)text[i++];
        }
    }
    *ids = out;
    *n = m;
    return TERN_OK;
}

static int vision_detokenize(void *state, const int32_t *ids, size_t n, char **text,
                             size_t *text_len)
{
    vision_state *v = state;
    int32_t *kept = malloc((n ? n : 1) * sizeof *kept);
    if (!kept)
        return host->fail(v->base.ctx, TERN_ENOMEM, ME "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] != IMAGE_ID)
            kept[m++] = ids[i];
    int rc = model_detokenize(state, kept, m, text, text_len);
    free(kept);
    return rc;
}

/* The runs of image tokens in tokens[0..len) must be the images, one each,
 * of the spec's size where the fit is exact; *sum gets their bytes' sum. */
static int check_images(vision_state *v, const char *op, size_t i, const int32_t *tokens,
                        size_t len, const tern_image *images, size_t n_images,
                        unsigned long long *sum)
{
    size_t runs = 0, per = (size_t)v->spec.tokens_per_image;
    for (size_t p = 0; p < len;) {
        if (tokens[p] != IMAGE_ID) {
            p++;
            continue;
        }
        size_t q = p;
        while (q < len && tokens[q] == IMAGE_ID)
            q++;
        if ((q - p) % per != 0)
            return host->fail(v->base.ctx, TERN_EINVAL, ME "%s %zu: a run of %zu image tokens "
                              "at %zu is not a whole number of images (%zu each)", op, i, q - p,
                              p, per);
        runs += (q - p) / per;
        p = q;
    }
    if (runs != n_images || (n_images && !images))
        return host->fail(v->base.ctx, TERN_EINVAL, ME "%s %zu: %zu image%s in the tokens, "
                          "%zu given", op, i, runs, runs == 1 ? "" : "s", n_images);
    *sum = 0;
    for (size_t k = 0; k < n_images; k++) {
        const tern_image *im = &images[k];
        if (im->size < sizeof *im || im->width < 1 || im->height < 1 || !im->rgb)
            return host->fail(v->base.ctx, TERN_EINVAL, ME "%s %zu: image %zu is empty", op, i,
                              k);
        if (v->spec.fit == TERN_IMAGE_FIT_EXACT &&
            (im->width != v->spec.width || im->height != v->spec.height))
            return host->fail(v->base.ctx, TERN_EINVAL, ME "%s %zu: image %zu is %dx%d, not "
                              "%dx%d", op, i, k, im->width, im->height, v->spec.width,
                              v->spec.height);
        for (size_t b = 0; b < (size_t)im->width * (size_t)im->height * 3; b++)
            *sum += im->rgb[b];
    }
    return TERN_OK;
}

static void trace_line(vision_state *v, const char *op, size_t n_images, unsigned long long sum)
{
    if (!v->trace[0])
        return;
    FILE *f = fopen(v->trace, "a"); /* one short line per write: O_APPEND keeps them whole */
    if (!f)
        return;
    fprintf(f, "%s images=%zu sum=%llu\n", op, n_images, sum);
    fclose(f);
}

/* A prompt with an image: "R" (its top-left pixel's red, in decimal), EOS. */
static int answer_image(vision_state *v, const tern_gen_request *q, tern_gen_output *out)
{
    char text[8];
    int len = snprintf(text, sizeof text, "%u", q->images[0].rgb[0]);
    size_t cap = (size_t)len + 1;
    out->tokens = malloc(cap * sizeof *out->tokens);
    out->logprobs = malloc(cap * sizeof *out->logprobs);
    if (!out->tokens || !out->logprobs) {
        free(out->tokens);
        free(out->logprobs);
        out->tokens = NULL;
        out->logprobs = NULL;
        return host->fail(v->base.ctx, TERN_ENOMEM, ME "out of memory");
    }
    out->len = 0;
    out->finish = TERN_FINISH_LENGTH;
    for (int k = 0; k <= len && out->len < q->max_new_tokens; k++) {
        out->tokens[out->len] = k < len ? (unsigned char)text[k] : EOS_ID;
        out->logprobs[out->len++] = (float)-log((double)N_BYTES);
        if (k == len)
            out->finish = TERN_FINISH_STOP;
    }
    return TERN_OK;
}

/* Change the last byte of the file an image came from. */
static void touch_image(const tern_image *im)
{
    FILE *f = im->source ? fopen(im->source, "r+b") : NULL;
    if (!f)
        return;
    if (fseek(f, -1, SEEK_END) == 0) {
        int c = fgetc(f);
        if (c != EOF && fseek(f, -1, SEEK_END) == 0)
            fputc(c ^ 1, f);
    }
    fclose(f);
}

static int vision_generate(void *state, const tern_gen_request *req, size_t n,
                           tern_gen_output *outs)
{
    vision_state *v = state;
    size_t done = 0;
    int rc = TERN_OK;
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        const tern_gen_request *q = &req[i];
        int has = TERN_HAS(q, n_images);
        unsigned long long sum = 0;
        rc = check_images(v, "generate request", i, q->prompt, q->prompt_len,
                          has ? q->images : NULL, has ? q->n_images : 0, &sum);
        if (rc != TERN_OK)
            break;
        trace_line(v, "generate", has ? q->n_images : 0, sum);
        if (!has || q->n_images == 0) {
            rc = model_generate(state, q, 1, &outs[done]);
            done += rc == TERN_OK ? q->n_samples : 0;
            continue;
        }
        for (uint32_t s = 0; s < q->n_samples && rc == TERN_OK; s++)
            if ((rc = answer_image(v, q, &outs[done])) == TERN_OK)
                done++;
        for (size_t k = 0; v->touch_images && k < q->n_images; k++)
            touch_image(&q->images[k]);
    }
    if (rc != TERN_OK)
        for (size_t j = 0; j < done; j++) {
            free(outs[j].tokens);
            free(outs[j].logprobs);
            outs[j].tokens = NULL;
            outs[j].logprobs = NULL;
            outs[j].len = 0;
        }
    return rc;
}

/* score and backward: the images checked and traced, then as the template. */
static int check_sequences_images(vision_state *v, const char *op, const tern_sequence *seqs,
                                  size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const tern_sequence *q = &seqs[i];
        int has = TERN_HAS(q, n_images);
        unsigned long long sum = 0;
        int rc = check_images(v, op, i, q->tokens, q->len, has ? q->images : NULL,
                              has ? q->n_images : 0, &sum);
        if (rc != TERN_OK)
            return rc;
        trace_line(v, op, has ? q->n_images : 0, sum);
    }
    return TERN_OK;
}

static int vision_score(void *state, const tern_sequence *seqs, size_t n, float **logprobs,
                        float **entropies)
{
    vision_state *v = state;
    int rc = check_sequences_images(v, "score", seqs, n);
    if (rc != TERN_OK)
        return rc;
    const float lp = (float)-log((double)N_BYTES), h = (float)log((double)N_BYTES);
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < seqs[i].len; p++) {
            int counted = p >= seqs[i].start;
            logprobs[i][p] = counted ? lp : 0.0f;
            if (entropies)
                entropies[i][p] = counted ? h : 0.0f;
        }
    return TERN_OK;
}

static int vision_backward(void *state, const tern_sequence *seqs, size_t n,
                           const float *const *dlogp, const float *const *dentropy)
{
    (void)dlogp;
    (void)dentropy;
    return check_sequences_images(state, "backward", seqs, n);
}

static const tern_setting_spec init_keys[] = {
    TERN_SETTING(.name = "preset", .type = TERN_SETTING_STRING, .choices = "tiny|bench",
                 .doc = "size of the fresh model (required in init)"),
    TERN_SETTING(.name = "seed", .type = TERN_SETTING_INT, .min = 0,
                 .max = 9007199254740992.0, .doc = "ignored"),
    TERN_SETTINGS_END,
};

static const tern_setting_spec vision_settings[] = {
    TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING,
                 .doc = "directory of a saved model to load"),
    TERN_SETTING(.name = "init", .type = TERN_SETTING_GROUP, .children = init_keys,
                 .doc = "a fresh model instead of path"),
    TERN_SETTING(.name = "threads", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 256,
                 .doc = "threads of the instance"),
    TERN_SETTING(.name = "image_size", .type = TERN_SETTING_INT, .def = "8", .min = 1,
                 .max = 4096, .doc = "the encoder's width and height"),
    TERN_SETTING(.name = "image_fit", .type = TERN_SETTING_STRING, .def = "\"exact\"",
                 .choices = "any|resize|exact", .doc = "how other sizes are taken"),
    TERN_SETTING(.name = "tokens_per_image", .type = TERN_SETTING_INT, .def = "4", .min = 1,
                 .max = 64, .doc = "image tokens one placeholder becomes"),
    TERN_SETTING(.name = "max_images", .type = TERN_SETTING_INT, .def = "1", .min = 1,
                 .max = 16, .doc = "images one prompt may carry"),
    TERN_SETTING(.name = "reads_images", .type = TERN_SETTING_BOOL, .def = "true",
                 .doc = "false: image_spec says TERN_EUNSUPPORTED"),
    TERN_SETTING(.name = "trace", .type = TERN_SETTING_STRING,
                 .doc = "a file each generate, score, backward appends a line to"),
    TERN_SETTING(.name = "touch_images", .type = TERN_SETTING_BOOL, .def = "false",
                 .doc = "change each image file's last byte after generating from it"),
    TERN_SETTINGS_END,
};

static tern_model_ops vision_ops;
static tern_plugin_descriptor vision_descriptor;

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    const tern_plugin_descriptor *base = template_entry(h); /* keeps `host` */
    vision_ops = *(const tern_model_ops *)base->ops;
    vision_ops.create = vision_create;
    vision_ops.tokenize = vision_tokenize;
    vision_ops.detokenize = vision_detokenize;
    vision_ops.generate = vision_generate;
    vision_ops.score = vision_score;
    vision_ops.backward = vision_backward;
    vision_ops.image_spec = vision_image_spec;
    vision_descriptor = *base;
    vision_descriptor.summary = "test model that reads images: pixels decide its answers";
    vision_descriptor.ops = &vision_ops;
    vision_descriptor.settings = vision_settings;
    return &vision_descriptor;
}
