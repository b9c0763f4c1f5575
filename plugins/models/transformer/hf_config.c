/* hf_config.c: Hugging Face config.json for Llama, and presets (see
 * hf_config.h). */
#include "hf_config.h"

#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"

static int fail(char *err, size_t errn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errn)
        vsnprintf(err, errn, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    default: return "null";
    }
}

/* ---- reading ------------------------------------------------------------ */

/* Where messages point: the file and the key. */
typedef struct reader {
    const char *path;
    json_t *root;
    char *err;
    size_t errn;
} reader;

/* An int key. Absent: `def` when has_def, else an error. */
static int get_int(reader *r, const char *key, int has_def, int def, int *out)
{
    json_t *v = json_object_get(r->root, key);
    if (!v) {
        if (has_def) {
            *out = def;
            return 0;
        }
        return fail(r->err, r->errn, "%s: missing key \"%s\" (an integer)", r->path, key);
    }
    if (!json_is_integer(v))
        return fail(r->err, r->errn, "%s: key \"%s\" must be an integer, found %s", r->path, key,
                    json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < INT_MIN || x > INT_MAX)
        return fail(r->err, r->errn, "%s: key \"%s\" is %lld, out of range", r->path, key,
                    (long long)x);
    *out = (int)x;
    return 0;
}

/* A number key (integer or real), as HF accepts either. */
static int get_float(reader *r, const char *key, int has_def, float def, float *out)
{
    json_t *v = json_object_get(r->root, key);
    if (!v) {
        if (has_def) {
            *out = def;
            return 0;
        }
        return fail(r->err, r->errn, "%s: missing key \"%s\" (a number)", r->path, key);
    }
    if (!json_is_number(v))
        return fail(r->err, r->errn, "%s: key \"%s\" must be a number, found %s", r->path, key,
                    json_kind(v));
    *out = (float)json_number_value(v);
    return 0;
}

/* A bool key; absent or null gives def. */
static int get_bool(reader *r, const char *key, int def, int *out)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return fail(r->err, r->errn, "%s: key \"%s\" must be true or false, found %s", r->path,
                    key, json_kind(v));
    *out = json_is_true(v);
    return 0;
}

/* A token id: an integer, or a list whose first element is used (HF allows
 * several eos ids; generation stops at the first here). null or absent is
 * -1 when nullable, else an error. */
static int get_token_id(reader *r, const char *key, int nullable, int *out)
{
    json_t *v = json_object_get(r->root, key);
    if (json_is_array(v)) {
        if (json_array_size(v) == 0)
            return fail(r->err, r->errn, "%s: key \"%s\" is an empty list; give a token id",
                        r->path, key);
        v = json_array_get(v, 0);
    }
    if (!v || json_is_null(v)) {
        if (nullable) {
            *out = -1;
            return 0;
        }
        return fail(r->err, r->errn, "%s: missing key \"%s\" (an integer token id)", r->path,
                    key);
    }
    if (!json_is_integer(v))
        return fail(r->err, r->errn, "%s: key \"%s\" must be an integer token id, found %s",
                    r->path, key, json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > INT_MAX)
        return fail(r->err, r->errn, "%s: key \"%s\" is %lld; token ids are >= 0", r->path, key,
                    (long long)x);
    *out = (int)x;
    return 0;
}

static int check_architecture(reader *r)
{
    json_t *a = json_object_get(r->root, "architectures");
    if (!a)
        return fail(r->err, r->errn, "%s: missing key \"architectures\" (expected "
                    "[\"LlamaForCausalLM\"])", r->path);
    if (!json_is_array(a))
        return fail(r->err, r->errn, "%s: key \"architectures\" must be a list of strings, found "
                    "%s", r->path, json_kind(a));
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (s && strcmp(s, "LlamaForCausalLM") == 0)
            return 0;
    }
    char *text = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
    fail(r->err, r->errn, "%s: key \"architectures\" is %.200s; tern implements only "
         "LlamaForCausalLM (Llama-family models such as SmolLM, TinyLlama, Llama 2)", r->path,
         text ? text : "?");
    free(text);
    return -1;
}

/* Options of LlamaConfig that change the computation and that tern does not
 * implement: refused, since ignoring them would give a different model. */
