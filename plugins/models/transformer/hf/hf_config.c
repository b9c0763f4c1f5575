/* hf_config.c: Hugging Face config.json for Llama, Qwen2 and GPT-2, and presets (see
 * hf_config.h). */
#include "hf/hf_config.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "hf/preprocessor.h"
#include "tern/support/atomic_file.h"
#include "tern/support/regular_file.h"

const char *hf_json_kind(const json_t *v)
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
        return tf_fail(r->err, r->errn, "%s: missing key \"%s\" (an integer)", r->path, key);
    }
    if (!json_is_integer(v))
        return tf_fail(r->err, r->errn, "%s: key \"%s\" must be an integer, found %s", r->path, key,
                    hf_json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < INT_MIN || x > INT_MAX)
        return tf_fail(r->err, r->errn, "%s: key \"%s\" is %lld, out of range", r->path, key,
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
        return tf_fail(r->err, r->errn, "%s: missing key \"%s\" (a number)", r->path, key);
    }
    if (!json_is_number(v))
        return tf_fail(r->err, r->errn, "%s: key \"%s\" must be a number, found %s", r->path, key,
                    hf_json_kind(v));
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
        return tf_fail(r->err, r->errn, "%s: key \"%s\" must be true or false, found %s", r->path,
                    key, hf_json_kind(v));
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
            return tf_fail(r->err, r->errn, "%s: key \"%s\" is an empty list; give a token id",
                        r->path, key);
        v = json_array_get(v, 0);
    }
    if (!v || json_is_null(v)) {
        if (nullable) {
            *out = -1;
            return 0;
        }
        return tf_fail(r->err, r->errn, "%s: missing key \"%s\" (an integer token id)", r->path,
                    key);
    }
    if (!json_is_integer(v))
        return tf_fail(r->err, r->errn, "%s: key \"%s\" must be an integer token id, found %s",
                    r->path, key, hf_json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > INT_MAX)
        return tf_fail(r->err, r->errn, "%s: key \"%s\" is %lld; token ids are >= 0", r->path, key,
                    (long long)x);
    *out = (int)x;
    return 0;
}

/* "[...]" or "{...}" of a value, for messages; free() it. */
static char *dump(const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    return text ? text : strdup("?");
}

static const struct {
    const char *architecture, *model_type;
    int arch;
} known[] = {
    {"LlamaForCausalLM", "llama", ARCH_LLAMA},
    {"Qwen2ForCausalLM", "qwen2", ARCH_QWEN2},
    {"GPT2LMHeadModel", "gpt2", ARCH_GPT2},
};
#define N_KNOWN (sizeof known / sizeof known[0])
#define IMPLEMENTED "LlamaForCausalLM (model_type \"llama\": Llama, SmolLM, TinyLlama), " \
                    "Qwen2ForCausalLM (\"qwen2\") and GPT2LMHeadModel (\"gpt2\")"

/* The architecture, from "architectures" (the class HF instantiates) and
 * "model_type" (what AutoConfig reads): either may be absent, not both; when
 * both are given they must name the same architecture. */
static int read_architecture(reader *r, int *arch)
{
    json_t *a = json_object_get(r->root, "architectures");
    json_t *t = json_object_get(r->root, "model_type");
    int from_a = -1, from_t = -1;
    if (a) {
        if (!json_is_array(a))
            return tf_fail(r->err, r->errn, "%s: key \"architectures\" must be a list of strings, "
                        "found %s", r->path, hf_json_kind(a));
        for (size_t i = 0; i < json_array_size(a) && from_a < 0; i++) {
            const char *s = json_string_value(json_array_get(a, i));
            for (size_t k = 0; s && k < N_KNOWN; k++)
                if (strcmp(s, known[k].architecture) == 0)
                    from_a = (int)k;
        }
        if (from_a < 0) {
            char *text = dump(a);
            tf_fail(r->err, r->errn, "%s: key \"architectures\" is %.200s; tern implements "
                 IMPLEMENTED, r->path, text);
            free(text);
            return -1;
        }
    }
    if (t && !json_is_null(t)) {
        if (!json_is_string(t))
            return tf_fail(r->err, r->errn, "%s: key \"model_type\" must be a string, found %s",
                        r->path, hf_json_kind(t));
        for (size_t k = 0; k < N_KNOWN; k++)
            if (strcmp(json_string_value(t), known[k].model_type) == 0)
                from_t = (int)k;
        if (from_t < 0)
            return tf_fail(r->err, r->errn, "%s: key \"model_type\" is \"%.60s\"; tern implements "
                        IMPLEMENTED, r->path, json_string_value(t));
    }
    if (from_a < 0 && from_t < 0)
        return tf_fail(r->err, r->errn, "%s: missing key \"architectures\" (and no \"model_type\"); "
                    "tern implements " IMPLEMENTED, r->path);
    if (from_a >= 0 && from_t >= 0 && from_a != from_t)
        return tf_fail(r->err, r->errn, "%s: key \"architectures\" names %s but key \"model_type\" "
                    "is \"%s\" (%s's is \"%s\")", r->path, known[from_a].architecture,
                    json_string_value(t), known[from_a].architecture, known[from_a].model_type);
    *arch = known[from_a >= 0 ? from_a : from_t].arch;
    return 0;
}

