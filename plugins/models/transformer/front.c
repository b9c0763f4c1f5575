/*
 * front.c: the tern_model_ops shared by the decoder plugins (front.h): the
 * settings path, init and chat_template, the tokenizer and chat template,
 * checkpoints, packing sequences into batches, and the host copy of the
 * weights; the arithmetic goes to the instance's engine (tf_engine).
 */
#include "front.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf/gguf_model.h"
#include "hf/checkpoint.h"
#include "hf/hf_config.h"
#include "tokenizer/chat_template.h"
#include "tern/support/paths.h"
#include "tokenizer/tokenizer.h"
#include "vision/vlm.h"

/* The prompt text that marks an image (tern_image_spec.placeholder). */
#define IMAGE_PLACEHOLDER "<image>"

static const tern_host *host;

void front_set_host(const tern_host *h) { host = h; }

/* The sequences of a score/backward call packed into one batch. Sequences
 * with the same prompt (a group's responses, one after another) share it:
 * one packed sequence holds the prompt but its last token once, then one
 * branch per response, from the prompt's last token on (so every branch's
 * first row predicts its response's first token), each seeing the prefix and
 * itself (llama_batch.shared, .seg0). Token k of input sequence i is row
 * row0[i] + k (k >= start - 1). The buffers live with the instance and only
 * grow, so a training loop allocates nothing per step. */
typedef struct packed {
    int32_t *start, *tokens, *pos, *target, *row0, *shared, *seg0;
    float *scale, *logp, *ent, *dlogp, *dent;
    const float **row_input; /* a LLaVA's: image rows' features (vlm_images), else NULL */
    int32_t *img_row;        /* a LLaVA's: the feature row (of t->imgs) of each row, or -1 */
    size_t cap_rows, cap_seqs;
    llama_batch b;
} packed;

static void packed_free(packed *p)
{
    free(p->start), free(p->tokens), free(p->pos), free(p->target), free(p->row0);
    free(p->shared), free(p->seg0), free(p->scale), free(p->logp), free(p->ent);
    free(p->dlogp), free(p->dent), free(p->row_input), free(p->img_row);
    memset(p, 0, sizeof *p);
}

typedef struct transformer {
    tern_ctx *ctx;
    const tf_engine *engine;
    void *eng;        /* the engine's instance */
    int host_written; /* tensors() handed out the host copy: push before computing */
    llama_model m;    /* config and the host copy of the weights */
    tokenizer *tok;
    chat_template *chat;  /* how encode_chat formats prompts */
    int32_t end_of_turn;  /* the chat template's end-of-turn token, or -1 */
    adamw opt;        /* allocated at the first step or optimizer load */
    tern_tensor *tensors;       /* built at the first tensors() call */
    tern_tensor *grad_tensors;  /* the same over the gradients, at the first gradients() */
    tern_tensor *dev_tensors;   /* the same over the device weights, at the first device_tensors() */
    tern_tensor *dev_grads;     /* ... and the device gradients, at the first device_gradients() */
    char (*tensor_names)[96];  /* their names (both tables') */
    packed pk;                 /* score/backward batch buffers */
    size_t batch_tokens;       /* rows per forward/backward pass at most (batch_tokens) */
    int decode_rows;           /* samples decoded at once at most, 0: all (decode_rows) */
    int image_exact;           /* image_fit "exact": refuse other sizes */
    int train_tower;           /* train_vision_tower */
    vlm_images imgs;           /* a LLaVA's: the current call's images */
    char err[1024];
} transformer;

/* ---- create / destroy --------------------------------------------------- */

/* Optional integer override of a preset field from init.KEY. */
static int override_int(tern_ctx *ctx, const char *key, int *field)
{
    int64_t v;
    int rc = host->get_int(ctx, key, &v);
    if (rc == TERN_OK)
        *field = (int)v;
    return rc == TERN_ENOTFOUND ? TERN_OK : rc;
}

static int fresh_config(transformer *t, llama_config *c, uint64_t *seed)
{
    const char *preset = "tiny";
    int rc = host->get_string(t->ctx, "init.preset", &preset);
    if (rc != TERN_OK && rc != TERN_ENOTFOUND)
        return rc;
    if (llama_preset(preset, c, t->err, sizeof t->err) != 0)
        return host->setting_error(t->ctx, "init.preset", "%s", t->err);
    static const char *const keys[] = {"init.hidden_size", "init.intermediate_size",
                                       "init.num_hidden_layers", "init.num_attention_heads",
                                       "init.num_key_value_heads", "init.max_position_embeddings",
                                       "init.image_size", "init.patch_size",
                                       "init.vision_hidden_size", "init.vision_layers"};
    int *fields[] = {&c->hidden_size, &c->intermediate_size, &c->n_layers, &c->n_heads,
                     &c->n_kv_heads, &c->max_positions, &c->vision.image, &c->vision.patch,
                     &c->vision.hidden, &c->vision.layers};
    int vision = c->vision.layers > 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if ((rc = override_int(t->ctx, keys[i], fields[i])) != TERN_OK)
            return rc;
    if (!vision && c->vision.layers > 0)
        return host->setting_error(t->ctx, "init", "init.vision_layers (and the other vision "
                                   "sizes) apply to the vlm-tiny and vlm-bench presets; preset "
                                   "\"%s\" has no vision tower", preset);
    if (vision) /* the tower's MLP keeps CLIP's 4x (and 2x in vlm-tiny) ratio to its width */
        c->vision.intermediate = c->vision.hidden * (strcmp(preset, "vlm-tiny") == 0 ? 2 : 4);
    int tied;
    rc = host->get_bool(t->ctx, "init.tie_word_embeddings", &tied);
    if (rc == TERN_OK)
        c->tie_embeddings = tied;
    else if (rc != TERN_ENOTFOUND)
        return rc;
    if (llama_config_check(c, t->err, sizeof t->err) != 0)
        return host->setting_error(t->ctx, "init", "%s", t->err);
    int64_t s;
    rc = host->get_int(t->ctx, "init.seed", &s);
    /* without init.seed the weights follow the run's seed */
    *seed = rc == TERN_OK ? (uint64_t)s : host->rng_seed(t->ctx, "init");
    return rc == TERN_ENOTFOUND ? TERN_OK : rc;
}

/* The chat template of the `chat_template` setting (under "auto": from the
 * model at `path`, a directory, or a GGUF file whose tokenizer_config.json
 * text is gguf_config; NULL for a fresh model), and its end-of-turn token,
 * which must be one token of the tokenizer. */
static int open_chat_template(transformer *t, const char *path, const char *gguf_config)
{
    const char *name = "auto";
    int rc = host->get_string(t->ctx, "chat_template", &name);
    if (rc != TERN_OK && rc != TERN_ENOTFOUND)
        return rc;
    if (gguf_config ? chat_template_from_config_text(path, gguf_config, strlen(gguf_config),
                                                     name, &t->chat, t->err, sizeof t->err)
                    : chat_template_from_dir(path, name, &t->chat, t->err, sizeof t->err))
        return host->setting_error(t->ctx, "chat_template", "%s", t->err);
    t->end_of_turn = -1;
    const char *eot = chat_template_end_of_turn(t->chat);
    if (!eot)
        return TERN_OK;
    int32_t *ids = NULL;
    size_t n = 0;
    if (tokenizer_encode(t->tok, eot, strlen(eot), 0, &ids, &n) != 0)
        return host->fail(t->ctx, TERN_ENOMEM, "out of memory");
    if (n == 1)
        t->end_of_turn = ids[0];
    free(ids);
    if (t->end_of_turn < 0)
        return host->setting_error(t->ctx, "chat_template", "the %s template ends a turn with "
                                   "%s, which is not one token of this model's tokenizer (%zu "
                                   "tokens): choose a template the model was trained with, or "
                                   "\"none\"", chat_template_name(t->chat), eot, n);
    return TERN_OK;
}

