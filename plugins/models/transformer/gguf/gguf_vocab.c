/* gguf_vocab.c: a GGUF vocabulary as Hugging Face tokenizer files (see gguf_vocab.h). */
#include "gguf/gguf_vocab.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "tokenizer/pretokenize.h"

enum { TOKEN_NORMAL = 1, TOKEN_CONTROL = 3, TOKEN_USER_DEFINED = 4 };

/* The pre_tokenizer object of tokenizer.ggml.pre `pre` (NULL: GPT-2's), or NULL when unknown. */
static json_t *pre_tokenizer(const char *pre)
{
    static const char *const digits_first[] = {"smollm", "starcoder", "refact", "codeshell"};
    json_t *byte_level = json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel",
                                   "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 1);
    if (!pre || strcmp(pre, "gpt-2") == 0 || strcmp(pre, "default") == 0)
        return byte_level;
    for (size_t i = 0; i < sizeof digits_first / sizeof digits_first[0]; i++)
        if (strcmp(pre, digits_first[i]) == 0)
            return json_pack("{s:s, s:[{s:s, s:b}, o]}", "type", "Sequence", "pretokenizers",
                             "type", "Digits", "individual_digits", 1, byte_level);
    int k = strcmp(pre, "llama-bpe") == 0 || strcmp(pre, "llama3") == 0 ? PRETOK_LLAMA3
            : strcmp(pre, "qwen2") == 0                                 ? PRETOK_QWEN2
                                                                        : -1;
    if (k < 0) {
        json_decref(byte_level);
        return NULL;
    }
    /* the regex splits; ByteLevel then only maps bytes */
    json_object_set_new(byte_level, "use_regex", json_false());
    return json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, o]}", "type", "Sequence",
                     "pretokenizers", "type", "Split", "pattern", "Regex",
                     pretok_regex[k], "behavior", "Isolated", "invert", 0, byte_level);
}

/* An optional token-id key: -1 when absent; -2 (message in err) when it is not an id. */
static int token_id_key(const gguf_file *f, const char *path, const char *key, size_t n_tokens,
                        char *err, size_t errn)
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    int64_t v;
    if (!kv)
        return -1;
    if (gguf_kv_int(kv, &v) != 0 || v < 0 || (uint64_t)v >= n_tokens) {
        tf_fail(err, errn, "%s: %s must be a token id, 0 to %zu", path, key, n_tokens - 1);
        return -2;
    }
    return (int)v;
}

/* A JSON string of s's bytes, or NULL when they are not UTF-8 (or out of memory). */
static json_t *jstr(gguf_str s) { return json_stringn(s.s, s.len); }

/* TemplateProcessing that puts `bos` (the token's text) first, as HF's Llama tokenizers do. */
static json_t *bos_first(json_t *bos_text, int bos)
{
    const char *t = json_string_value(bos_text);
    json_t *single = json_pack("[{s:{s:s, s:i}}, {s:{s:s, s:i}}]", "SpecialToken", "id", t,
                               "type_id", 0, "Sequence", "id", "A", "type_id", 0);
    json_t *pair = json_pack("[{s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}]",
                             "SpecialToken", "id", t, "type_id", 0, "Sequence", "id", "A",
                             "type_id", 0, "SpecialToken", "id", t, "type_id", 1, "Sequence",
                             "id", "B", "type_id", 1);
    json_t *special = json_object();
    json_t *entry = json_pack("{s:s, s:[i], s:[s]}", "id", t, "ids", bos, "tokens", t);
    json_t *tp = json_pack("{s:s}", "type", "TemplateProcessing");
    if (!single || !pair || !special || !entry || !tp ||
        json_object_set_new(special, t, entry) != 0) {
        json_decref(single), json_decref(pair), json_decref(special), json_decref(tp);
        return NULL;
    }
    json_object_set_new(tp, "single", single);
    json_object_set_new(tp, "pair", pair);
    json_object_set_new(tp, "special_tokens", special);
    return tp;
}

