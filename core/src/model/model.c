/* model.c: the model proxy (see model.h): the one place that calls a model
 * plugin's ops, each call wrapped the same way. */
#include "model/model.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/op_watch.h"
#include "base/errmsg.h"

/* The plugin failed: its status (TERN_ERR for a positive one) with
 * "WHAT: REASON". Called right after the op, so the thread's message is the
 * plugin's (each call clears it first). */
/* A model op a crash inside is named by (base/op_watch.h); no watchdog: a
 * generation or a step may rightly take minutes. */
#define MODEL_FIX "a bug in the model plugin or in the files it loaded: report this line to " \
                  "its author; `tern run CONFIG --resume` continues from the newest checkpoint"
#define WATCHED(m, name, call)                                                            \
    TERN_IN_OP((m)->who ? (m)->who : "model", (m)->plugin ? (m)->plugin : "?",             \
               (m)->path ? (m)->path : "?", name, MODEL_FIX, call)

void tern_model_name(tern_model *m, const char *who, const char *plugin, const char *path,
                     uint32_t abi_minor)
{
    m->who = who, m->plugin = plugin, m->path = path;
    m->abi_minor = abi_minor;
}

/* An array of structs is strided by its elements' size: a plugin built
 * against an older minor steps through it at the size it knows, so it gets
 * a copy of the members it knows (each element's `size` first, set to that
 * size). The bytes an older plugin knows of each struct: */
static size_t request_bytes(uint32_t minor)
{
    if (minor == 0 || minor >= 16)
        return sizeof(tern_gen_request);
    if (minor == 15)
        return offsetof(tern_gen_request, top_logprobs);
    return minor >= 12 ? offsetof(tern_gen_request, on_token)
                       : offsetof(tern_gen_request, images);
}

static size_t sequence_bytes(uint32_t minor)
{
    if (minor == 0 || minor >= 12)
        return sizeof(tern_sequence);
    return minor >= 11 ? offsetof(tern_sequence, images) : offsetof(tern_sequence, logp_out);
}

/* items[0..n) of `full` bytes each as the plugin takes them: *use is items
 * itself when known == full, else *copy (malloc'd, freed by the caller),
 * `known` bytes each. TERN_OK, or TERN_ENOMEM with a message. */
static int as_known(const void *items, size_t n, size_t full, size_t known, const char *what,
                    const void **use, void **copy)
{
    *use = items, *copy = NULL;
    if (known >= full)
        return TERN_OK;
    char *p = malloc(n > 0 ? n * known : 1);
    if (!p)
        return tern_errorf(TERN_ENOMEM, "%s: out of memory", what);
    for (size_t i = 0; i < n; i++) {
        memcpy(p + i * known, (const char *)items + i * full, known);
        memcpy(p + i * known, &known, sizeof known); /* size: the first member */
    }
    *use = *copy = p;
    return TERN_OK;
}

static int failed(int rc, const char *what, const char *op)
{
    const char *m = tern_error_message();
    return tern_errorf(rc < 0 ? rc : TERN_ERR, "%s: %s", what ? what : op,
                       *m ? m : "the plugin gave no reason (a bug in the plugin)");
}

/* Our own copy of the plugin's n ids (n + 1 entries), the plugin's buffer
 * given back. */
static int own_ids(const tern_model *m, const char *what, int32_t *t, size_t n, int32_t **ids)
{
    *ids = malloc((n + 1) * sizeof **ids);
    if (*ids && n)
        memcpy(*ids, t, n * sizeof *t);
    m->ops->free_buffer(m->state, t);
    return *ids ? TERN_OK : tern_errorf(TERN_ENOMEM, "%s: out of memory", what);
}