/* Whether the config gives any init.* key (an init group with keys). */
static int init_given(tern_ctx *ctx)
{
    static const char *const int_keys[] = {"init.seed", "init.hidden_size",
                                           "init.intermediate_size", "init.num_hidden_layers",
                                           "init.num_attention_heads", "init.num_key_value_heads",
                                           "init.max_position_embeddings", "init.image_size",
                                           "init.patch_size", "init.vision_hidden_size",
                                           "init.vision_layers"};
    const char *s;
    int64_t v;
    int b;
    if (host->get_string(ctx, "init.preset", &s) == TERN_OK ||
        host->get_bool(ctx, "init.tie_word_embeddings", &b) == TERN_OK)
        return 1;
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++)
        if (host->get_int(ctx, int_keys[i], &v) == TERN_OK)
            return 1;
    return 0;
}

/* path names neither a GGUF file nor a directory: say which it is, not what
 * a directory would hold ("X.gguf/config.json: cannot read: Not a directory"
 * misled). TERN_OK when it is a directory. */
static int check_model_path(transformer *t, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return host->setting_error(t->ctx, "path", "%s: %s", path, strerror(errno));
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        const char *hint = "model.path names a Hugging Face model directory or a GGUF file";
        if (strncmp(base, "SmolLM2", 7) == 0 && strstr(base, ".gguf"))
            hint = "scripts/fetch-smollm2.py --dir DIR fetches SmolLM2's GGUF file and prints its "
                   "path; docs/models.md";
        return host->setting_error(t->ctx, "path", "%s: no such file or directory (%s)", path,
                                   hint);
    }
    if (S_ISDIR(st.st_mode))
        return TERN_OK;
    const char *what = "neither a GGUF file nor a model directory";
    if (S_ISREG(st.st_mode) && st.st_size < 4)
        what = "too short to be a GGUF file (an empty or cut-short download?), and not a model "
               "directory";
    else if (S_ISREG(st.st_mode))
        what = "not a GGUF file (it does not start with \"GGUF\"), and not a model directory";
    return host->setting_error(t->ctx, "path", "%s: %s", path, what);
}

/* The config and tokenizer of the model directory at path. */
static int open_dir(transformer *t, const char *path, llama_config *c)
{
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/config.json", path);
    if (hf_config_read(cfg, c, t->err, sizeof t->err) != 0 ||
        tokenizer_load(path, &t->tok, t->err, sizeof t->err) != 0)
        return host->setting_error(t->ctx, "path", "%s", t->err);
    return TERN_OK;
}

/* Make t's model: from `path` (a GGUF file or a model directory) or, path
 * NULL, fresh from the init settings. On failure t keeps what it got, for
 * front_destroy. */
static int make_model(transformer *t, const char *path)
{
    char *gguf_config = NULL; /* a GGUF model's tokenizer_config.json text, for its template */
    int rc = TERN_OK;
    if (path && gguf_model_is_gguf(path)) {
        /* the weights are dequantised into t->m, the file closed again */
        if (gguf_model_load(path, &t->m, &t->tok, &gguf_config, t->err, sizeof t->err) != 0)
            rc = host->setting_error(t->ctx, "path", "%s", t->err);
    } else {
        llama_config c;
        uint64_t seed = 0;
        if (path) {
            if ((rc = check_model_path(t, path)) == TERN_OK)
                rc = open_dir(t, path, &c);
        }
        else if ((rc = fresh_config(t, &c, &seed)) == TERN_OK && tokenizer_new_bytes(&t->tok) != 0)
            rc = host->fail(t->ctx, TERN_ENOMEM, "out of memory");
        if (rc == TERN_OK && tokenizer_vocab_size(t->tok) > c.vocab_size)
            rc = host->fail(t->ctx, TERN_EINVAL, "the tokenizer has %d tokens but the model's "
                            "vocab_size is %d", tokenizer_vocab_size(t->tok), c.vocab_size);
        else if (rc == TERN_OK && llama_model_init(&t->m, &c, t->err, sizeof t->err) != 0)
            rc = host->fail(t->ctx, TERN_ENOMEM, "%s", t->err);
        else if (rc == TERN_OK && path &&
                 checkpoint_load_weights(path, &t->m, NULL, t->err, sizeof t->err) != 0)
            rc = host->fail(t->ctx, TERN_EINVAL, "%s", t->err);
        if (rc == TERN_OK && !path)
            llama_init_random(&t->m, seed);
    }
    /* weights that are NaN fail here, at the start (tern check too), not
     * after the first evaluation */
    if (rc == TERN_OK && path && llama_check_finite(&t->m, t->err, sizeof t->err) != 0)
        rc = host->setting_error(t->ctx, "path", "%s: %s", path, t->err);
    if (rc == TERN_OK)
        rc = open_chat_template(t, path, gguf_config);
    free(gguf_config);
    return rc;
}

int front_create(const tf_engine *engine, tern_ctx *ctx, void **state)
{
    transformer *t = calloc(1, sizeof *t);
    if (!t)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    t->ctx = ctx;
    t->engine = engine;
    int64_t bt = 2048;
    int rc = host->get_int(ctx, "batch_tokens", &bt);
    t->batch_tokens = bt > 0 ? (size_t)bt : 2048;
    if (rc == TERN_OK || rc == TERN_ENOTFOUND) {
        int64_t dr = 0;
        rc = host->get_int(ctx, "decode_rows", &dr);
        t->decode_rows = dr > 0 && dr <= INT32_MAX ? (int)dr : 0;
    }
    const char *fit = "resize";
    t->train_tower = 1;
    if (rc == TERN_OK || rc == TERN_ENOTFOUND)
        rc = host->get_string(ctx, "image_fit", &fit);
    t->image_exact = rc == TERN_OK && strcmp(fit, "exact") == 0;
    if (rc == TERN_OK || rc == TERN_ENOTFOUND)
        rc = host->get_bool(ctx, "train_vision_tower", &t->train_tower);
    const char *given = NULL;
    int has_path = host->get_string(ctx, "path", &given) == TERN_OK;
    char *joined = NULL;
    if (rc == TERN_ENOTFOUND)
        rc = TERN_OK;
    if (rc == TERN_OK && has_path && init_given(ctx))
        rc = host->setting_error(ctx, "init", "give either path (load a model) or init (fresh "
                                 "weights), not both");
    /* a relative path is the config file's, as its data paths are */
    if (rc == TERN_OK && has_path && given[0] != '/' && TERN_HAS(host, config_dir) &&
        !(joined = tern_path_join(host->config_dir(ctx), given)))
        rc = host->fail(ctx, TERN_ENOMEM, "out of memory");
    if (rc == TERN_OK)
        rc = make_model(t, has_path ? (joined ? joined : given) : NULL);
    free(joined);
    if (rc == TERN_OK && t->m.cfg.vision.layers > 0 && !engine->input_grads)
        rc = host->fail(ctx, TERN_EUNSUPPORTED, "this is a vision-language model (LLaVA), and "
                        "the %s engine does not run vision towers yet: use model plugin "
                        "\"transformer\" (the CPU)", engine->name);
    if (rc == TERN_OK)
        rc = engine->open(host, ctx, &t->m, &t->eng);
    if (rc != TERN_OK) {
        front_destroy(t);
        return rc;
    }
    *state = t;
    return TERN_OK;
}