int gguf_vocab_texts(const gguf_file *f, const char *path, char **tokenizer_json,
                     size_t *tokenizer_len, char **config_json, size_t *config_len, char *err,
                     size_t errn)
{
    *tokenizer_json = *config_json = NULL;
    const gguf_kv *model = gguf_find_kv(f, "tokenizer.ggml.model");
    const gguf_kv *tokens = gguf_find_kv(f, "tokenizer.ggml.tokens");
    const gguf_kv *types = gguf_find_kv(f, "tokenizer.ggml.token_type");
    const gguf_kv *merges = gguf_find_kv(f, "tokenizer.ggml.merges");
    const gguf_kv *pre = gguf_find_kv(f, "tokenizer.ggml.pre");
    const gguf_kv *tmpl = gguf_find_kv(f, "tokenizer.chat_template");
    const gguf_kv *add_bos = gguf_find_kv(f, "tokenizer.ggml.add_bos_token");
    gguf_str s;
    if (!model || gguf_kv_string(model, &s) != 0)
        return tf_fail(err, errn, "%s: tokenizer.ggml.model is missing or not a string; the file "
                       "carries no tokenizer tern can use", path);
    if (s.len != 4 || memcmp(s.s, "gpt2", 4) != 0)
        return tf_fail(err, errn, "%s: tokenizer.ggml.model is \"%.*s\"; tern reads byte-level "
                       "BPE vocabularies (\"gpt2\": GPT-2, Llama 3, Qwen2, SmolLM) only, not "
                       "SentencePiece ones", path, (int)(s.len > 40 ? 40 : s.len), s.s);
    if (!tokens || tokens->type != GGUF_TYPE_ARRAY || tokens->elem_type != GGUF_TYPE_STRING ||
        tokens->n == 0 || tokens->n > (1u << 24))
        return tf_fail(err, errn, "%s: tokenizer.ggml.tokens must be an array of 1 to 2^24 "
                       "strings", path);
    size_t n = (size_t)tokens->n;
    if (!merges || merges->type != GGUF_TYPE_ARRAY || merges->elem_type != GGUF_TYPE_STRING)
        return tf_fail(err, errn, "%s: tokenizer.ggml.merges must be an array of strings (a BPE "
                       "vocabulary has merges)", path);
    if (types && (types->type != GGUF_TYPE_ARRAY || types->n != n))
        return tf_fail(err, errn, "%s: tokenizer.ggml.token_type must be an array of %zu "
                       "integers, one per token", path, n);
    char pre_name[64] = "";
    if (pre) {
        if (gguf_kv_string(pre, &s) != 0 || s.len >= sizeof pre_name)
            return tf_fail(err, errn, "%s: tokenizer.ggml.pre must be a short string", path);
        memcpy(pre_name, s.s, s.len);
        pre_name[s.len] = 0;
    }
    int bos = token_id_key(f, path, "tokenizer.ggml.bos_token_id", n, err, errn);
    int eos = token_id_key(f, path, "tokenizer.ggml.eos_token_id", n, err, errn);
    int unk = token_id_key(f, path, "tokenizer.ggml.unknown_token_id", n, err, errn);
    int pad = token_id_key(f, path, "tokenizer.ggml.padding_token_id", n, err, errn);
    if (bos == -2 || eos == -2 || unk == -2 || pad == -2)
        return -1;
    int with_bos = 0;
    if (add_bos && gguf_kv_bool(add_bos, &with_bos) != 0)
        return tf_fail(err, errn, "%s: tokenizer.ggml.add_bos_token must be a bool", path);
    if (with_bos && bos < 0)
        return tf_fail(err, errn, "%s: tokenizer.ggml.add_bos_token is true but there is no "
                       "tokenizer.ggml.bos_token_id", path);

    gguf_str *tok = malloc(n * sizeof *tok);
    gguf_str *mer = malloc((merges->n ? (size_t)merges->n : 1) * sizeof *mer);
    int64_t *ty = types ? malloc(n * sizeof *ty) : NULL;
    json_t *root = NULL, *cfg = NULL;
    int rc = -1;
    if (!tok || !mer || (types && !ty)) {
        tf_fail(err, errn, "%s: out of memory for the vocabulary", path);
        goto done;
    }
    gguf_kv_strings(tokens, tok);
    gguf_kv_strings(merges, mer);
    if (types && gguf_kv_ints(types, ty) != 0) {
        tf_fail(err, errn, "%s: tokenizer.ggml.token_type must hold integers", path);
        goto done;
    }
    json_t *pt = pre_tokenizer(pre ? pre_name : NULL);
    if (!pt) {
        tf_fail(err, errn, "%s: tokenizer.ggml.pre is \"%s\", a pre-tokenizer tern does not know; "
                "it knows gpt-2, default, smollm, starcoder, refact, codeshell, llama-bpe, llama3 "
                "and qwen2", path, pre_name);
        goto done;
    }
    json_t *vocab = json_object(), *mlist = json_array(), *added = json_array();
    json_t **text = calloc(n, sizeof *text); /* each token's JSON string */
    root = json_object();
    json_t *bpe_model = json_object();
    cfg = json_object();
    int ok = vocab && mlist && added && text && root && bpe_model && cfg;
    if (ok) { /* root takes them all over, so one json_decref(root) frees them */
        json_object_set_new(root, "version", json_string("1.0"));
        json_object_set_new(root, "truncation", json_null());
        json_object_set_new(root, "padding", json_null());
        json_object_set_new(root, "added_tokens", added);
        json_object_set_new(root, "normalizer", json_null());
        json_object_set_new(root, "pre_tokenizer", pt);
        json_object_set_new(root, "post_processor", json_null());
        json_object_set_new(root, "decoder",
                            json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel",
                                      "add_prefix_space", 1, "trim_offsets", 1, "use_regex", 1));
        json_object_set_new(root, "model", bpe_model);
        json_object_set_new(bpe_model, "type", json_string("BPE"));
        json_object_set_new(bpe_model, "dropout", json_null());
        json_object_set_new(bpe_model, "unk_token", json_null());
        json_object_set_new(bpe_model, "continuing_subword_prefix", json_null());
        json_object_set_new(bpe_model, "end_of_word_suffix", json_null());
        json_object_set_new(bpe_model, "fuse_unk", json_false());
        json_object_set_new(bpe_model, "byte_fallback", json_false());
        json_object_set_new(bpe_model, "ignore_merges", json_false());
        json_object_set_new(bpe_model, "vocab", vocab);
        json_object_set_new(bpe_model, "merges", mlist);
    } else {
        json_decref(vocab), json_decref(mlist), json_decref(added), json_decref(pt);
        json_decref(bpe_model);
        free(text);
        tf_fail(err, errn, "%s: out of memory for the vocabulary", path);
        goto done;
    }
    for (size_t i = 0; i < n && ok; i++) {
        if (tok[i].len == 0 || memchr(tok[i].s, 0, tok[i].len) || !(text[i] = jstr(tok[i]))) {
            tf_fail(err, errn, "%s: tokenizer.ggml.tokens[%zu] is empty, holds a NUL or is not "
                    "UTF-8", path, i);
            ok = 0;
            break;
        }
        const char *key = json_string_value(text[i]);
        if (json_object_get(vocab, key)) {
            tf_fail(err, errn, "%s: tokenizer.ggml.tokens[%zu] \"%.60s\" appears twice", path, i,
                    key);
            ok = 0;
            break;
        }
        json_object_set_new(vocab, key, json_integer((json_int_t)i));
        int64_t t = ty ? ty[i] : TOKEN_NORMAL;
        if (t == TOKEN_CONTROL || t == TOKEN_USER_DEFINED)
            json_array_append_new(added, json_pack("{s:I, s:O, s:b, s:b, s:b, s:b, s:b}", "id",
                                                   (json_int_t)i, "content", text[i],
                                                   "single_word", 0, "lstrip", 0, "rstrip", 0,
                                                   "normalized", 0, "special",
                                                   t == TOKEN_CONTROL));
    }
    for (size_t i = 0; i < (size_t)merges->n && ok; i++) {
        json_t *m = jstr(mer[i]);
        if (!m) {
            tf_fail(err, errn, "%s: tokenizer.ggml.merges[%zu] is not UTF-8", path, i);
            ok = 0;
        }
        json_array_append_new(mlist, m);
    }
    if (ok && unk >= 0)
        json_object_set(bpe_model, "unk_token", text[unk]);
    if (ok && with_bos) { /* add_special_tokens puts BOS first */
        json_t *tp = bos_first(text[bos], bos);
        ok = tp && json_object_set_new(root, "post_processor", tp) == 0;
        if (!ok)
            tf_fail(err, errn, "%s: out of memory for the vocabulary", path);
    }
    if (ok) {
        json_object_set_new(cfg, "add_bos_token", json_boolean(with_bos));
        json_object_set_new(cfg, "add_eos_token", json_false());
        const char *names[] = {"bos_token", "eos_token", "unk_token", "pad_token"};
        int ids[] = {bos, eos, unk, pad};
        for (int i = 0; i < 4; i++)
            if (ids[i] >= 0)
                json_object_set(cfg, names[i], text[ids[i]]);
        if (tmpl) {
            json_t *c = gguf_kv_string(tmpl, &s) == 0 ? jstr(s) : NULL;
            if (!c) {
                tf_fail(err, errn, "%s: tokenizer.chat_template must be a UTF-8 string", path);
                ok = 0;
            }
            json_object_set_new(cfg, "chat_template", c);
        }
        json_object_set_new(cfg, "tokenizer_class", json_string("PreTrainedTokenizerFast"));
    }
    for (size_t i = 0; i < n; i++)
        json_decref(text[i]);
    free(text);
    if (!ok)
        goto done;
    *tokenizer_json = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    *config_json = json_dumps(cfg, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!*tokenizer_json || !*config_json) {
        free(*tokenizer_json), free(*config_json);
        *tokenizer_json = *config_json = NULL;
        tf_fail(err, errn, "%s: out of memory for the vocabulary", path);
        goto done;
    }
    *tokenizer_len = strlen(*tokenizer_json);
    *config_len = strlen(*config_json);
    rc = 0;
done:
    json_decref(root);
    json_decref(cfg);
    free(tok), free(mer), free(ty);
    return rc;
}