/* One key of a RoPE object (rope_scaling, or transformers 5's
 * rope_parameters) named `where`: a number > 0. */
static int rope_number(reader *r, const char *where, json_t *o, const char *key, float *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return tf_fail(r->err, r->errn, "%s: key \"%s\" has rope_type \"llama3\" but no \"%s\"",
                    r->path, where, key);
    if (!json_is_number(v) || json_number_value(v) <= 0)
        return tf_fail(r->err, r->errn, "%s: key \"%s.%s\" must be a number > 0", r->path, where,
                    key);
    *out = (float)json_number_value(v);
    return 0;
}

/* A RoPE object: rope_type/type "default" (plain RoPE) or "llama3" (with
 * factor, low_freq_factor, high_freq_factor, original_max_position_embeddings);
 * with `theta_ok`, also rope_theta (into *theta) and partial_rotary_factor 1.
 * Any other type or key changes the computation in a way tern does not
 * implement, so it is refused with the key and its value. */
static int read_rope_object(reader *r, const char *where, json_t *o, int theta_ok,
                            llama_config *c, float *theta, int *has_theta)
{
    if (!json_is_object(o))
        return tf_fail(r->err, r->errn, "%s: key \"%s\" must be an object, found %s", r->path,
                    where, hf_json_kind(o));
    json_t *ty = json_object_get(o, "rope_type");
    const char *tykey = "rope_type";
    if (!ty) {
        ty = json_object_get(o, "type"); /* the name before transformers 4.45 */
        tykey = "type";
    }
    int llama3 = 0;
    if (ty) {
        const char *s = json_string_value(ty);
        llama3 = s && strcmp(s, "llama3") == 0;
        if (!llama3 && !(s && strcmp(s, "default") == 0)) {
            char *text = dump(ty);
            tf_fail(r->err, r->errn, "%s: key \"%s.%s\" is %.100s; tern implements RoPE types "
                 "\"default\" and \"llama3\" only (not linear, dynamic, yarn, longrope, ...)",
                 r->path, where, tykey, text);
            free(text);
            return -1;
        }
    }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        int ok = strcmp(key, "rope_type") == 0 || strcmp(key, "type") == 0;
        if (llama3)
            ok = ok || strcmp(key, "factor") == 0 || strcmp(key, "low_freq_factor") == 0 ||
                 strcmp(key, "high_freq_factor") == 0 ||
                 strcmp(key, "original_max_position_embeddings") == 0;
        if (theta_ok && strcmp(key, "rope_theta") == 0)
            ok = json_is_number(v);
        if (theta_ok && strcmp(key, "partial_rotary_factor") == 0)
            ok = json_is_number(v) && json_number_value(v) == 1.0;
        if (!ok) {
            char *text = dump(v);
            tf_fail(r->err, r->errn, "%s: key \"%s.%.60s\" is %.100s; tern implements plain RoPE "
                 "(rope_type \"default\") and Llama 3 scaling (rope_type \"llama3\" with factor, "
                 "low_freq_factor, high_freq_factor, original_max_position_embeddings)", r->path,
                 where, key, text);
            free(text);
            return -1;
        }
    }
    if (theta_ok && (v = json_object_get(o, "rope_theta"))) {
        *theta = (float)json_number_value(v);
        *has_theta = 1;
    }
    if (!llama3)
        return 0;
    float orig;
    if (rope_number(r, where, o, "factor", &c->rope_factor) != 0 ||
        rope_number(r, where, o, "low_freq_factor", &c->rope_low_freq) != 0 ||
        rope_number(r, where, o, "high_freq_factor", &c->rope_high_freq) != 0 ||
        rope_number(r, where, o, "original_max_position_embeddings", &orig) != 0)
        return -1;
    c->rope_orig_max_pos = (int)orig;
    if ((float)c->rope_orig_max_pos != orig)
        return tf_fail(r->err, r->errn, "%s: key \"%s.original_max_position_embeddings\" must be "
                    "an integer", r->path, where);
    if (c->rope_high_freq <= c->rope_low_freq)
        return tf_fail(r->err, r->errn, "%s: key \"%s\": high_freq_factor %g must be above "
                    "low_freq_factor %g", r->path, where, (double)c->rope_high_freq,
                    (double)c->rope_low_freq);
    return 0;
}