void front_destroy(void *state)
{
    transformer *t = state;
    if (!t)
        return;
    if (t->eng)
        t->engine->close(t->eng);
    llama_model_free(&t->m);
    tokenizer_free(t->tok);
    chat_template_free(t->chat);
    adamw_free(&t->opt);
    free(t->tensors);
    free(t->grad_tensors);
    free(t->dev_tensors);
    free(t->dev_grads);
    free(t->tensor_names);
    packed_free(&t->pk);
    vlm_images_free(&t->imgs);
    free(t);
}

void front_free_buffer(void *state, void *p)
{
    (void)state;
    free(p);
}

/* ---- text ------------------------------------------------------------------ */

/* Whether t is a LLaVA. */
static int has_vision(const transformer *t) { return t->m.cfg.vision.layers > 0; }

/* Append n ids to *out (*len of *cap). 0, or -1 out of memory. */
static int append_ids(int32_t **out, size_t *len, size_t *cap, const int32_t *ids, size_t n,
                      int32_t fill)
{
    if (*len + n > *cap) {
        size_t c = *cap * 2 > *len + n ? *cap * 2 : *len + n + 16;
        int32_t *p = realloc(*out, c * sizeof *p);
        if (!p)
            return -1;
        *out = p;
        *cap = c;
    }
    for (size_t i = 0; i < n; i++)
        (*out)[*len + i] = ids ? ids[i] : fill;
    *len += n;
    return 0;
}

/* Tokenize text; a LLaVA's image placeholders become Nv image tokens each
 * (the text between them tokenized apart, as an added token splits it in
 * Hugging Face's tokenizers). 0, or -1 out of memory. */
static int encode_text(const transformer *t, const char *text, size_t len, int add_bos,
                       int32_t **ids, size_t *n)
{
    if (!has_vision(t))
        return tokenizer_encode(t->tok, text, len, add_bos, ids, n);
    const size_t pl = sizeof IMAGE_PLACEHOLDER - 1;
    int32_t *out = NULL, *seg = NULL;
    size_t olen = 0, cap = 0, slen = 0;
    for (size_t at = 0, first = 1;; first = 0) {
        const char *hit = NULL;
        for (size_t i = at; i + pl <= len && !hit; i++)
            if (memcmp(text + i, IMAGE_PLACEHOLDER, pl) == 0)
                hit = text + i;
        size_t end = hit ? (size_t)(hit - text) : len;
        if ((end > at || first) &&
            (tokenizer_encode(t->tok, text + at, end - at, add_bos && first, &seg, &slen) != 0 ||
             append_ids(&out, &olen, &cap, seg, slen, 0) != 0)) {
            free(seg), free(out);
            return -1;
        }
        free(seg);
        seg = NULL;
        if (!hit)
            break;
        if (append_ids(&out, &olen, &cap, NULL, (size_t)llama_image_rows(&t->m.cfg),
                       t->m.cfg.vision.image_token) != 0) {
            free(out);
            return -1;
        }
        at = end + pl;
    }
    *ids = out;
    *n = olen;
    return 0;
}

int front_tokenize(void *state, const char *text, size_t len, int add_bos, int32_t **ids,
                   size_t *n)
{
    transformer *t = state;
    if (encode_text(t, text, len, add_bos, ids, n) != 0)
        return host->fail(t->ctx, TERN_ENOMEM, "tokenize: out of memory");
    return TERN_OK;
}

/* A LLaVA's text: each run of image tokens (up to Nv) reads as the
 * placeholder, the rest as the tokenizer decodes it. */
static int decode_vision_text(const transformer *t, const int32_t *ids, size_t n, char **text,
                              size_t *len)
{
    const int32_t img = t->m.cfg.vision.image_token;
    const size_t nv = (size_t)llama_image_rows(&t->m.cfg), pl = sizeof IMAGE_PLACEHOLDER - 1;
    char *out = NULL;
    size_t olen = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        const char *add;
        size_t alen;
        char *piece = NULL;
        if (ids[i] == img) {
            while (j < n && ids[j] == img && j - i < nv)
                j++;
            add = IMAGE_PLACEHOLDER;
            alen = pl;
        } else {
            while (j < n && ids[j] != img)
                j++;
            if (tokenizer_decode(t->tok, ids + i, j - i, &piece, &alen) != 0) {
                free(out);
                return -1;
            }
            add = piece;
        }
        char *grown = realloc(out, olen + alen + 1);
        if (!grown) {
            free(piece), free(out);
            return -2;
        }
        out = grown;
        memcpy(out + olen, add, alen);
        olen += alen;
        out[olen] = '\0';
        free(piece);
        i = j;
    }
    if (!out && !(out = calloc(1, 1)))
        return -2;
    *text = out;
    *len = olen;
    return 0;
}

int front_detokenize(void *state, const int32_t *ids, size_t n, char **text, size_t *len)
{
    transformer *t = state;
    int rc = has_vision(t) ? decode_vision_text(t, ids, n, text, len)
                           : tokenizer_decode(t->tok, ids, n, text, len);
    if (rc == -2)
        return host->fail(t->ctx, TERN_ENOMEM, "detokenize: out of memory");
    if (rc != 0)
        return host->fail(t->ctx, TERN_EINVAL, "detokenize: a token id is outside 0..%d",
                          tokenizer_vocab_size(t->tok) - 1);
    return TERN_OK;
}

/* The conversation through the chat template, then tokenized as Hugging
 * Face's apply_chat_template(tokenize=True) does: a real template writes its
 * own BOS text, so none is added; "plain" and "none" get the tokenizer's BOS
 * as a bare prompt would. */
