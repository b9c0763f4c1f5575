/* tokenizer.c: the tokenizer interface, the byte tokenizer, and Hugging Face
 * BPE tokenizers (bpe.c) behind it (see tokenizer.h). Each kind of tokenizer
 * is a table of functions and a branch of tokenizer_load. */
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "tern/support/atomic_file.h"
#include "tern/support/regular_file.h"
#include "tokenizer/bpe.h"

typedef struct tokenizer_ops {
    const char *kind; /* the "tern_tokenizer" value in tokenizer.json */
    /* the whole of tokenizer_encode: *ids malloc'd; 0, or -1 with errno ENOMEM */
    int (*encode)(const tokenizer *t, const char *text, size_t len, int add_bos, int32_t **ids,
                  size_t *n);
    /* append the bytes of one non-special id to out (room for max_bytes) */
    size_t (*decode_one)(const tokenizer *t, int32_t id, char *out);
    size_t (*max_bytes)(const tokenizer *t); /* the most bytes one id decodes to */
    int (*is_special)(const tokenizer *t, int32_t id); /* dropped by decoding */
    int32_t (*token_id)(const tokenizer *t, const char *token);
    int (*save)(const tokenizer *t, const char *dir, char *err, size_t errn);
    void (*free_impl)(tokenizer *t);
} tokenizer_ops;

struct tokenizer {
    const tokenizer_ops *ops;
    int vocab_size, bos, eos, pad;
    void *impl; /* per kind: none for bytes, a bpe for "bpe" */
};

/* ---- the byte tokenizer ------------------------------------------------- */

enum { BYTES_BOS = 256, BYTES_EOS = 257, BYTES_PAD = 258, BYTES_VOCAB = 259 };

static int bytes_encode(const tokenizer *t, const char *text, size_t len, int add_bos,
                        int32_t **ids, size_t *n)
{
    int32_t *out = malloc((len + 1) * sizeof *out);
    if (!out) {
        errno = ENOMEM;
        return -1;
    }
    size_t k = 0;
    if (add_bos)
        out[k++] = t->bos;
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; i < len; i++)
        out[k++] = p[i];
    *ids = out;
    *n = k;
    return 0;
}

static size_t bytes_decode_one(const tokenizer *t, int32_t id, char *out)
{
    (void)t;
    *out = (char)(unsigned char)id;
    return 1;
}

static size_t bytes_max_bytes(const tokenizer *t)
{
    (void)t;
    return 1;
}

static int bytes_is_special(const tokenizer *t, int32_t id)
{
    return id == t->bos || id == t->eos || id == t->pad;
}

static int32_t bytes_token_id(const tokenizer *t, const char *token)
{
    (void)t;
    (void)token;
    return -1; /* no token strings */
}

static int bytes_save(const tokenizer *t, const char *dir, char *err, size_t errn);

static void bytes_free_impl(tokenizer *t)
{
    (void)t;
}

static const tokenizer_ops bytes_ops = {
    .kind = "bytes",
    .encode = bytes_encode,
    .decode_one = bytes_decode_one,
    .max_bytes = bytes_max_bytes,
    .is_special = bytes_is_special,
    .token_id = bytes_token_id,
    .save = bytes_save,
    .free_impl = bytes_free_impl,
};

/* ---- Hugging Face BPE (bpe.c) -------------------------------------------- */

static int bpe_ops_encode(const tokenizer *t, const char *text, size_t len, int add_bos,
                          int32_t **ids, size_t *n)
{
    return bpe_encode(t->impl, text, len, add_bos, ids, n);
}

static size_t bpe_ops_decode_one(const tokenizer *t, int32_t id, char *out)
{
    return bpe_decode_one(t->impl, id, out);
}

static size_t bpe_ops_max_bytes(const tokenizer *t) { return bpe_max_bytes(t->impl); }

static int bpe_ops_is_special(const tokenizer *t, int32_t id) { return bpe_is_special(t->impl, id); }

static int32_t bpe_ops_token_id(const tokenizer *t, const char *token)
{
    return bpe_token_id(t->impl, token);
}

static int bpe_ops_save(const tokenizer *t, const char *dir, char *err, size_t errn)
{
    return bpe_save(t->impl, dir, err, errn);
}

static void bpe_ops_free_impl(tokenizer *t) { bpe_free(t->impl); }