static int check_unsupported(reader *r, const llama_config *c)
{
    json_t *v = json_object_get(r->root, "rope_scaling");
    if (v && !json_is_null(v)) {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        fail(r->err, r->errn, "%s: key \"rope_scaling\" is %.200s; tern implements plain RoPE "
             "only (rope_scaling null), so models with scaled RoPE (e.g. Llama 3.1+) are not "
             "supported", r->path, text ? text : "?");
        free(text);
        return -1;
    }
    int b;
    if (get_bool(r, "attention_bias", 0, &b) != 0)
        return -1;
    if (b)
        return fail(r->err, r->errn, "%s: key \"attention_bias\" is true; tern's attention has "
                    "no biases", r->path);
    if (get_bool(r, "mlp_bias", 0, &b) != 0)
        return -1;
    if (b)
        return fail(r->err, r->errn, "%s: key \"mlp_bias\" is true; tern's MLP has no biases",
                    r->path);
    v = json_object_get(r->root, "hidden_act");
    if (v && !json_is_string(v))
        return fail(r->err, r->errn, "%s: key \"hidden_act\" must be a string, found %s",
                    r->path, json_kind(v));
    if (v && strcmp(json_string_value(v), "silu") != 0)
        return fail(r->err, r->errn, "%s: key \"hidden_act\" is \"%.60s\"; tern implements "
                    "\"silu\" only", r->path, json_string_value(v));
    v = json_object_get(r->root, "head_dim");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v))
            return fail(r->err, r->errn, "%s: key \"head_dim\" must be an integer, found %s",
                        r->path, json_kind(v));
        if (c->n_heads > 0 && json_integer_value(v) * c->n_heads != c->hidden_size)
            return fail(r->err, r->errn, "%s: key \"head_dim\" is %lld but hidden_size %d / "
                        "num_attention_heads %d is %d; tern needs head_dim = hidden_size / "
                        "num_attention_heads", r->path, (long long)json_integer_value(v),
                        c->hidden_size, c->n_heads, c->hidden_size / c->n_heads);
    }
    return 0;
}

/* transformers 5 writes RoPE as "rope_parameters": {"rope_type": "default",
 * "rope_theta": 10000.0} and may drop the top-level rope_theta; missing it
 * would silently give the default base. Only plain RoPE is accepted. */
static int read_rope_parameters(reader *r, llama_config *c)
{
    json_t *p = json_object_get(r->root, "rope_parameters");
    if (!p || json_is_null(p))
        return 0;
    if (!json_is_object(p))
        return fail(r->err, r->errn, "%s: key \"rope_parameters\" must be an object, found %s",
                    r->path, json_kind(p));
    const char *key;
    json_t *v;
    json_object_foreach(p, key, v) {
        int ok = 0;
        if (strcmp(key, "rope_type") == 0 || strcmp(key, "type") == 0)
            ok = json_is_string(v) && strcmp(json_string_value(v), "default") == 0;
        else if (strcmp(key, "rope_theta") == 0)
            ok = json_is_number(v);
        else if (strcmp(key, "partial_rotary_factor") == 0)
            ok = json_is_number(v) && json_number_value(v) == 1.0;
        if (!ok) {
            char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            fail(r->err, r->errn, "%s: key \"rope_parameters.%.60s\" is %.100s; tern implements "
                 "plain RoPE only (rope_type \"default\" with a numeric rope_theta)", r->path,
                 key, text ? text : "?");
            free(text);
            return -1;
        }
    }
    v = json_object_get(p, "rope_theta");
    if (!v)
        return 0;
    float theta = (float)json_number_value(v);
    if (json_object_get(r->root, "rope_theta") && theta != c->rope_theta)
        return fail(r->err, r->errn, "%s: keys \"rope_theta\" (%g) and "
                    "\"rope_parameters.rope_theta\" (%g) disagree", r->path,
                    (double)c->rope_theta, (double)theta);
    c->rope_theta = theta;
    return 0;
}

int hf_config_read(const char *path, llama_config *c, char *err, size_t errn)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root && jerr.line < 1) /* not opened or not read: jansson's text names the file */
        return fail(err, errn, "%s: cannot read: %s", path, jerr.text);
    if (!root)
        return fail(err, errn, "%s:%d:%d: not a valid JSON file: %s", path, jerr.line,
                    jerr.column, jerr.text);
    reader r = {path, root, err, errn};
    memset(c, 0, sizeof *c);
    int rc = -1;
    if (!json_is_object(root)) {
        fail(err, errn, "%s: must hold a JSON object, found %s", path, json_kind(root));
        goto out;
    }
    if (check_architecture(&r) != 0 || get_int(&r, "hidden_size", 0, 0, &c->hidden_size) != 0 ||
        get_int(&r, "intermediate_size", 0, 0, &c->intermediate_size) != 0 ||
        get_int(&r, "num_hidden_layers", 0, 0, &c->n_layers) != 0 ||
        get_int(&r, "num_attention_heads", 0, 0, &c->n_heads) != 0 ||
        /* absent: multi-head attention, as in HF's LlamaConfig */
        get_int(&r, "num_key_value_heads", 1, c->n_heads, &c->n_kv_heads) != 0 ||
        get_int(&r, "vocab_size", 0, 0, &c->vocab_size) != 0 ||
        get_int(&r, "max_position_embeddings", 0, 0, &c->max_positions) != 0 ||
        get_float(&r, "rms_norm_eps", 0, 0, &c->rms_eps) != 0 ||
        get_float(&r, "rope_theta", 1, 10000.0f, &c->rope_theta) != 0 ||
        read_rope_parameters(&r, c) != 0 ||
        get_bool(&r, "tie_word_embeddings", 0, &c->tie_embeddings) != 0 ||
        get_token_id(&r, "bos_token_id", 0, &c->bos_id) != 0 ||
        get_token_id(&r, "eos_token_id", 0, &c->eos_id) != 0 ||
        get_token_id(&r, "pad_token_id", 1, &c->pad_id) != 0 || check_unsupported(&r, c) != 0)
        goto out;
    if (c->pad_id < 0)
        c->pad_id = c->eos_id; /* no pad token: padding positions are masked anyway */
    char msg[512];
    if (llama_config_check(c, msg, sizeof msg) != 0) {
        fail(err, errn, "%s: %s", path, msg);
        goto out;
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* ---- writing ------------------------------------------------------------ */

/* The shortest decimal that reads back as x, as a double: written with 15
 * significant digits it prints as that decimal (1e-05, not
 * 9.99999974737875e-06), and reading it back gives x again. */
static double short_real(float x)
{
    char buf[64];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)x);
        double d = strtod(buf, NULL);
        if ((float)d == x)
            return d;
    }
    return (double)x;
}