/* rope_scaling (null: plain RoPE) and transformers 5's "rope_parameters":
 * {"rope_type": ..., "rope_theta": ...} which may replace the top-level
 * rope_theta; missing it would silently give the default base. */
static int read_rope(reader *r, llama_config *c)
{
    json_t *sc = json_object_get(r->root, "rope_scaling");
    float theta = 0;
    int has_theta = 0;
    if (sc && !json_is_null(sc) &&
        read_rope_object(r, "rope_scaling", sc, 0, c, &theta, &has_theta) != 0)
        return -1;
    json_t *p = json_object_get(r->root, "rope_parameters");
    if (!p || json_is_null(p))
        return 0;
    if (read_rope_object(r, "rope_parameters", p, 1, c, &theta, &has_theta) != 0)
        return -1;
    if (!has_theta)
        return 0;
    if (json_object_get(r->root, "rope_theta") && theta != c->rope_theta)
        return tf_fail(r->err, r->errn, "%s: keys \"rope_theta\" (%g) and "
                    "\"rope_parameters.rope_theta\" (%g) disagree", r->path,
                    (double)c->rope_theta, (double)theta);
    c->rope_theta = theta;
    return 0;
}

/* hidden_act must be SiLU (Llama, Qwen2). */
static int read_hidden_act(reader *r)
{
    json_t *v = json_object_get(r->root, "hidden_act");
    if (v && !json_is_string(v))
        return tf_fail(r->err, r->errn, "%s: key \"hidden_act\" must be a string, found %s",
                    r->path, hf_json_kind(v));
    if (v && strcmp(json_string_value(v), "silu") != 0)
        return tf_fail(r->err, r->errn, "%s: key \"hidden_act\" is \"%.60s\"; tern implements "
                    "\"silu\" only", r->path, json_string_value(v));
    return 0;
}

/* head_dim, when given, must be hidden_size / num_attention_heads. */
static int read_head_dim(reader *r, const llama_config *c)
{
    json_t *v = json_object_get(r->root, "head_dim");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return tf_fail(r->err, r->errn, "%s: key \"head_dim\" must be an integer, found %s",
                    r->path, hf_json_kind(v));
    if (c->n_heads > 0 && json_integer_value(v) * c->n_heads != c->hidden_size)
        return tf_fail(r->err, r->errn, "%s: key \"head_dim\" is %lld but hidden_size %d / "
                    "num_attention_heads %d is %d; tern needs head_dim = hidden_size / "
                    "num_attention_heads", r->path, (long long)json_integer_value(v),
                    c->hidden_size, c->n_heads, c->hidden_size / c->n_heads);
    return 0;
}

/* Qwen2's sliding-window attention: off (use_sliding_window false, every
 * layer_types entry "full_attention") is the same as full attention, and
 * sliding_window / max_window_layers then do nothing. On, it is refused. */
static int read_qwen2_window(reader *r)
{
    int on;
    if (get_bool(r, "use_sliding_window", 0, &on) != 0)
        return -1;
    if (on)
        return tf_fail(r->err, r->errn, "%s: key \"use_sliding_window\" is true; tern implements "
                    "full attention only (set it to false, as Qwen2/Qwen2.5 releases do)",
                    r->path);
    if (get_bool(r, "use_mrope", 0, &on) != 0)
        return -1;
    if (on) /* Qwen2-VL's multimodal RoPE */
        return tf_fail(r->err, r->errn, "%s: key \"use_mrope\" is true; tern implements plain "
                    "(1-D) RoPE only", r->path);
    json_t *lt = json_object_get(r->root, "layer_types");
    if (!lt || json_is_null(lt))
        return 0;
    if (!json_is_array(lt))
        return tf_fail(r->err, r->errn, "%s: key \"layer_types\" must be a list of strings, found "
                    "%s", r->path, hf_json_kind(lt));
    for (size_t i = 0; i < json_array_size(lt); i++) {
        const char *s = json_string_value(json_array_get(lt, i));
        if (!s || strcmp(s, "full_attention") != 0)
            return tf_fail(r->err, r->errn, "%s: key \"layer_types\"[%zu] is \"%.40s\"; tern "
                        "implements \"full_attention\" only", r->path, i, s ? s : "?");
    }
    return 0;
}