static const tokenizer_ops bpe_ops = {
    .kind = "bpe",
    .encode = bpe_ops_encode,
    .decode_one = bpe_ops_decode_one,
    .max_bytes = bpe_ops_max_bytes,
    .is_special = bpe_ops_is_special,
    .token_id = bpe_ops_token_id,
    .save = bpe_ops_save,
    .free_impl = bpe_ops_free_impl,
};

int tokenizer_new_bytes(tokenizer **out)
{
    *out = NULL;
    tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    *t = (tokenizer){&bytes_ops, BYTES_VOCAB, BYTES_BOS, BYTES_EOS, BYTES_PAD, NULL};
    *out = t;
    return 0;
}

/* ---- the interface ------------------------------------------------------ */

int tokenizer_vocab_size(const tokenizer *t) { return t->vocab_size; }
int tokenizer_bos(const tokenizer *t) { return t->bos; }
int tokenizer_eos(const tokenizer *t) { return t->eos; }
int tokenizer_pad(const tokenizer *t) { return t->pad; }

int32_t tokenizer_token_id(const tokenizer *t, const char *token)
{
    return t->ops->token_id(t, token);
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int add_bos, int32_t **ids,
                     size_t *n)
{
    return t->ops->encode(t, text, len, add_bos, ids, n);
}

int tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len)
{
    /* check every id first: an error returns nothing, not a partial text */
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->vocab_size) {
            errno = ERANGE;
            return -1;
        }
    char *out = malloc(n * t->ops->max_bytes(t) + 1);
    if (!out) {
        errno = ENOMEM;
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!t->ops->is_special(t, ids[i]))
            k += t->ops->decode_one(t, ids[i], out + k);
    out[k] = '\0';
    *text = out;
    *len = k;
    return 0;
}

void tokenizer_free(tokenizer *t)
{
    if (!t)
        return;
    t->ops->free_impl(t);
    free(t);
}

/* ---- tokenizer.json ----------------------------------------------------- */

int tokenizer_save(const tokenizer *t, const char *dir, char *err, size_t errn)
{
    return t->ops->save(t, dir, err, errn);
}

static int bytes_save(const tokenizer *t, const char *dir, char *err, size_t errn)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/tokenizer.json", dir) >= (int)sizeof path)
        return tf_fail(err, errn, "%.200s...: directory path too long", dir);
    json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}", "tern_tokenizer", t->ops->kind,
                          "version", 1, "bos_token_id", t->bos, "eos_token_id", t->eos,
                          "pad_token_id", t->pad, "vocab_size", t->vocab_size);
    if (!o) {
        json_decref(o);
        return tf_fail(err, errn, "%s: out of memory", path);
    }
    char *text = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    if (!text)
        return tf_fail(err, errn, "%s: out of memory", path);
    size_t len = strlen(text);
    char *buf = realloc(text, len + 2);
    if (!buf) {
        free(text);
        return tf_fail(err, errn, "%s: out of memory", path);
    }
    buf[len] = '\n';
    int rc = tern_atomic_file_put(path, buf, len + 1, err, errn);
    free(buf);
    return rc;
}

/* Key `key` of o must be the integer `want`. */
static int expect_int(const char *path, json_t *o, const char *key, int want, char *err,
                      size_t errn)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return tf_fail(err, errn, "%s: missing key \"%s\" (the byte tokenizer has %d)", path, key,
                    want);
    if (!json_is_integer(v))
        return tf_fail(err, errn, "%s: key \"%s\" must be an integer (%d for the byte tokenizer)",
                    path, key, want);
    if (json_integer_value(v) != want)
        return tf_fail(err, errn, "%s: key \"%s\" is %lld but the byte tokenizer has %d", path, key,
                    (long long)json_integer_value(v), want);
    return 0;
}

static int load_bytes(const char *path, json_t *o, tokenizer **out, char *err, size_t errn)
{
    if (expect_int(path, o, "bos_token_id", BYTES_BOS, err, errn) != 0 ||
        expect_int(path, o, "eos_token_id", BYTES_EOS, err, errn) != 0 ||
        expect_int(path, o, "pad_token_id", BYTES_PAD, err, errn) != 0 ||
        expect_int(path, o, "vocab_size", BYTES_VOCAB, err, errn) != 0)
        return -1;
    if (tokenizer_new_bytes(out) != 0)
        return tf_fail(err, errn, "%s: out of memory", path);
    return 0;
}