int tern_model_make(tern_model *m, const tern_model_ops *ops, tern_ctx *ctx, const char *what)
{
    memset(m, 0, sizeof *m);
    tern_error_clear();
    void *state = NULL;
    int rc = ops->create(ctx, &state);
    if (rc != TERN_OK) {
        const char *msg = tern_error_message();
        return tern_errorf(rc, "%s: %s", what, *msg ? msg : "it gave no reason");
    }
    *m = (tern_model){.ops = ops, .state = state, .ctx = ctx, .made = 1};
    return TERN_OK;
}

void tern_model_unmake(tern_model *m)
{
    if (m->made && m->ops)
        m->ops->destroy(m->state);
    memset(m, 0, sizeof *m);
}

int tern_model_has_chat(const tern_model *m)
{
    return TERN_HAS(m->ops, encode_chat) && m->ops->encode_chat;
}

int tern_model_tokenize(const tern_model *m, const char *what, const char *text, size_t len,
                        int bos, int32_t **ids, size_t *n)
{
    int32_t *t = NULL;
    *ids = NULL;
    *n = 0;
    tern_error_clear();
    int rc = m->ops->tokenize(m->state, text, len, bos, &t, n);
    if (rc != TERN_OK) {
        *n = 0; /* whatever the plugin left, it did not hand it over */
        return failed(rc, what, "tokenize");
    }
    return own_ids(m, what, t, *n, ids);
}

int tern_model_chat(const tern_model *m, const char *what, const char *system,
                    const char *prompt, int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    if (!tern_model_has_chat(m))
        return tern_errorf(TERN_EUNSUPPORTED, "%s: the model plugin has no chat template",
                           what);
    tern_chat_message msgs[2];
    size_t k = 0;
    if (system)
        msgs[k++] = (tern_chat_message){.size = sizeof msgs[0], .role = "system",
                                        .content = system};
    msgs[k++] = (tern_chat_message){.size = sizeof msgs[0], .role = "user", .content = prompt};
    return tern_model_chat_turns(m, what, msgs, k, ids, n);
}

int tern_model_chat_turns(const tern_model *m, const char *what, const tern_chat_message *msgs,
                          size_t k, int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    if (!tern_model_has_chat(m))
        return tern_errorf(TERN_EUNSUPPORTED, "%s: the model plugin has no chat template",
                           what);
    int32_t *t = NULL;
    tern_error_clear();
    int rc = m->ops->encode_chat(m->state, msgs, k, &t, n, NULL, NULL);
    if (rc != TERN_OK) {
        *n = 0;
        return failed(rc, what, "encode_chat");
    }
    return own_ids(m, what, t, *n, ids);
}

int tern_model_has_chat_json(const tern_model *m)
{
    return TERN_HAS(m->ops, encode_chat_json) && m->ops->encode_chat_json;
}

int tern_model_chat_json(const tern_model *m, const char *what, const char *messages,
                         const char *tools, int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    if (!tern_model_has_chat_json(m))
        return tern_errorf(TERN_EUNSUPPORTED, "%s: the model plugin renders no JSON "
                           "conversations (encode_chat_json, ABI 1.14)", what);
    int32_t *t = NULL;
    tern_error_clear();
    int rc = m->ops->encode_chat_json(m->state, messages, tools, 1, &t, n, NULL, NULL);
    if (rc != TERN_OK) {
        *n = 0;
        return failed(rc, what, "encode_chat_json");
    }
    return own_ids(m, what, t, *n, ids);
}

int tern_model_text(const tern_model *m, const char *what, const int32_t *tokens, size_t n,
                    char **text, size_t *len)
{
    char *t = NULL;
    size_t bytes = 0;
    *text = NULL;
    tern_error_clear();
    int rc = m->ops->detokenize(m->state, tokens, n, &t, &bytes);
    if (rc != TERN_OK)
        return failed(rc, what, "detokenize");
    if ((*text = malloc(bytes + 1))) {
        if (bytes)
            memcpy(*text, t, bytes);
        (*text)[bytes] = '\0';
    }
    m->ops->free_buffer(m->state, t);
    if (len)
        *len = bytes;
    return *text ? TERN_OK : tern_errorf(TERN_ENOMEM, "%s: out of memory", what);
}