/* LlamaConfig and Qwen2Config keys. */
static int read_llama_like(reader *r, llama_config *c)
{
    int ab = 0, mb = 0;
    if (get_int(r, "hidden_size", 0, 0, &c->hidden_size) != 0 ||
        get_int(r, "intermediate_size", 0, 0, &c->intermediate_size) != 0 ||
        get_int(r, "num_hidden_layers", 0, 0, &c->n_layers) != 0 ||
        get_int(r, "num_attention_heads", 0, 0, &c->n_heads) != 0 ||
        /* absent: multi-head attention, as in HF's LlamaConfig */
        get_int(r, "num_key_value_heads", 1, c->n_heads, &c->n_kv_heads) != 0 ||
        get_int(r, "vocab_size", 0, 0, &c->vocab_size) != 0 ||
        get_int(r, "max_position_embeddings", 0, 0, &c->max_positions) != 0 ||
        get_float(r, "rms_norm_eps", 0, 0, &c->rms_eps) != 0 ||
        get_float(r, "rope_theta", 1, 10000.0f, &c->rope_theta) != 0 || read_rope(r, c) != 0 ||
        get_bool(r, "tie_word_embeddings", 0, &c->tie_embeddings) != 0 ||
        read_hidden_act(r) != 0 || read_head_dim(r, c) != 0)
        return -1;
    if (c->arch == ARCH_QWEN2) {
        /* Qwen2's q, k, v projections always have biases, o_proj never */
        c->qkv_bias = 1;
        return read_qwen2_window(r);
    }
    if (get_bool(r, "attention_bias", 0, &ab) != 0 || get_bool(r, "mlp_bias", 0, &mb) != 0)
        return -1;
    c->qkv_bias = c->o_bias = ab; /* LlamaAttention: on q, k, v and o_proj alike */
    c->mlp_bias = mb;
    return 0;
}

/* GPT2Config keys. */
static int read_gpt2(reader *r, llama_config *c)
{
    if (get_int(r, "n_embd", 0, 0, &c->hidden_size) != 0 ||
        get_int(r, "n_layer", 0, 0, &c->n_layers) != 0 ||
        get_int(r, "n_head", 0, 0, &c->n_heads) != 0 ||
        get_int(r, "vocab_size", 0, 0, &c->vocab_size) != 0 ||
        get_int(r, "n_positions", 0, 0, &c->max_positions) != 0 ||
        get_float(r, "layer_norm_epsilon", 1, 1e-5f, &c->rms_eps) != 0 ||
        get_bool(r, "tie_word_embeddings", 1, &c->tie_embeddings) != 0)
        return -1;
    json_t *v = json_object_get(r->root, "n_inner");
    if (!v || json_is_null(v)) {
        /* null: 4 n_embd, as GPT2MLP */
        c->intermediate_size = c->hidden_size > 0 && c->hidden_size <= INT_MAX / 4 ?
                               4 * c->hidden_size : 0;
    } else if (get_int(r, "n_inner", 0, 0, &c->intermediate_size) != 0) {
        return -1;
    }
    c->n_kv_heads = c->n_heads;
    c->rope_theta = 10000.0f; /* unused: positions are learned */
    c->qkv_bias = c->o_bias = c->mlp_bias = 1;
    v = json_object_get(r->root, "activation_function");
    if (v && !json_is_string(v))
        return tf_fail(r->err, r->errn, "%s: key \"activation_function\" must be a string, found "
                    "%s", r->path, hf_json_kind(v));
    if (v && strcmp(json_string_value(v), "gelu_new") != 0 &&
        strcmp(json_string_value(v), "gelu_pytorch_tanh") != 0)
        return tf_fail(r->err, r->errn, "%s: key \"activation_function\" is \"%.60s\"; tern "
                    "implements \"gelu_new\" (the tanh approximation, also \"gelu_pytorch_tanh\")"
                    " only", r->path, json_string_value(v));
    /* options that change the computation, with the value tern implements */
    static const struct {
        const char *key;
        int want;
    } opts[] = {{"scale_attn_weights", 1}, {"scale_attn_by_inverse_layer_idx", 0},
                {"reorder_and_upcast_attn", 0}, {"add_cross_attention", 0}};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        int b;
        if (get_bool(r, opts[i].key, opts[i].want, &b) != 0)
            return -1;
        if (b != opts[i].want)
            return tf_fail(r->err, r->errn, "%s: key \"%s\" is %s; tern implements GPT-2 with %s "
                        "= %s only", r->path, opts[i].key, b ? "true" : "false", opts[i].key,
                        opts[i].want ? "true" : "false");
    }
    return 0;
}