int front_encode_chat(void *state, const tern_chat_message *msgs, size_t n, int32_t **ids,
                      size_t *n_ids, char **text, size_t *text_len)
{
    transformer *t = state;
    const char *name = chat_template_name(t->chat);
    chat_message *cm = calloc(n ? n : 1, sizeof *cm);
    if (!cm)
        return host->fail(t->ctx, TERN_ENOMEM, "encode_chat: out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!TERN_HAS(&msgs[i], content)) {
            free(cm);
            return host->fail(t->ctx, TERN_EINVAL, "encode_chat: message %zu: "
                              "tern_chat_message is too small", i);
        }
        if (msgs[i].role && strcmp(msgs[i].role, "system") == 0 && strcmp(name, "none") == 0) {
            free(cm);
            return host->fail(t->ctx, TERN_EINVAL, "a system turn needs a chat template, and "
                              "this model's chat_template is \"none\": set model.chat_template "
                              "(\"chatml\", \"llama3\", \"plain\", ...) or give no system "
                              "turn");
        }
        cm[i] = (chat_message){.role = msgs[i].role, .content = msgs[i].content};
    }
    char *s = NULL;
    size_t len = 0;
    int rc = chat_template_apply(t->chat, cm, n, 1, &s, &len, t->err, sizeof t->err);
    free(cm);
    if (rc != 0)
        return host->fail(t->ctx, TERN_EINVAL, "chat template %s: %s", name, t->err);
    int add_bos = chat_template_end_of_turn(t->chat) == NULL;
    if (encode_text(t, s, len, add_bos, ids, n_ids) != 0) {
        free(s);
        return host->fail(t->ctx, TERN_ENOMEM, "encode_chat: out of memory");
    }
    if (text) {
        *text = s;
        *text_len = len;
    } else {
        free(s);
    }
    return TERN_OK;
}

int front_encode_chat_json(void *state, const char *messages, const char *tools, int gen,
                           int32_t **ids, size_t *n_ids, char **text, size_t *text_len)
{
    transformer *t = state;
    const char *name = chat_template_name(t->chat);
    char *s = NULL;
    size_t len = 0;
    if (chat_template_apply_json(t->chat, messages, tools, NULL, gen, &s, &len, t->err,
                                 sizeof t->err) != 0)
        return host->fail(t->ctx, chat_template_interprets(t->chat) ? TERN_EINVAL
                                                                    : TERN_EUNSUPPORTED,
                          "chat template %s: %s", name, t->err);
    int add_bos = chat_template_end_of_turn(t->chat) == NULL;
    if (encode_text(t, s, len, add_bos, ids, n_ids) != 0) {
        free(s);
        return host->fail(t->ctx, TERN_ENOMEM, "encode_chat_json: out of memory");
    }
    if (text) {
        *text = s;
        *text_len = len;
    } else {
        free(s);
    }
    return TERN_OK;
}

/* Push the host copy to the engine if tensors() handed it out since. */
static int sync_engine(transformer *t)
{
    if (!t->host_written || !t->engine->push)
        return TERN_OK;
    if (t->engine->push(t->eng, t->m.params, NULL, t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_ERR, "%s", t->err);
    t->host_written = 0;
    return TERN_OK;
}

/* ---- images (a LLaVA) ------------------------------------------------------- */

/* The images a request or sequence carries (ABI 1.12), *n of them. */
static const tern_image *images_of_req(const tern_gen_request *r, size_t *n)
{
    *n = TERN_HAS(r, n_images) && r->images ? r->n_images : 0;
    return *n ? r->images : NULL;
}

static const tern_image *images_of_seq(const tern_sequence *s, size_t *n)
{
    *n = TERN_HAS(s, n_images) && s->images ? s->n_images : 0;
    return *n ? s->images : NULL;
}

/* Whether two lists of images hold the same pixels. */
static int same_images(const tern_image *a, size_t na, const tern_image *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++) {
        if (a[i].width != b[i].width || a[i].height != b[i].height)
            return 0;
        if (a[i].rgb != b[i].rgb &&
            (!a[i].rgb || !b[i].rgb ||
             memcmp(a[i].rgb, b[i].rgb, (size_t)a[i].width * (size_t)a[i].height * 3) != 0))
            return 0;
    }
    return 1;
}

/* Check `what` (request or sequence i) whose first `len` tokens are its
 * prompt: a text model takes no images; a LLaVA's prompt has Nv image
 * tokens per image; an exact-size encoder takes no other size; then add
 * the images to t->imgs, *first the index of the first (-1: no images). */
static int add_images(transformer *t, const char *what, size_t i, const int32_t *tokens,
                      size_t len, const tern_image *img, size_t n_img, int *first)
{
    *first = n_img ? t->imgs.n : -1;
    if (!has_vision(t)) {
        if (n_img)
            return host->fail(t->ctx, TERN_EUNSUPPORTED, "%s %zu carries %zu image%s, and this "
                              "model reads text only (it has no vision tower)", what, i, n_img,
                              n_img == 1 ? "" : "s");
        return TERN_OK;
    }
    const llama_vision *v = &t->m.cfg.vision;
    const size_t nv = (size_t)llama_image_rows(&t->m.cfg);
    size_t marks = 0;
    for (size_t k = 0; k < len; k++)
        marks += tokens[k] == v->image_token;
    if (marks != n_img * nv)
        return host->fail(t->ctx, TERN_EINVAL, "%s %zu: its prompt has %zu image tokens (%zu "
                          "placeholder%s of %zu) but %zu image%s: each %s in a prompt needs "
                          "an image", what, i, marks, (marks + nv - 1) / nv,
                          (marks + nv - 1) / nv == 1 ? "" : "s", nv, n_img,
                          n_img == 1 ? "" : "s", IMAGE_PLACEHOLDER);
    for (size_t k = 0; k < n_img; k++) {
        if (!TERN_HAS(&img[k], source))
            return host->fail(t->ctx, TERN_EINVAL, "%s %zu: image %zu: tern_image is too "
                              "small", what, i, k);
        if (t->image_exact && (img[k].width != v->image || img[k].height != v->image))
            return host->fail(t->ctx, TERN_EINVAL, "%s %zu: image %s is %d x %d pixels and the "
                              "encoder takes %d x %d (image_fit = \"exact\"): resize the "
                              "image, or set image_fit = \"resize\"", what, i,
                              img[k].source ? img[k].source : "", img[k].width, img[k].height,
                              v->image, v->image);
        if (vlm_images_add(&t->imgs, &t->m.cfg, &img[k], t->err, sizeof t->err) < 0)
            return host->fail(t->ctx, TERN_EINVAL, "%s %zu: %s", what, i, t->err);
    }
    return TERN_OK;
}

/* rows[len] of a prompt whose first `len` tokens may hold image tokens:
 * the k-th image token's input is feature row k of the images from
 * t->imgs index `first` on (NULL for the other rows). */
static void image_rows(const transformer *t, const int32_t *tokens, size_t len, int first,
                       const float **rows)
{
    const size_t D = (size_t)t->m.cfg.hidden_size;
    const float *f = t->imgs.features + (size_t)first * (size_t)llama_image_rows(&t->m.cfg) * D;
    for (size_t k = 0, j = 0; k < len; k++)
        rows[k] = tokens[k] == t->m.cfg.vision.image_token ? f + (j++) * D : NULL;
}

int front_image_spec(void *state, tern_image_spec *out)
{
    transformer *t = state;
    if (!has_vision(t))
        return host->fail(t->ctx, TERN_EUNSUPPORTED, "this model reads text only (no vision "
                          "tower)");
    if (!TERN_HAS(out, tokens_per_image))
        return host->fail(t->ctx, TERN_EINVAL, "image_spec: tern_image_spec is too small");
    out->width = out->height = t->m.cfg.vision.image;
    out->fit = t->image_exact ? TERN_IMAGE_FIT_EXACT : TERN_IMAGE_FIT_RESIZE;
    out->max_images = 16;
    snprintf(out->placeholder, sizeof out->placeholder, "%s", IMAGE_PLACEHOLDER);
    out->tokens_per_image = llama_image_rows(&t->m.cfg);
    return TERN_OK;
}