static int load_bpe(const char *path, json_t *o, char *bytes, size_t nbytes, char *config,
                    size_t config_len, tokenizer **out, char *err, size_t errn)
{
    bpe *b;
    if (bpe_load(path, o, bytes, nbytes, config, config_len, &b, err, errn) != 0)
        return -1;
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        bpe_free(b);
        return tf_fail(err, errn, "%s: out of memory", path);
    }
    *t = (tokenizer){&bpe_ops, bpe_vocab_size(b), bpe_bos(b), bpe_eos(b), bpe_pad(b), b};
    *out = t;
    return 0;
}

/* tokenizer.json's text (bytes, taken over) as read from `path`; config as
 * for tokenizer_load_text. */
static int load_text(const char *path, char *bytes, size_t nbytes, char *config,
                     size_t config_len, tokenizer **out, char *err, size_t errn);

int tokenizer_load(const char *dir, tokenizer **out, char *err, size_t errn)
{
    *out = NULL; /* on failure too, so that tokenizer_free(*out) is always safe */
    char path[4096];
    if (snprintf(path, sizeof path, "%s/tokenizer.json", dir) >= (int)sizeof path)
        return tf_fail(err, errn, "%.200s...: directory path too long", dir);
    /* the bytes are kept: a Hugging Face tokenizer is saved as it was read */
    char *bytes;
    size_t nbytes;
    char why[TERN_REGULAR_WHY_MAX];
    if (bpe_read_file(path, &bytes, &nbytes, why, sizeof why) != 0)
        return tf_fail(err, errn, "%s: cannot read the tokenizer: %s", path, why);
    return load_text(path, bytes, nbytes, NULL, 0, out, err, errn);
}

int tokenizer_load_text(const char *where, char *json, size_t json_len, char *config,
                        size_t config_len, tokenizer **out, char *err, size_t errn)
{
    *out = NULL;
    if (!config) {
        free(json);
        return tf_fail(err, errn, "%s: no tokenizer_config.json text was given", where);
    }
    return load_text(where, json, json_len, config, config_len, out, err, errn);
}

static int load_text(const char *path, char *bytes, size_t nbytes, char *config,
                     size_t config_len, tokenizer **out, char *err, size_t errn)
{
    json_error_t jerr;
    json_t *o = json_loadb(bytes, nbytes, JSON_REJECT_DUPLICATES, &jerr);
    if (!o) {
        free(bytes);
        free(config);
        return tf_fail(err, errn, "%s:%d:%d: cannot read the tokenizer: %s", path, jerr.line,
                    jerr.column, jerr.text);
    }
    int rc = -1;
    json_t *kind = json_object_get(o, "tern_tokenizer");
    if (!json_is_object(o)) {
        tf_fail(err, errn, "%s: must hold a JSON object", path);
    } else if (!kind && json_is_object(json_object_get(o, "model"))) {
        /* a Hugging Face tokenizers file: {"version": "1.0", "model": {"type": "BPE", ...}} */
        rc = load_bpe(path, o, bytes, nbytes, config, config_len, out, err, errn);
        bytes = config = NULL; /* load_bpe has them now */
    } else if (!kind) {
        tf_fail(err, errn, "%s: no \"tern_tokenizer\" key and no \"model\", so neither a tokenizer "
             "tern wrote nor a Hugging Face tokenizer.json", path);
    } else if (!json_is_string(kind) || strcmp(json_string_value(kind), bytes_ops.kind) != 0) {
        tf_fail(err, errn, "%s: key \"tern_tokenizer\" must be \"bytes\" (the only kind tern "
             "writes; a Hugging Face tokenizer.json has no such key), found %s%.40s%s", path, json_is_string(kind) ? "\"" : "another JSON type",
             json_is_string(kind) ? json_string_value(kind) : "", json_is_string(kind) ? "\"" : "");
    } else if (!json_is_integer(json_object_get(o, "version")) ||
               json_integer_value(json_object_get(o, "version")) != 1) {
        tf_fail(err, errn, "%s: key \"version\" must be 1; a newer tern may have written this file",
             path);
    } else {
        rc = load_bytes(path, o, out, err, errn);
    }
    json_decref(o);
    free(bytes);
    free(config);
    return rc;
}