/* ---- LLaVA (LlavaForConditionalGeneration) ------------------------------ */

/* Whether the file is a LLaVA's: model_type "llava" or the class in
 * "architectures". */
static int is_llava(json_t *root)
{
    const char *t = json_string_value(json_object_get(root, "model_type"));
    if (t && strcmp(t, "llava") == 0)
        return 1;
    json_t *a = json_object_get(root, "architectures");
    for (size_t i = 0; json_is_array(a) && i < json_array_size(a); i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (s && strcmp(s, "LlavaForConditionalGeneration") == 0)
            return 1;
    }
    return 0;
}

/* A copy of root[key] (an object; absent or null: empty) with the keys of
 * `defaults` it lacks: the hub's LLaVA files list only what differs from
 * the config classes' defaults. NULL with a message. Steals defaults. */
static json_t *with_defaults(reader *r, const char *key, json_t *defaults)
{
    json_t *v = json_object_get(r->root, key);
    if (!defaults) {
        tf_fail(r->err, r->errn, "%s: out of memory", r->path);
        return NULL;
    }
    if (v && !json_is_null(v) && !json_is_object(v)) {
        json_decref(defaults);
        tf_fail(r->err, r->errn, "%s: key \"%s\" must be an object, found %s", r->path, key,
                hf_json_kind(v));
        return NULL;
    }
    json_t *o = v && json_is_object(v) ? json_deep_copy(v) : json_object();
    if (!o || json_object_update_missing(o, defaults) != 0) {
        json_decref(o);
        json_decref(defaults);
        tf_fail(r->err, r->errn, "%s: out of memory", r->path);
        return NULL;
    }
    json_decref(defaults);
    return o;
}

/* text_config: a LlamaConfig (or Qwen2Config), with LlamaConfig's defaults. */
static int read_llava_text(reader *top, llama_config *c)
{
    json_t *tc = with_defaults(top, "text_config", json_pack(
        "{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:b, s:i, s:i}", "model_type", "llama",
        "vocab_size", 32000, "hidden_size", 4096, "intermediate_size", 11008,
        "num_hidden_layers", 32, "num_attention_heads", 32, "max_position_embeddings", 2048,
        "rms_norm_eps", 1e-6, "rope_theta", 10000.0, "tie_word_embeddings", 0, "bos_token_id", 1,
        "eos_token_id", 2));
    if (!tc)
        return -1;
    char where[600];
    snprintf(where, sizeof where, "%s: text_config", top->path);
    reader r = {where, tc, top->err, top->errn};
    /* the text model's architecture comes from its model_type */
    json_object_del(tc, "architectures");
    int rc = read_architecture(&r, &c->arch);
    if (rc == 0 && c->arch == ARCH_GPT2)
        rc = tf_fail(r.err, r.errn, "%s: model_type \"gpt2\"; a LLaVA's language model is Llama "
                     "or Qwen2 here", where);
    if (rc == 0)
        rc = read_llama_like(&r, c);
    if (rc == 0 && (get_token_id(&r, "bos_token_id", 0, &c->bos_id) != 0 ||
                    get_token_id(&r, "eos_token_id", 0, &c->eos_id) != 0 ||
                    get_token_id(&r, "pad_token_id", 1, &c->pad_id) != 0))
        rc = -1;
    json_decref(tc);
    return rc;
}