/* ---- generate ---------------------------------------------------------------- */

int front_generate(void *state, const tern_gen_request *req, size_t n_req, tern_gen_output *outs)
{
    transformer *t = state;
    size_t total = 0;
    for (size_t i = 0; i < n_req; i++) {
        if (!TERN_HAS(&req[i], seed))
            return host->fail(t->ctx, TERN_EINVAL, "generate: request %zu is too small", i);
        if (TERN_HAS(&req[i], on_top) && req[i].top_logprobs > TERN_TOP_LOGPROBS_MAX)
            return host->fail(t->ctx, TERN_EINVAL, "generate: request %zu asks for %u "
                              "alternatives per token; at most %d", i, req[i].top_logprobs,
                              TERN_TOP_LOGPROBS_MAX);
        if (req[i].temperature < 0 || req[i].top_p <= 0 || req[i].top_p > 1 || req[i].top_k < 0)
            return host->fail(t->ctx, TERN_EINVAL, "generate: request %zu has temperature %g, "
                              "top_k %d, top_p %g; need temperature >= 0, top_k >= 0, 0 < top_p "
                              "<= 1", i, (double)req[i].temperature, req[i].top_k,
                              (double)req[i].top_p);
        total += req[i].n_samples;
    }
    gen_prompt *prompts = calloc(n_req, sizeof *prompts);
    gen_params *params = calloc(n_req, sizeof *params);
    gen_sample *samples = calloc(total ? total : 1, sizeof *samples);
    /* a LLaVA's prompts: each prompt's rows' inputs, image rows from the features */
    size_t prompt_rows = 0;
    for (size_t i = 0; has_vision(t) && i < n_req; i++)
        prompt_rows += req[i].prompt_len;
    const float **rows = prompt_rows ? calloc(prompt_rows, sizeof *rows) : NULL;
    if (!prompts || !params || !samples || (prompt_rows && !rows)) {
        free(prompts), free(params), free(samples), free(rows);
        return host->fail(t->ctx, TERN_ENOMEM, "generate: out of memory");
    }
    int rc = TERN_OK;
    int *first = calloc(n_req ? n_req : 1, sizeof *first);
    vlm_images_clear(&t->imgs);
    if (!first)
        rc = host->fail(t->ctx, TERN_ENOMEM, "generate: out of memory");
    for (size_t i = 0; rc == TERN_OK && i < n_req; i++) {
        size_t n_img;
        const tern_image *img = images_of_req(&req[i], &n_img);
        rc = add_images(t, "generate: request", i, req[i].prompt, req[i].prompt_len, img, n_img,
                        &first[i]);
    }
    if (rc == TERN_OK && t->imgs.n > 0 && (rc = sync_engine(t)) == TERN_OK &&
        vlm_images_encode(&t->imgs, &t->m, t->err, sizeof t->err) != 0)
        rc = host->fail(t->ctx, TERN_ENOMEM, "generate: %s", t->err);
    for (size_t i = 0, r = 0; rc == TERN_OK && i < n_req; i++) {
        params[i] = (gen_params){.temperature = req[i].temperature, .top_k = req[i].top_k,
                                 .top_p = req[i].top_p, .max_new = (int)req[i].max_new_tokens,
                                 .stop = req[i].stop, .n_stop = req[i].n_stop,
                                 .seed = req[i].seed};
        prompts[i] = (gen_prompt){.tokens = req[i].prompt, .len = req[i].prompt_len,
                                  .n_samples = (int)req[i].n_samples, .params = &params[i]};
        if (TERN_HAS(&req[i], on_token)) { /* ABI 1.15; older callers have none */
            prompts[i].on_token = req[i].on_token;
            prompts[i].on_token_user = req[i].on_token_user;
        }
        if (TERN_HAS(&req[i], on_top) && req[i].on_top) { /* ABI 1.16 */
            params[i].top_n = (int)req[i].top_logprobs;
            prompts[i].on_top = req[i].on_top;
        }
        if (rows && first[i] >= 0) {
            image_rows(t, req[i].prompt, req[i].prompt_len, first[i], rows + r);
            prompts[i].row_input = rows + r;
        }
        r += rows ? req[i].prompt_len : 0;
    }
    if (rc == TERN_OK)
        rc = sync_engine(t);
    if (rc != TERN_OK) {
    } else if (t->engine->generate(t->eng, prompts, (int)n_req, t->decode_rows, samples, t->err,
                                   sizeof t->err) != 0) {
        rc = host->fail(t->ctx, TERN_EINVAL, "generate: %s", t->err);
    } else {
        for (size_t s = 0; s < total; s++) {
            outs[s].tokens = samples[s].tokens; /* handed over: free_buffer frees them */
            outs[s].logprobs = samples[s].logprobs;
            outs[s].len = samples[s].len;
            outs[s].finish = (uint32_t)samples[s].finish;
        }
    }
    free(prompts), free(params), free(samples), free(rows), free(first);
    return rc;
}

/* ---- score and backward ------------------------------------------------------- */

/* Grow p to hold `rows` rows and `seqs` sequences. */
static int packed_reserve(packed *p, size_t rows, size_t seqs)
{
    if (rows <= p->cap_rows && seqs <= p->cap_seqs)
        return 0;
    packed_free(p);
    p->start = malloc((seqs + 1) * sizeof *p->start);
    p->tokens = malloc(rows * sizeof *p->tokens);
    p->pos = malloc(rows * sizeof *p->pos);
    p->target = malloc(rows * sizeof *p->target);
    p->row0 = malloc(seqs * sizeof *p->row0);
    p->shared = malloc(seqs * sizeof *p->shared);
    p->seg0 = malloc(rows * sizeof *p->seg0);
    p->scale = malloc(rows * sizeof *p->scale);
    p->logp = malloc(rows * sizeof *p->logp);
    p->ent = malloc(rows * sizeof *p->ent);
    p->dlogp = malloc(rows * sizeof *p->dlogp);
    p->dent = malloc(rows * sizeof *p->dent);
    p->row_input = malloc(rows * sizeof *p->row_input);
    p->img_row = malloc(rows * sizeof *p->img_row);
    if (!p->start || !p->tokens || !p->pos || !p->target || !p->row0 || !p->shared || !p->seg0 ||
        !p->scale || !p->logp || !p->ent || !p->dlogp || !p->dent || !p->row_input ||
        !p->img_row) {
        packed_free(p);
        return -1;
    }
    p->cap_rows = rows;
    p->cap_seqs = seqs;
    return 0;
}

static float seq_temperature(const tern_sequence *s)
{
    return TERN_HAS(s, temperature) && s->temperature > 0 ? s->temperature : 1.0f;
}

/* A packed sequence of shared prompt and branches stays within this many
 * rows: its attention keeps rows x rows probabilities per head and layer. */
#define BRANCH_ROWS 512

/* Whether q becomes another branch of the packed sequence led by `lead`,
 * which has `rows` rows so far: the same prompt (its images too), the same
 * temperature, and room left. */