int tern_model_special(const tern_model *m, const char *what, tern_special_tokens *sp)
{
    *sp = (tern_special_tokens){.size = sizeof *sp, .bos = -1, .eos = -1, .pad = -1,
                                .context_len = 0};
    if (!TERN_HAS(m->ops, special_tokens) || !m->ops->special_tokens)
        return TERN_EUNSUPPORTED;
    tern_error_clear();
    int rc = m->ops->special_tokens(m->state, sp);
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "special_tokens");
}

int tern_model_image_spec(const tern_model *m, const char *what, tern_image_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->size = sizeof *spec;
    if (!m->ops || !TERN_HAS(m->ops, image_spec) || !m->ops->image_spec)
        return TERN_EUNSUPPORTED;
    tern_error_clear();
    int rc;
    WATCHED(m, "image_spec", rc = m->ops->image_spec(m->state, spec));
    if (rc == TERN_EUNSUPPORTED) {
        tern_error_clear();
        memset(spec, 0, sizeof *spec);
        spec->size = sizeof *spec;
        return TERN_EUNSUPPORTED;
    }
    if (rc != TERN_OK)
        return failed(rc, what, "image_spec");
    /* what the core counts on, checked once here rather than trusted */
    const char *bad = NULL;
    size_t ph = strnlen(spec->placeholder, sizeof spec->placeholder);
    if (ph == 0 || ph == sizeof spec->placeholder)
        bad = "a placeholder of 1 to 31 bytes";
    else if (spec->tokens_per_image < 1)
        bad = "tokens_per_image >= 1";
    else if (spec->max_images < 1)
        bad = "max_images >= 1";
    else if (spec->fit > TERN_IMAGE_FIT_EXACT)
        bad = "a fit of 0 (any), 1 (resize) or 2 (exact)";
    else if (spec->width < 0 || spec->height < 0 ||
             (spec->fit != TERN_IMAGE_FIT_ANY && (spec->width == 0 || spec->height == 0)))
        bad = "a width and height >= 1 (0 only with fit any)";
    if (bad) {
        int rc2 = tern_errorf(TERN_ERR, "%s: the model plugin's image_spec gave no %s (a bug in "
                              "the plugin)", what, bad);
        memset(spec, 0, sizeof *spec);
        spec->size = sizeof *spec;
        return rc2;
    }
    return TERN_OK;
}

int tern_model_generate(const tern_model *m, const char *what, const tern_gen_request *req,
                        size_t n, tern_gen_output *outs)
{
    tern_error_clear();
    int rc;
    const void *use;
    void *copy;
    rc = as_known(req, n, sizeof *req, request_bytes(m->abi_minor), what ? what : "generate", &use,
                  &copy);
    if (rc != TERN_OK)
        return rc;
    WATCHED(m, "generate", rc = m->ops->generate(m->state, use, n, outs));
    free(copy);
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "generate");
}

const char *tern_finish_name(uint32_t finish)
{
    switch (finish) {
    case TERN_FINISH_LENGTH:
        return "length";
    case TERN_FINISH_STOPPED:
        return "stopped";
    default:
        return "stop";
    }
}

void tern_model_release_outputs(const tern_model *m, tern_gen_output *outs, size_t n)
{
    for (size_t i = 0; outs && i < n; i++) {
        m->ops->free_buffer(m->state, outs[i].tokens);
        m->ops->free_buffer(m->state, outs[i].logprobs);
        outs[i].tokens = NULL;
        outs[i].logprobs = NULL;
    }
}

int tern_model_score(const tern_model *m, const char *what, const tern_sequence *seqs, size_t n,
                     float **logprobs, float **entropies)
{
    tern_error_clear();
    int rc;
    const void *use;
    void *copy;
    rc = as_known(seqs, n, sizeof *seqs, sequence_bytes(m->abi_minor), what ? what : "score", &use,
                  &copy);
    if (rc != TERN_OK)
        return rc;
    WATCHED(m, "score", rc = m->ops->score(m->state, use, n, logprobs, entropies));
    free(copy);
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "score");
}