/* vision_config: a CLIPVisionConfig, with its defaults. */
static int read_llava_vision(reader *top, llama_vision *v)
{
    json_t *vc = with_defaults(top, "vision_config", json_pack(
        "{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:f}", "model_type", "clip_vision_model",
        "hidden_size", 768, "intermediate_size", 3072, "num_hidden_layers", 12,
        "num_attention_heads", 12, "num_channels", 3, "image_size", 224, "patch_size", 32,
        "hidden_act", "quick_gelu", "layer_norm_eps", 1e-5));
    if (!vc)
        return -1;
    char where[600];
    snprintf(where, sizeof where, "%s: vision_config", top->path);
    reader r = {where, vc, top->err, top->errn};
    int rc = -1;
    const char *type = json_string_value(json_object_get(vc, "model_type"));
    const char *act = json_string_value(json_object_get(vc, "hidden_act"));
    if (!type || strcmp(type, "clip_vision_model") != 0)
        tf_fail(r.err, r.errn, "%s: model_type is \"%.60s\"; tern implements CLIP vision towers "
                "(\"clip_vision_model\") only", where, type ? type : "not a string");
    else if (!act || strcmp(act, "quick_gelu") != 0)
        tf_fail(r.err, r.errn, "%s: hidden_act is \"%.60s\"; tern implements CLIP's "
                "\"quick_gelu\" only", where, act ? act : "not a string");
    else if (get_int(&r, "hidden_size", 0, 0, &v->hidden) == 0 &&
             get_int(&r, "intermediate_size", 0, 0, &v->intermediate) == 0 &&
             get_int(&r, "num_hidden_layers", 0, 0, &v->layers) == 0 &&
             get_int(&r, "num_attention_heads", 0, 0, &v->heads) == 0 &&
             get_int(&r, "num_channels", 0, 0, &v->channels) == 0 &&
             get_int(&r, "image_size", 0, 0, &v->image) == 0 &&
             get_int(&r, "patch_size", 0, 0, &v->patch) == 0 &&
             get_float(&r, "layer_norm_eps", 0, 0, &v->eps) == 0)
        rc = v->layers > 0 ? 0 : tf_fail(r.err, r.errn, "%s: num_hidden_layers is %d; a "
                                        "vision tower has at least one", where, v->layers);
    json_decref(vc);
    return rc;
}

/* LlavaConfig's own keys, with its defaults; what tern does not implement
 * is refused by name. */
static int read_llava(reader *r, llama_config *c)
{
    llama_vision *v = &c->vision;
    if (read_llava_text(r, c) != 0 || read_llava_vision(r, v) != 0)
        return -1;
    json_t *fl = json_object_get(r->root, "vision_feature_layer");
    if (json_is_array(fl))
        return tf_fail(r->err, r->errn, "%s: key \"vision_feature_layer\" is a list; tern takes "
                       "the features of one layer (an integer)", r->path);
    int token;
    if (get_int(r, "vision_feature_layer", 1, -2, &v->feature_layer) != 0 ||
        get_token_id(r, "image_token_index", 1, &token) != 0)
        return -1;
    v->image_token = token;
    if (token < 0 && get_token_id(r, "image_token_id", 1, &v->image_token) != 0)
        return -1;
    if (v->image_token < 0)
        v->image_token = 32000; /* LlavaConfig's default */
    static const struct {
        const char *key, *want, *why;
    } strs[] = {{"vision_feature_select_strategy", "default", "the CLS row dropped"},
                {"projector_hidden_act", "gelu", "the projector's erf GELU"}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        json_t *s = json_object_get(r->root, strs[i].key);
        if (s && !json_is_null(s) &&
            (!json_is_string(s) || strcmp(json_string_value(s), strs[i].want) != 0)) {
            char *text = dump(s);
            tf_fail(r->err, r->errn, "%s: key \"%s\" is %.60s; tern implements \"%s\" (%s) only",
                    r->path, strs[i].key, text, strs[i].want, strs[i].why);
            free(text);
            return -1;
        }
    }
    int bias;
    if (get_bool(r, "multimodal_projector_bias", 1, &bias) != 0)
        return -1;
    if (!bias)
        return tf_fail(r->err, r->errn, "%s: key \"multimodal_projector_bias\" is false; tern "
                       "implements the projector with biases only", r->path);
    /* a top-level tie_word_embeddings or pad_token_id speaks for the text model */
    json_t *tie = json_object_get(r->root, "tie_word_embeddings");
    if (tie && !json_is_null(tie) && get_bool(r, "tie_word_embeddings", 0, &c->tie_embeddings))
        return -1;
    int pad = -1;
    if (get_token_id(r, "pad_token_id", 1, &pad) != 0)
        return -1;
    if (pad >= 0)
        c->pad_id = pad;
    return 0;
}