static int joins(const transformer *t, const tern_sequence *lead, const tern_sequence *q,
                 size_t rows)
{
    size_t na, nb;
    const tern_image *a = images_of_seq(lead, &na), *b = images_of_seq(q, &nb);
    return t->engine->branches && q->start == lead->start &&
           seq_temperature(q) == seq_temperature(lead) &&
           rows + (q->len - q->start + 1) <= BRANCH_ROWS &&
           memcmp(q->tokens, lead->tokens, q->start * sizeof *q->tokens) == 0 &&
           same_images(a, na, b, nb);
}

/* Whether s is a sequence pack() takes. */
static int seq_ok(const tern_sequence *s)
{
    return TERN_HAS(s, start) && s->tokens && s->len >= 1 && s->start >= 1 && s->start <= s->len;
}

static int pack(transformer *t, const tern_sequence *seqs, size_t n)
{
    packed *p = &t->pk;
    size_t rows = 0;
    for (size_t i = 0; i < n; i++) {
        if (!seq_ok(&seqs[i]))
            return host->fail(t->ctx, TERN_EINVAL, "sequence %zu: needs tokens, len >= 1 and "
                              "1 <= start <= len", i);
        rows += seqs[i].len; /* at most: shared prompts take fewer */
    }
    if (n == 0 || packed_reserve(p, rows, n) != 0)
        return host->fail(t->ctx, n ? TERN_ENOMEM : TERN_EINVAL,
                          n ? "out of memory for %zu tokens" : "no sequences (%zu tokens)", rows);
    const int br = t->engine->branches, vis = has_vision(t);
    const int32_t img_tok = vis ? t->m.cfg.vision.image_token : -1;
    const int32_t nv = llama_image_rows(&t->m.cfg);
    size_t r = 0, ns = 0, lead = 0;
    int first = 0; /* the lead's first image in t->imgs */
    vlm_images_clear(&t->imgs);
    for (size_t i = 0; i < n; i++) {
        const tern_sequence *s = &seqs[i];
        const float scale = 1.0f / seq_temperature(s);
        int32_t j = 0; /* image tokens of s's prompt so far */
        if (i == 0 || !joins(t, &seqs[lead], s, r - (size_t)p->start[ns - 1])) {
            /* a new packed sequence; with branches, its prefix first */
            lead = i;
            size_t n_img;
            const tern_image *img = images_of_seq(s, &n_img);
            int rc = add_images(t, "sequence", i, s->tokens, s->start, img, n_img, &first);
            if (rc != TERN_OK)
                return rc;
            p->start[ns] = (int32_t)r;
            p->shared[ns++] = br ? (int32_t)(s->start - 1) : 0;
            for (size_t k = 0; br && k + 1 < s->start; k++, r++) {
                p->tokens[r] = s->tokens[k];
                p->pos[r] = (int32_t)k;
                p->target[r] = -1; /* the prompt's rows predict nothing scored */
                p->scale[r] = scale;
                p->seg0[r] = 0;
                p->img_row[r] = s->tokens[k] == img_tok ? first * nv + j++ : -1;
            }
        }
        const size_t k0 = br ? s->start - 1 : 0;
        const int32_t b0 = (int32_t)(r - (size_t)p->start[ns - 1]); /* the branch's first row */
        p->row0[i] = (int32_t)(r - k0);
        j = 0;
        for (size_t k = 0; vis && k < k0; k++)
            j += s->tokens[k] == img_tok;
        for (size_t k = k0; k < s->len; k++, r++) {
            p->tokens[r] = s->tokens[k];
            p->pos[r] = (int32_t)k;
            p->target[r] = k + 1 < s->len && k + 1 >= s->start ? s->tokens[k + 1] : -1;
            p->scale[r] = scale;
            p->seg0[r] = b0;
            /* an image token the model wrote in a response is a token like any other */
            p->img_row[r] = s->tokens[k] == img_tok && k < s->start ? first * nv + j++ : -1;
        }
    }
    p->start[ns] = (int32_t)r;
    memset(p->dlogp, 0, r * sizeof *p->dlogp);
    memset(p->dent, 0, r * sizeof *p->dent);
    p->b = (llama_batch){.n_seqs = (int)ns, .n_rows = (int)r, .seq_start = p->start,
                         .tokens = p->tokens, .pos = p->pos, .target = p->target,
                         .scale = p->scale, .shared = br ? p->shared : NULL,
                         .seg0 = br ? p->seg0 : NULL, .head = LLAMA_HEAD_TARGETS};
    return TERN_OK;
}

/* After pack and sync_engine: the images' features, and the batch's image
 * rows pointing at them. */