int hf_config_write(const char *path, const llama_config *c, char *err, size_t errn)
{
    char msg[512];
    if (llama_config_check(c, msg, sizeof msg) != 0)
        return fail(err, errn, "%s: not writing an invalid config: %s", path, msg);
    /* the keys LlamaConfig reads, with the values of what tern implements */
    json_t *o = json_pack(
        "{s:[s], s:s, s:b, s:f, s:i, s:i, s:s, s:i, s:f, s:i, s:i, s:b, s:i, s:i, s:i, s:i, "
        "s:f, s:n, s:f, s:b, s:s, s:b, s:i}",
        "architectures", "LlamaForCausalLM", "model_type", "llama", "attention_bias", 0,
        "attention_dropout", 0.0, "bos_token_id", c->bos_id, "eos_token_id", c->eos_id,
        "hidden_act", "silu", "hidden_size", c->hidden_size, "initializer_range", 0.02,
        "intermediate_size", c->intermediate_size, "max_position_embeddings", c->max_positions,
        "mlp_bias", 0, "num_attention_heads", c->n_heads, "num_hidden_layers", c->n_layers,
        "num_key_value_heads", c->n_kv_heads, "pad_token_id", c->pad_id, "rms_norm_eps",
        short_real(c->rms_eps), "rope_scaling", "rope_theta", short_real(c->rope_theta),
        "tie_word_embeddings", c->tie_embeddings != 0, "torch_dtype", "float32", "use_cache", 1,
        "vocab_size", c->vocab_size);
    if (!o)
        return fail(err, errn, "%s: out of memory building the config", path);
    /* sorted, indent 2, trailing newline: what transformers' save_pretrained writes */
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    json_decref(o);
    if (!text)
        return fail(err, errn, "%s: out of memory writing the config", path);
    size_t len = strlen(text);
    char *buf = realloc(text, len + 2);
    if (!buf) {
        free(text);
        return fail(err, errn, "%s: out of memory writing the config", path);
    }
    buf[len] = '\n';
    buf[len + 1] = '\0';
    int rc = atomic_file_put(path, buf, len + 1, err, errn);
    free(buf);
    return rc;
}

/* ---- presets ------------------------------------------------------------ */

int llama_preset(const char *name, llama_config *c, char *err, size_t errn)
{
    /* both for the byte tokenizer: 256 bytes, then BOS 256, EOS 257, PAD 258 */
    llama_config base = {.vocab_size = 259, .max_positions = 256, .rms_eps = 1e-5f,
                         .rope_theta = 10000.0f, .bos_id = 256, .eos_id = 257, .pad_id = 258};
    *c = base;
    if (strcmp(name, "tiny") == 0) {
        /* 820,736 parameters: embed 259*128 = 33,152; per layer 2*128 norms +
         * q 128*128 + k,v 2*64*128 + o 128*128 + MLP 3*384*128 = 196,864,
         * times 4 = 787,456; final norm 128; lm_head tied. Trains in minutes
         * on a CPU: for tests and examples. */
        c->hidden_size = 128;
        c->intermediate_size = 384;
        c->n_layers = 4;
        c->n_heads = 4;
        c->n_kv_heads = 2;
        c->tie_embeddings = 1;
        return 0;
    }
    if (strcmp(name, "bench") == 0) {
        /* 9,641,088 parameters: embed and lm_head 259*384 = 99,456 each; per
         * layer 2*384 norms + q 384*384 + k,v 2*128*384 + o 384*384 + MLP
         * 3*1024*384 = 1,573,632, times 6 = 9,441,792; final norm 384. Large
         * enough that the matrix products dominate: for benchmarks. */
        c->hidden_size = 384;
        c->intermediate_size = 1024;
        c->n_layers = 6;
        c->n_heads = 6;
        c->n_kv_heads = 2;
        c->tie_embeddings = 0;
        return 0;
    }
    return fail(err, errn, "unknown model preset \"%.60s\"; the presets are: tiny (0.8M "
                "parameters), bench (9.6M parameters)", name);
}