int hf_config_read(const char *path, llama_config *c, char *err, size_t errn)
{
    /* read by tern, not json_load_file: a FIFO must not block, nor a
     * device be read without end */
    char *text, why[TERN_REGULAR_WHY_MAX];
    size_t len;
    if (tern_regular_read(path, HF_JSON_MAX, &text, &len, why, sizeof why) != 0)
        return tf_fail(err, errn, "%s: cannot read: %s%s", path, why,
                       errno == EISDIR || errno == EINVAL ? "; give a config.json file" : "");
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!root)
        return tf_fail(err, errn, "%s:%d:%d: not a valid JSON file: %s", path, jerr.line,
                    jerr.column, jerr.text);
    reader r = {path, root, err, errn};
    memset(c, 0, sizeof *c);
    int rc = -1;
    if (!json_is_object(root)) {
        tf_fail(err, errn, "%s: must hold a JSON object, found %s", path, hf_json_kind(root));
        goto out;
    }
    if (is_llava(root)) {
        if (read_llava(&r, c) != 0 || preprocessor_read(path, &c->vision, err, errn) != 0)
            goto out;
    } else if (read_architecture(&r, &c->arch) != 0 ||
               (c->arch == ARCH_GPT2 ? read_gpt2(&r, c) : read_llama_like(&r, c)) != 0 ||
               get_token_id(&r, "bos_token_id", 0, &c->bos_id) != 0 ||
               get_token_id(&r, "eos_token_id", 0, &c->eos_id) != 0 ||
               get_token_id(&r, "pad_token_id", 1, &c->pad_id) != 0) {
        goto out;
    }
    if (c->pad_id < 0)
        c->pad_id = c->eos_id; /* no pad token: padding positions are masked anyway */
    char msg[512];
    if (llama_config_check(c, msg, sizeof msg) != 0) {
        tf_fail(err, errn, "%s: %s", path, msg);
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

/* The keys the architecture's config class (LlamaConfig, Qwen2Config,
 * GPT2Config) reads, with the values of what tern implements. NULL: out of
 * memory. */
static json_t *build_config(const llama_config *c)
{
    if (c->arch == ARCH_GPT2)
        return json_pack(
            "{s:[s], s:s, s:s, s:f, s:i, s:f, s:i, s:f, s:f, s:i, s:i, s:i, s:i, s:i, s:i, s:b, "
            "s:f, s:b, s:b, s:b, s:s, s:b, s:i}",
            "architectures", "GPT2LMHeadModel", "model_type", "gpt2", "activation_function",
            "gelu_new", "attn_pdrop", 0.0, "bos_token_id", c->bos_id, "embd_pdrop", 0.0,
            "eos_token_id", c->eos_id, "initializer_range", 0.02, "layer_norm_epsilon",
            short_real(c->rms_eps), "n_embd", c->hidden_size, "n_head", c->n_heads, "n_inner",
            c->intermediate_size, "n_layer", c->n_layers, "n_positions", c->max_positions,
            "pad_token_id", c->pad_id, "reorder_and_upcast_attn", 0, "resid_pdrop", 0.0,
            "scale_attn_by_inverse_layer_idx", 0, "scale_attn_weights", 1,
            "tie_word_embeddings", c->tie_embeddings != 0, "torch_dtype", "float32",
            "use_cache", 1, "vocab_size", c->vocab_size);
    json_t *rope = c->rope_factor != 0 ?
        json_pack("{s:s, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "factor",
                  short_real(c->rope_factor), "low_freq_factor", short_real(c->rope_low_freq),
                  "high_freq_factor", short_real(c->rope_high_freq),
                  "original_max_position_embeddings", c->rope_orig_max_pos) :
        json_null();
    if (!rope)
        return NULL;
    json_t *o = json_pack(
        "{s:[s], s:s, s:f, s:i, s:i, s:s, s:i, s:f, s:i, s:i, s:i, s:i, s:i, s:i, "
        "s:f, s:o, s:f, s:b, s:s, s:b, s:i}",
        "architectures", llama_arch_name(c->arch), "model_type",
        c->arch == ARCH_QWEN2 ? "qwen2" : "llama", "attention_dropout", 0.0, "bos_token_id",
        c->bos_id, "eos_token_id", c->eos_id, "hidden_act", "silu", "hidden_size",
        c->hidden_size, "initializer_range", 0.02, "intermediate_size", c->intermediate_size,
        "max_position_embeddings", c->max_positions, "num_attention_heads", c->n_heads,
        "num_hidden_layers", c->n_layers, "num_key_value_heads", c->n_kv_heads, "pad_token_id",
        c->pad_id, "rms_norm_eps", short_real(c->rms_eps), "rope_scaling", rope, "rope_theta",
        short_real(c->rope_theta), "tie_word_embeddings", c->tie_embeddings != 0, "torch_dtype",
        "float32", "use_cache", 1, "vocab_size", c->vocab_size);
    if (!o)
        return NULL;
    int bad;
    if (c->arch == ARCH_QWEN2) {
        /* full attention: the window keys are read but do nothing while off */
        bad = json_object_set_new(o, "use_sliding_window", json_false()) ||
              json_object_set_new(o, "sliding_window", json_null()) ||
              json_object_set_new(o, "max_window_layers", json_integer(c->n_layers));
    } else {
        bad = json_object_set_new(o, "attention_bias", json_boolean(c->qkv_bias)) ||
              json_object_set_new(o, "mlp_bias", json_boolean(c->mlp_bias));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* LlavaConfig: the text model's keys as text_config (build_config's), the
 * tower's as vision_config. NULL: out of memory. */
static json_t *build_llava_config(const llama_config *c)
{
    json_t *text = build_config(c);
    const llama_vision *v = &c->vision;
    json_t *vision = json_pack(
        "{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:f, s:i}", "model_type",
        "clip_vision_model", "hidden_size", v->hidden, "intermediate_size", v->intermediate,
        "num_hidden_layers", v->layers, "num_attention_heads", v->heads, "num_channels",
        v->channels, "image_size", v->image, "patch_size", v->patch, "hidden_act", "quick_gelu",
        "layer_norm_eps", short_real(v->eps), "projection_dim", v->hidden);
    if (!text || !vision || json_object_del(text, "architectures") != 0) {
        json_decref(text), json_decref(vision);
        return NULL;
    }
    const int g = v->image / v->patch;
    return json_pack("{s:[s], s:s, s:o, s:o, s:i, s:i, s:s, s:i, s:s, s:b, s:b, s:s}",
                     "architectures", "LlavaForConditionalGeneration", "model_type", "llava",
                     "text_config", text, "vision_config", vision, "image_token_index",
                     v->image_token, "image_seq_length", g * g, "projector_hidden_act", "gelu",
                     "vision_feature_layer", v->feature_layer, "vision_feature_select_strategy",
                     "default", "multimodal_projector_bias", 1, "tie_word_embeddings",
                     c->tie_embeddings != 0, "torch_dtype", "float32");
}

int hf_config_write(const char *path, const llama_config *c, char *err, size_t errn)
{
    char msg[512];
    if (llama_config_check(c, msg, sizeof msg) != 0)
        return tf_fail(err, errn, "%s: not writing an invalid config: %s", path, msg);
    if (c->vision.layers > 0 && preprocessor_write(path, &c->vision, err, errn) != 0)
        return -1;
    json_t *o = c->vision.layers > 0 ? build_llava_config(c) : build_config(c);
    /* sorted, indent 2, trailing newline: what transformers' save_pretrained writes */
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    json_decref(o);
    if (!text)
        return tf_fail(err, errn, "%s: out of memory writing the config", path);
    size_t len = strlen(text);
    char *buf = realloc(text, len + 2);
    if (!buf) {
        free(text);
        return tf_fail(err, errn, "%s: out of memory writing the config", path);
    }
    buf[len] = '\n';
    buf[len + 1] = '\0';
    int rc = tern_atomic_file_put(path, buf, len + 1, err, errn);
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
    if (strcmp(name, "vlm-tiny") == 0 || strcmp(name, "vlm-bench") == 0) {
        /* a LLaVA: the text preset's decoder with one more token (259, the
         * image token), a CLIP tower and the projector */
        const int tiny = strcmp(name, "vlm-tiny") == 0;
        llama_preset(tiny ? "tiny" : "bench", c, err, errn);
        c->vocab_size = 260;
        llama_vision *v = &c->vision;
        memcpy(v->mean, preprocessor_clip_mean, sizeof v->mean);
        memcpy(v->std, preprocessor_clip_std, sizeof v->std);
        v->crop = 1;
        v->channels = 3;
        v->eps = 1e-5f;
        v->feature_layer = -1; /* fresh weights: no layer computed for nothing */
        v->image_token = 259;
        if (tiny) {
            /* 32 x 32 pixels (tern data shapes --size 32), patches of 4: 64
             * image rows; width 64, 2 layers: 74,496 tower and 24,832
             * projector parameters beside the decoder's 820,864 (920,192) */
            v->image = 32;
            v->patch = 4;
            v->hidden = 64;
            v->intermediate = 128;
            v->layers = 2;
            v->heads = 4;
        } else {
            /* 64 x 64 pixels, patches of 8: 64 image rows; width 256, 4 layers */
            v->image = 64;
            v->patch = 8;
            v->hidden = 256;
            v->intermediate = 1024;
            v->layers = 4;
            v->heads = 4;
            c->max_positions = 512;
        }
        return 0;
    }
    return tf_fail(err, errn, "unknown model preset \"%.60s\"; the presets are: tiny (0.8M "
                "parameters), bench (9.6M parameters), vlm-tiny (a LLaVA: tiny with a 32 x 32 "
                "image encoder, 0.9M), vlm-bench (bench with a 64 x 64 encoder, 13M)", name);
}