int tern_model_backward(const tern_model *m, const char *what, const tern_sequence *seqs,
                        size_t n, const float *const *dlogp, const float *const *dentropy)
{
    tern_error_clear();
    int rc;
    const void *use;
    void *copy;
    rc = as_known(seqs, n, sizeof *seqs, sequence_bytes(m->abi_minor), what ? what : "backward", &use,
                  &copy);
    if (rc != TERN_OK)
        return rc;
    WATCHED(m, "backward", rc = m->ops->backward(m->state, use, n, dlogp, dentropy));
    free(copy);
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "backward");
}

int tern_model_step(const tern_model *m, const char *what, tern_optim_step *step)
{
    tern_error_clear();
    int rc;
    WATCHED(m, "step", rc = m->ops->step(m->state, step));
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "step");
}

int tern_model_tensors(const tern_model *m, const char *what, const tern_tensor **t, size_t *n)
{
    tern_error_clear();
    int rc = m->ops->tensors(m->state, t, n);
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "tensors");
}

int tern_model_has_gradients(const tern_model *m)
{
    return m->ops && TERN_HAS(m->ops, gradients) && m->ops->gradients;
}

int tern_model_gradients(const tern_model *m, const char *what, const tern_tensor **t,
                         size_t *n)
{
    if (!tern_model_has_gradients(m))
        return tern_errorf(TERN_EUNSUPPORTED, "%s: the model plugin does not expose its "
                           "gradients (tern_model_ops.gradients, ABI 1.7)", what);
    tern_error_clear();
    int rc = m->ops->gradients(m->state, t, n);
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "gradients");
}

int tern_model_has_device_tensors(const tern_model *m)
{
    return m->ops && TERN_HAS(m->ops, device_tensors_written) && m->ops->device_tensors &&
           m->ops->device_tensors_written;
}

int tern_model_device_tensors(const tern_model *m, const char *what, const tern_tensor **t,
                              size_t *n, int32_t *device)
{
    if (!tern_model_has_device_tensors(m))
        return tern_errorf(TERN_EUNSUPPORTED, "%s: the model plugin computes in host memory "
                           "(no device_tensors op, ABI 1.8)", what);
    tern_error_clear();
    *device = 0;
    int rc = m->ops->device_tensors(m->state, t, n, device);
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "device_tensors");
}

int tern_model_device_tensors_written(const tern_model *m, const char *what)
{
    tern_error_clear();
    int rc = m->ops->device_tensors_written(m->state);
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "device_tensors_written");
}

int tern_model_has_device_gradients(const tern_model *m)
{
    return m->ops && TERN_HAS(m->ops, device_gradients) && m->ops->device_gradients;
}

int tern_model_device_gradients(const tern_model *m, const char *what, const tern_tensor **t,
                                size_t *n, int32_t *device)
{
    if (!tern_model_has_device_gradients(m))
        return tern_errorf(TERN_EUNSUPPORTED, "%s: the model plugin has no gradients on a "
                           "device (no device_gradients op, ABI 1.8)", what);
    tern_error_clear();
    *device = 0;
    int rc = m->ops->device_gradients(m->state, t, n, device);
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "device_gradients");
}

int tern_model_save(const tern_model *m, const char *what, const char *dir, int with_optimizer)
{
    tern_error_clear();
    int rc;
    WATCHED(m, "save", rc = m->ops->save(m->state, dir, with_optimizer));
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "save");
}

int tern_model_load(const tern_model *m, const char *what, const char *dir, int with_optimizer)
{
    tern_error_clear();
    int rc;
    WATCHED(m, "load", rc = m->ops->load(m->state, dir, with_optimizer));
    return rc == TERN_OK ? TERN_OK : failed(rc, what, "load");
}