static int encode_images(transformer *t)
{
    packed *p = &t->pk;
    if (t->imgs.n == 0)
        return TERN_OK;
    if (vlm_images_encode(&t->imgs, &t->m, t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_ENOMEM, "%s", t->err);
    const size_t D = (size_t)t->m.cfg.hidden_size;
    for (int r = 0; r < p->b.n_rows; r++)
        p->row_input[r] = p->img_row[r] >= 0 ? t->imgs.features + (size_t)p->img_row[r] * D
                                             : NULL;
    p->b.row_input = p->row_input;
    return TERN_OK;
}

/* The end of the chunk of seqs[from..n) that starts at from: whole
 * sequences of at most t->batch_tokens rows in all as pack() lays them out
 * (a shared prompt counted once), and at least one sequence. */
static size_t chunk_end(const transformer *t, const tern_sequence *seqs, size_t n, size_t from)
{
    size_t rows = seqs[from].len, end = from + 1, lead = from, lead_rows = rows;
    while (end < n) {
        const tern_sequence *q = &seqs[end];
        int j = seq_ok(q) && seq_ok(&seqs[lead]) && joins(t, &seqs[lead], q, lead_rows);
        size_t add = j ? q->len - q->start + 1 : q->len;
        if (rows + add > t->batch_tokens)
            break;
        rows += add;
        if (j) {
            lead_rows += add;
        } else {
            lead = end;
            lead_rows = add;
        }
        end++;
    }
    return end;
}

static int score_chunk(transformer *t, const tern_sequence *seqs, size_t n, float **logprobs,
                       float **entropies);
static int backward_chunk(transformer *t, const tern_sequence *seqs, size_t n,
                          const float *const *dlogp, const float *const *dentropy);

/* score and backward go over chunks of batch_tokens tokens: the activations a
 * backward pass keeps grow with the tokens (about 1.3 MB a token for a 135M
 * model), so a whole RL batch at once would not fit in memory; the gradients
 * accumulate over the chunks, so the result is the same. */
int front_score(void *state, const tern_sequence *seqs, size_t n, float **logprobs,
                float **entropies)
{
    transformer *t = state;
    if (n == 0)
        return score_chunk(t, seqs, n, logprobs, entropies);
    for (size_t a = 0, b; a < n; a = b) {
        b = chunk_end(t, seqs, n, a);
        int rc = score_chunk(t, seqs + a, b - a, logprobs + a, entropies ? entropies + a : NULL);
        if (rc != TERN_OK)
            return rc;
    }
    return TERN_OK;
}

int front_backward(void *state, const tern_sequence *seqs, size_t n, const float *const *dlogp,
                   const float *const *dentropy)
{
    transformer *t = state;
    if (n == 0)
        return backward_chunk(t, seqs, n, dlogp, dentropy);
    for (size_t a = 0, b; a < n; a = b) {
        b = chunk_end(t, seqs, n, a);
        int rc = backward_chunk(t, seqs + a, b - a, dlogp + a, dentropy ? dentropy + a : NULL);
        if (rc != TERN_OK)
            return rc;
    }
    return TERN_OK;
}

static int score_chunk(transformer *t, const tern_sequence *seqs, size_t n, float **logprobs,
                       float **entropies)
{
    int rc = pack(t, seqs, n);
    if (rc != TERN_OK)
        return rc;
    const packed *p = &t->pk;
    if ((rc = sync_engine(t)) != TERN_OK || (rc = encode_images(t)) != TERN_OK)
        return rc;
    if (t->engine->forward(t->eng, &p->b, p->logp, p->ent, t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_EINVAL, "score: %s", t->err);
    for (size_t i = 0; i < n; i++) {
        /* position k >= start is predicted by the row of token k - 1; the caller's arrays */
        for (size_t k = 0; k < seqs[i].len; k++) {
            int pred = k >= seqs[i].start;
            logprobs[i][k] = pred ? p->logp[p->row0[i] + (int32_t)k - 1] : 0.0f;
            if (entropies && entropies[i])
                entropies[i][k] = pred ? p->ent[p->row0[i] + (int32_t)k - 1] : 0.0f;
        }
    }
    return TERN_OK;
}

static int backward_chunk(transformer *t, const tern_sequence *seqs, size_t n,
                          const float *const *dlogp, const float *const *dentropy)
{
    int rc = pack(t, seqs, n);
    if (rc != TERN_OK)
        return rc;
    packed *p = &t->pk;
    for (size_t i = 0; i < n; i++)
        for (size_t k = seqs[i].start; k < seqs[i].len; k++) {
            p->dlogp[p->row0[i] + (int32_t)k - 1] = dlogp[i][k];
            if (dentropy && dentropy[i])
                p->dent[p->row0[i] + (int32_t)k - 1] = dentropy[i][k];
        }
    if ((rc = sync_engine(t)) != TERN_OK || (rc = encode_images(t)) != TERN_OK)
        return rc;
    if (t->engine->forward(t->eng, &p->b, p->logp, p->ent, t->err, sizeof t->err) != 0 ||
        t->engine->backward(t->eng, &p->b, p->dlogp, p->dent, t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_EINVAL, "backward: %s", t->err);
    /* the image rows' gradient on through the projector (and the tower) */
    if (t->imgs.n > 0 &&
        vlm_images_backward(&t->imgs, &t->m, p->b.n_rows, p->b.row_input,
                            t->engine->input_grads(t->eng), t->train_tower, t->err,
                            sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_ENOMEM, "backward: %s", t->err);
    /* ABI 1.11: the forward's log-probs and entropies, as score() gives them */
    for (size_t i = 0; i < n; i++) {
        if (!TERN_HAS(&seqs[i], entropy_out))
            continue;
        for (size_t k = seqs[i].start; k < seqs[i].len; k++) {
            if (seqs[i].logp_out)
                seqs[i].logp_out[k] = p->logp[p->row0[i] + (int32_t)k - 1];
            if (seqs[i].entropy_out)
                seqs[i].entropy_out[k] = p->ent[p->row0[i] + (int32_t)k - 1];
        }
    }
    return TERN_OK;
}

/* ---- optimizer, tensors, checkpoints ----------------------------------------- */

static int ensure_optimizer(transformer *t)
{
    if (t->opt.m)
        return TERN_OK;
    if (adamw_init(&t->opt, t->m.n_params) != 0)
        return host->fail(t->ctx, TERN_ENOMEM, "out of memory for the AdamW state");
    return TERN_OK;
}

int front_step(void *state, tern_optim_step *s)
{
    transformer *t = state;
    if (!TERN_HAS(s, grad_norm))
        return host->fail(t->ctx, TERN_EINVAL, "step: tern_optim_step is too small");
    int rc = t->engine->host_optimizer ? ensure_optimizer(t) : TERN_OK;
    if (rc != TERN_OK || (rc = sync_engine(t)) != TERN_OK)
        return rc;
    adamw_hparams h = {.lr = s->lr, .beta1 = s->beta1, .beta2 = s->beta2, .eps = s->eps,
                       .weight_decay = s->weight_decay, .grad_clip = s->grad_clip,
                       .frozen_from = has_vision(t) && !t->train_tower
                                          ? llama_tower_offset(&t->m.cfg) : 0};
    if (t->engine->step(t->eng, t->engine->host_optimizer ? &t->opt : NULL, &h, &s->grad_norm,
                        t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_ERR, "step: %s", t->err);
    return TERN_OK;
}

/* A table of the model's tensors over `base` (the params or the grads, which
 * share one layout): *table is allocated here, the names once for both. */
static int tensor_table(transformer *t, float *base, tern_tensor **table)
{
    size_t count = llama_tensor_count(&t->m.cfg);
    if (!t->tensor_names && !(t->tensor_names = calloc(count, sizeof *t->tensor_names)))
        return host->fail(t->ctx, TERN_ENOMEM, "out of memory");
    tern_tensor *x = calloc(count, sizeof *x);
    if (!x)
        return host->fail(t->ctx, TERN_ENOMEM, "out of memory");
    for (size_t i = 0; i < count; i++) {
        llama_tensor_info info;
        llama_tensor_describe(&t->m.cfg, i, &info);
        memcpy(t->tensor_names[i], info.name, sizeof t->tensor_names[i]);
        x[i].size = sizeof x[i];
        x[i].name = t->tensor_names[i];
        x[i].dtype = TERN_DTYPE_F32;
        x[i].ndim = (uint32_t)info.ndim;
        for (int d = 0; d < 4; d++)
            x[i].shape[d] = d < info.ndim ? info.shape[d] : 0;
        x[i].data = base + info.offset;
        x[i].bytes = info.numel * sizeof(float);
    }
    *table = x;
    return TERN_OK;
}

int front_tensors(void *state, const tern_tensor **out, size_t *n)
{
    transformer *t = state;
    int rc = t->tensors ? TERN_OK : tensor_table(t, t->m.params, &t->tensors);
    if (rc != TERN_OK)
        return rc;
    /* the host copy becomes the caller's to read and write */
    if (!t->host_written && t->engine->pull &&
        t->engine->pull(t->eng, t->m.params, NULL, t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_ERR, "tensors: %s", t->err);
    t->host_written = 1;
    *out = t->tensors;
    *n = llama_tensor_count(&t->m.cfg);
    return TERN_OK;
}

int front_device_tensors(void *state, const tern_tensor **out, size_t *n, int32_t *device)
{
    transformer *t = state;
    if (!t->engine->device_params)
        return host->fail(t->ctx, TERN_EUNSUPPORTED, "device_tensors: the %s engine computes "
                          "in host memory", t->engine->name);
    /* a host copy handed out and written goes to the device first */
    int rc = sync_engine(t);
    if (rc != TERN_OK)
        return rc;
    float *base = t->engine->device_params(t->eng, device, t->err, sizeof t->err);
    if (!base)
        return host->fail(t->ctx, TERN_ERR, "device_tensors: %s", t->err);
    /* the table's pointers are offsets from base, which stays put */
    if (!t->dev_tensors && (rc = tensor_table(t, base, &t->dev_tensors)) != TERN_OK)
        return rc;
    *out = t->dev_tensors;
    *n = llama_tensor_count(&t->m.cfg);
    return TERN_OK;
}

int front_device_tensors_written(void *state)
{
    transformer *t = state;
    if (!t->engine->device_written)
        return host->fail(t->ctx, TERN_EUNSUPPORTED, "device_tensors_written: the %s engine "
                          "computes in host memory", t->engine->name);
    if (t->engine->device_written(t->eng, t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_ERR, "device_tensors_written: %s", t->err);
    t->host_written = 0; /* tensors() pulls the new weights before handing them out */
    return TERN_OK;
}

int front_device_gradients(void *state, const tern_tensor **out, size_t *n, int32_t *device)
{
    transformer *t = state;
    if (!t->engine->device_grads)
        return host->fail(t->ctx, TERN_EUNSUPPORTED, "device_gradients: the %s engine computes "
                          "in host memory", t->engine->name);
    float *base = t->engine->device_grads(t->eng, device, t->err, sizeof t->err);
    if (!base)
        return host->fail(t->ctx, TERN_ERR, "device_gradients: %s", t->err);
    int rc = t->dev_grads ? TERN_OK : tensor_table(t, base, &t->dev_grads);
    if (rc != TERN_OK)
        return rc;
    *out = t->dev_grads;
    *n = llama_tensor_count(&t->m.cfg);
    return TERN_OK;
}

int front_gradients(void *state, const tern_tensor **out, size_t *n)
{
    transformer *t = state;
    float *g = t->engine->grads ? t->engine->grads(t->eng) : NULL;
    if (!g)
        return host->fail(t->ctx, TERN_EUNSUPPORTED, "gradients: the %s engine keeps its "
                          "gradients to itself", t->engine->name);
    int rc = t->grad_tensors ? TERN_OK : tensor_table(t, g, &t->grad_tensors);
    if (rc != TERN_OK)
        return rc;
    *out = t->grad_tensors;
    *n = llama_tensor_count(&t->m.cfg);
    return TERN_OK;
}

int front_save(void *state, const char *dir, int with_optimizer)
{
    transformer *t = state;
    if (with_optimizer && ensure_optimizer(t) != TERN_OK)
        return TERN_ENOMEM;
    if (t->engine->pull && t->engine->pull(t->eng, t->host_written ? NULL : t->m.params,
                                           with_optimizer ? &t->opt : NULL, t->err,
                                           sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_ERR, "save: %s", t->err);
    if (checkpoint_save(dir, &t->m, t->tok, with_optimizer ? &t->opt : NULL, t->err,
                        sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_EIO, "save: %s", t->err);
    return TERN_OK;
}

int front_load(void *state, const char *dir, int with_optimizer)
{
    transformer *t = state;
    char cfgpath[4200];
    llama_config c;
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", dir);
    if (hf_config_read(cfgpath, &c, t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_EINVAL, "load: %s", t->err);
    if (memcmp(&c, &t->m.cfg, sizeof c) != 0)
        return host->fail(t->ctx, TERN_EINVAL, "load: %s describes another model than this "
                          "instance (sizes or special tokens differ); start a new instance with "
                          "path = \"%s\" instead", cfgpath, dir);
    if (with_optimizer && ensure_optimizer(t) != TERN_OK)
        return TERN_ENOMEM;
    if (checkpoint_load_weights(dir, &t->m, with_optimizer ? &t->opt : NULL, t->err,
                                sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_EINVAL, "load: %s", t->err);
    if (llama_check_finite(&t->m, t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_EINVAL, "load: %s: %s", dir, t->err);
    if (t->engine->push && t->engine->push(t->eng, t->m.params, with_optimizer ? &t->opt : NULL,
                                           t->err, sizeof t->err) != 0)
        return host->fail(t->ctx, TERN_ERR, "load: %s", t->err);
    t->host_written = 0;
    return TERN_OK;
}

/* ---- descriptor ------------------------------------------------------------ */

int front_special_tokens(void *state, tern_special_tokens *out)
{
    transformer *t = state;
    if (!TERN_HAS(out, pad))
        return host->fail(t->ctx, TERN_EINVAL, "special_tokens: tern_special_tokens is too small");
    out->bos = tokenizer_bos(t->tok);
    /* a chat model's response ends with its turn */
    out->eos = t->end_of_turn >= 0 ? t->end_of_turn : tokenizer_eos(t->tok);
    out->pad = tokenizer_pad(t->tok);
    if (TERN_HAS(out, context_len))
        out->context_len = t->m.cfg.max_positions;
    return TERN_OK;
}

const tern_setting_spec front_init_keys[] = {
    TERN_SETTING(.name = "preset", .type = TERN_SETTING_STRING,
                 .choices = "tiny|bench|vlm-tiny|vlm-bench",
                 .doc = "starting sizes: tiny (~1M parameters) or bench (~10M); vlm-tiny and "
                        "vlm-bench: the same with a vision tower (LLaVA); default tiny"),
    TERN_SETTING(.name = "seed", .type = TERN_SETTING_INT, .min = 0, .max = 9007199254740992.0,
                 .doc = "seed of the fresh weights; default: derived from run.seed"),
    TERN_SETTING(.name = "hidden_size", .type = TERN_SETTING_INT, .min = 2, .max = 65536),
    TERN_SETTING(.name = "intermediate_size", .type = TERN_SETTING_INT, .min = 1, .max = 262144),
    TERN_SETTING(.name = "num_hidden_layers", .type = TERN_SETTING_INT, .min = 1, .max = 1024,
                 .aka = "layers|n_layers"),
    TERN_SETTING(.name = "num_attention_heads", .type = TERN_SETTING_INT, .min = 1, .max = 4096,
                 .aka = "heads|n_heads"),
    TERN_SETTING(.name = "num_key_value_heads", .type = TERN_SETTING_INT, .min = 1, .max = 4096,
                 .aka = "kv_heads|n_kv_heads"),
    TERN_SETTING(.name = "max_position_embeddings", .type = TERN_SETTING_INT, .min = 2,
                 .max = 1048576, .aka = "context|max_positions|context_length"),
    TERN_SETTING(.name = "tie_word_embeddings", .type = TERN_SETTING_BOOL,
                 .aka = "tied|tie_embeddings"),
    TERN_SETTING(.name = "image_size", .type = TERN_SETTING_INT, .min = 1, .max = 4096,
                 .doc = "vlm presets: the encoder's image side in pixels (a multiple of "
                        "patch_size)"),
    TERN_SETTING(.name = "patch_size", .type = TERN_SETTING_INT, .min = 1, .max = 4096,
                 .doc = "vlm presets: the side of the encoder's square patches"),
    TERN_SETTING(.name = "vision_hidden_size", .type = TERN_SETTING_INT, .min = 2,
                 .max = 65536, .doc = "vlm presets: the encoder's width (its MLP 4x, vlm-tiny's 2x)"),
    TERN_SETTING(.name = "vision_layers", .type = TERN_SETTING_INT, .min = 1, .max = 1024,
                 .doc = "vlm presets: the encoder's layers"),
    TERN_SETTINGS_END,
};
