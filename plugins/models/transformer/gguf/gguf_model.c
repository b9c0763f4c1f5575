/* gguf_model.c: a GGUF file as a tern decoder (see gguf_model.h). */
#include "gguf/gguf_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fail.h"
#include "gguf/gguf_dequant.h"
#include "gguf/gguf_vocab.h"
#include "tern/support/regular_file.h"

int gguf_model_is_gguf(const char *path)
{
    char head[4];
    char why[TERN_REGULAR_WHY_MAX];
    int fd = tern_regular_open(path, 0, NULL, why, sizeof why);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n == (ssize_t)sizeof head && gguf_is_gguf(head, sizeof head);
}

/* ---- config ------------------------------------------------------------------ */

typedef struct keys {
    const gguf_file *f;
    const char *path, *arch;
    char *err;
    size_t errn;
} keys;

/* ARCH.name as an integer in lo..hi: 1 found, 0 absent (def kept), -1 error. */
static int key_int(const keys *k, const char *name, int64_t lo, int64_t hi, int *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", k->arch, name);
    const gguf_kv *kv = gguf_find_kv(k->f, key);
    int64_t v;
    if (!kv)
        return 0;
    if (gguf_kv_int(kv, &v) != 0 || v < lo || v > hi)
        return tf_fail(k->err, k->errn, "%s: %s must be an integer from %lld to %lld", k->path,
                       key, (long long)lo, (long long)hi);
    *out = (int)v;
    return 1;
}

static int need_int(const keys *k, const char *name, int64_t lo, int64_t hi, int *out)
{
    int rc = key_int(k, name, lo, hi, out);
    if (rc == 0)
        return tf_fail(k->err, k->errn, "%s: key %s.%s is missing (a %s model needs it)", k->path,
                       k->arch, name, k->arch);
    return rc;
}

static int key_real(const keys *k, const char *name, float *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", k->arch, name);
    const gguf_kv *kv = gguf_find_kv(k->f, key);
    double v;
    if (!kv)
        return 0;
    if (gguf_kv_real(kv, &v) != 0 || !(v > 0) || v > 1e30)
        return tf_fail(k->err, k->errn, "%s: %s must be a positive number", k->path, key);
    *out = (float)v;
    return 1;
}

static int token_key(const gguf_file *f, const char *key)
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    int64_t v;
    return kv && gguf_kv_int(kv, &v) == 0 && v >= 0 && v < (1 << 24) ? (int)v : -1;
}

int gguf_model_config(const gguf_file *f, const char *path, llama_config *c, char *err,
                      size_t errn)
{
    memset(c, 0, sizeof *c);
    const gguf_kv *a = gguf_find_kv(f, "general.architecture");
    gguf_str s;
    char arch[32] = "";
    if (!a || gguf_kv_string(a, &s) != 0)
        return tf_fail(err, errn, "%s: general.architecture is missing or not a string", path);
    if (s.len < sizeof arch) {
        memcpy(arch, s.s, s.len);
        arch[s.len] = 0;
    }
    if (memchr(s.s, '\0', s.len))
        return tf_fail(err, errn, "%s: general.architecture holds a NUL byte (%zu bytes, "
                       "\"%s\" before it): a corrupt or hand-made file", path, s.len,
                       s.len < sizeof arch ? arch : "...");
    /* the string's whole length: "llama\0xx" is no llama */
    if (s.len == 5 && memcmp(s.s, "llama", 5) == 0)
        c->arch = ARCH_LLAMA;
    else if (s.len == 5 && memcmp(s.s, "qwen2", 5) == 0)
        c->arch = ARCH_QWEN2, c->qkv_bias = 1;
    else
        return tf_fail(err, errn, "%s: general.architecture is \"%.*s\"; tern's transformer "
                       "reads GGUF models of the llama and qwen2 architectures", path,
                       (int)(s.len > 40 ? 40 : s.len), s.s);
    keys k = {f, path, arch, err, errn};
    int experts = 0, dims = 0, key_len = 0, value_len = 0;
    float scale = 0;
    if (need_int(&k, "embedding_length", 1, 65536, &c->hidden_size) < 0 ||
        need_int(&k, "feed_forward_length", 1, 1 << 20, &c->intermediate_size) < 0 ||
        need_int(&k, "block_count", 1, 1024, &c->n_layers) < 0 ||
        need_int(&k, "attention.head_count", 1, 4096, &c->n_heads) < 0 ||
        need_int(&k, "context_length", 2, 1 << 20, &c->max_positions) < 0)
        return -1;
    c->n_kv_heads = c->n_heads;
    c->rope_theta = 10000.0f;
    c->rms_eps = 1e-5f;
    if (key_int(&k, "attention.head_count_kv", 1, 4096, &c->n_kv_heads) < 0 ||
        key_real(&k, "rope.freq_base", &c->rope_theta) < 0 ||
        key_real(&k, "attention.layer_norm_rms_epsilon", &c->rms_eps) < 0 ||
        key_int(&k, "expert_count", 0, 1 << 20, &experts) < 0 ||
        key_int(&k, "rope.dimension_count", 0, 1 << 20, &dims) < 0 ||
        key_int(&k, "attention.key_length", 0, 1 << 20, &key_len) < 0 ||
        key_int(&k, "attention.value_length", 0, 1 << 20, &value_len) < 0 ||
        key_real(&k, "rope.scaling.factor", &scale) < 0)
        return -1;
    const int hd = c->n_heads > 0 ? c->hidden_size / c->n_heads : 0;
    if (experts > 0)
        return tf_fail(err, errn, "%s: %s.expert_count is %d: a mixture of experts, which tern's "
                       "decoder does not implement", path, arch, experts);
    if ((dims && dims != hd) || (key_len && key_len != hd) || (value_len && value_len != hd))
        return tf_fail(err, errn, "%s: the head size is %d (embedding_length / head_count) but "
                       "%s.rope.dimension_count, attention.key_length or value_length says "
                       "otherwise; tern's decoder rotates and attends over whole heads", path, hd,
                       arch);
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    const gguf_kv *st = gguf_find_kv(f, key);
    if (st && (gguf_kv_string(st, &s) != 0 || !(s.len == 4 && memcmp(s.s, "none", 4) == 0)))
        return tf_fail(err, errn, "%s: %s is set: RoPE scaling from a GGUF file is not "
                       "supported (convert the Hugging Face checkpoint instead)", path, key);
    if (scale != 0 && scale != 1)
        return tf_fail(err, errn, "%s: %s.rope.scaling.factor is %g: RoPE scaling from a GGUF "
                       "file is not supported", path, arch, (double)scale);
    const gguf_kv *tokens = gguf_find_kv(f, "tokenizer.ggml.tokens");
    int vocab = tokens && tokens->type == GGUF_TYPE_ARRAY ? (int)tokens->n : 0;
    if (key_int(&k, "vocab_size", 1, 1 << 24, &vocab) < 0)
        return -1;
    const gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
    if (emb && emb->n_dims == 2 && emb->ne[1] > vocab && emb->ne[1] <= (1 << 24))
        vocab = (int)emb->ne[1]; /* embedding rows padded past the tokenizer's */
    if (vocab < 1)
        return tf_fail(err, errn, "%s: no vocabulary size: neither %s.vocab_size nor "
                       "tokenizer.ggml.tokens", path, arch);
    c->vocab_size = vocab;
    c->tie_embeddings = gguf_find_tensor(f, "output.weight") == NULL;
    /* Llama's optional biases (attention_bias, mlp_bias), as the tensors show them */
    c->qkv_bias |= gguf_find_tensor(f, "blk.0.attn_q.bias") != NULL;
    c->o_bias = gguf_find_tensor(f, "blk.0.attn_output.bias") != NULL;
    c->mlp_bias = gguf_find_tensor(f, "blk.0.ffn_up.bias") != NULL;
    c->bos_id = token_key(f, "tokenizer.ggml.bos_token_id");
    c->eos_id = token_key(f, "tokenizer.ggml.eos_token_id");
    c->pad_id = token_key(f, "tokenizer.ggml.padding_token_id");
    /* the key a missing id is read from, named (not "bos -1 must be below
     * vocab_size"); padding, which tern never trains on, falls back to EOS */
    static const char *const need[2] = {"bos", "eos"};
    for (int which = 0; which < 2; which++)
        if ((which ? c->eos_id : c->bos_id) < 0)
            return tf_fail(err, errn, "%s: tokenizer.ggml.%s_token_id is missing or not a token "
                           "id (an integer from 0): tern needs the model's %s token; set it "
                           "(gguf-py's gguf_set_metadata.py) or load the Hugging Face "
                           "checkpoint", path, need[which],
                           which ? "end-of-sequence" : "beginning-of-sequence");
    if (c->pad_id < 0)
        c->pad_id = c->eos_id;
    char why[512];
    if (llama_config_check(c, why, sizeof why) != 0)
        return tf_fail(err, errn, "%s: %s", path, why);
    return 0;
}

/* ---- weights ----------------------------------------------------------------- */

/* The GGUF name of the HF tensor `hf` into out; 0, or -1 when it has none. */
static int gguf_name(const char *hf, char *out, size_t n)
{
    static const char *const map[][2] = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.o_proj.bias", "attn_output.bias"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
        {"mlp.gate_proj.bias", "ffn_gate.bias"},
        {"mlp.up_proj.bias", "ffn_up.bias"},
        {"mlp.down_proj.bias", "ffn_down.bias"},
    };
    if (strcmp(hf, "model.embed_tokens.weight") == 0)
        return snprintf(out, n, "token_embd.weight") < 0 ? -1 : 0;
    if (strcmp(hf, "model.norm.weight") == 0)
        return snprintf(out, n, "output_norm.weight") < 0 ? -1 : 0;
    if (strcmp(hf, "lm_head.weight") == 0)
        return snprintf(out, n, "output.weight") < 0 ? -1 : 0;
    int layer, used = 0;
    if (sscanf(hf, "model.layers.%d.%n", &layer, &used) != 1 || used == 0)
        return -1;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(hf + used, map[i][0]) == 0)
            return snprintf(out, n, "blk.%d.%s", layer, map[i][1]) < 0 ? -1 : 0;
    return -1;
}

/* Undo llama.cpp's RoPE row order of a q or k projection [heads * HD, cols]
 * (cols 1 for a bias): HF row h*HD + s*HD/2 + j = GGUF row h*HD + 2j + s. */
static int unpermute_rows(float *w, int heads, int hd, size_t cols)
{
    float *tmp = malloc((size_t)hd * cols * sizeof *tmp);
    if (!tmp)
        return -1;
    for (int h = 0; h < heads; h++) {
        float *head = w + (size_t)h * hd * cols;
        memcpy(tmp, head, (size_t)hd * cols * sizeof *tmp);
        for (int j = 0; j < hd / 2; j++)
            for (int s = 0; s < 2; s++)
                memcpy(head + (size_t)(s * hd / 2 + j) * cols, tmp + (size_t)(2 * j + s) * cols,
                       cols * sizeof *tmp);
    }
    free(tmp);
    return 0;
}

/* Tensor i of the layout of c, found in f and checked: its GGUF tensor in
 * *out, or -1 with a message naming it. `used` marks the file's tensors. */
static int layout_tensor(const gguf_file *f, const char *path, const llama_config *c, size_t i,
                         char *used, llama_tensor_info *t, const gguf_tensor **out, char *err,
                         size_t errn)
{
    llama_tensor_describe(c, i, t);
    char name[GGUF_NAME_MAX];
    if (gguf_name(t->name, name, sizeof name) != 0)
        return tf_fail(err, errn, "%s: tern has no GGUF name for tensor %s", path, t->name);
    const gguf_tensor *g = gguf_find_tensor(f, name);
    if (!g)
        return tf_fail(err, errn, "%s: tensor %s (%s) is missing", path, name, t->name);
    used[g - f->tensors] = 1;
    /* GGUF's ne is {cols, rows}; tern's shape is [rows, cols] */
    int64_t rows = t->ndim == 2 ? t->shape[0] : 1, cols = t->ndim == 2 ? t->shape[1] : t->shape[0];
    int same = (int)g->n_dims == t->ndim && g->ne[0] == cols && (t->ndim == 1 || g->ne[1] == rows);
    if (!same)
        return tf_fail(err, errn, "%s: tensor %s has ne [%lld, %lld, %lld, %lld] (%u dims); the "
                       "config implies ne [%lld%s%.0lld]", path, name, (long long)g->ne[0],
                       (long long)g->ne[1], (long long)g->ne[2], (long long)g->ne[3], g->n_dims,
                       (long long)cols, t->ndim == 2 ? ", " : "",
                       t->ndim == 2 ? (long long)rows : 0);
    ggml_type_info ti;
    ggml_type_describe(g->type, &ti);
    if (!ti.supported || !g->data)
        return tf_fail(err, errn, "%s: tensor %s is of type %s (ggml type %u), which tern does "
                       "not read; it reads %s (requantize the model, or convert it from the "
                       "Hugging Face checkpoint)", path, name, ti.name, g->type,
                       ggml_supported_names);
    *out = g;
    return 0;
}

/* Every tensor of f is one the layout uses (marked in `used`). */
static int no_other_tensor(const gguf_file *f, const char *path, const llama_config *c,
                           const char *used, char *err, size_t errn)
{
    for (size_t i = 0; i < f->n_tensors; i++)
        if (!used[i])
            return tf_fail(err, errn, "%s: tensor %s is not one tern's %s decoder uses (%s); "
                           "loading without it would compute a different model", path,
                           f->tensors[i].name, llama_arch_name(c->arch),
                           strcmp(f->tensors[i].name, "rope_freqs.weight") == 0
                               ? "Llama 3 RoPE scaling: convert the Hugging Face checkpoint "
                                 "instead"
                               : "an architecture variant");
    return 0;
}

int gguf_model_check_tensors(const gguf_file *f, const char *path, const llama_config *c,
                             char *err, size_t errn)
{
    char *used = calloc(f->n_tensors ? f->n_tensors : 1, 1);
    if (!used)
        return tf_fail(err, errn, "%s: out of memory", path);
    int rc = 0;
    llama_tensor_info t;
    const gguf_tensor *g;
    for (size_t i = 0; rc == 0 && i < llama_tensor_count(c); i++)
        rc = layout_tensor(f, path, c, i, used, &t, &g, err, errn);
    if (rc == 0)
        rc = no_other_tensor(f, path, c, used, err, errn);
    free(used);
    return rc;
}

int gguf_model_load_weights(const gguf_file *f, const char *path, llama_model *m, char *err,
                            size_t errn)
{
    const llama_config *c = &m->cfg;
    const int hd = c->hidden_size / c->n_heads;
    char *used = calloc(f->n_tensors ? f->n_tensors : 1, 1);
    if (!used)
        return tf_fail(err, errn, "%s: out of memory", path);
    int rc = -1;
    llama_tensor_info t;
    for (size_t i = 0; i < llama_tensor_count(c); i++) {
        const gguf_tensor *g;
        if (layout_tensor(f, path, c, i, used, &t, &g, err, errn) != 0)
            goto done;
        int64_t cols = t.ndim == 2 ? t.shape[1] : t.shape[0];
        ggml_type_info ti;
        ggml_type_describe(g->type, &ti);
        float *dst = m->params + t.offset;
        if (gguf_dequantize(g->type, g->data, t.numel, dst) != 0) {
            tf_fail(err, errn, "%s: tensor %s: cannot dequantize %zu weights of type %s", path,
                    g->name, t.numel, ti.name);
            goto done;
        }
        int is_q = strstr(t.name, "self_attn.q_proj.") != NULL;
        int is_k = strstr(t.name, "self_attn.k_proj.") != NULL;
        if (c->arch == ARCH_LLAMA && (is_q || is_k) &&
            unpermute_rows(dst, is_q ? c->n_heads : c->n_kv_heads, hd,
                           t.ndim == 2 ? (size_t)cols : 1) != 0) {
            tf_fail(err, errn, "%s: out of memory", path);
            goto done;
        }
    }
    rc = no_other_tensor(f, path, c, used, err, errn);
done:
    free(used);
    return rc;
}

int gguf_model_load(const char *path, llama_model *m, tokenizer **tok, char **tokenizer_config,
                    char *err, size_t errn)
{
    gguf_file f;
    llama_config c;
    char *tj = NULL, *cj = NULL, *copy = NULL;
    size_t tl = 0, cl = 0;
    *tok = NULL;
    memset(m, 0, sizeof *m);
    if (tokenizer_config)
        *tokenizer_config = NULL;
    if (gguf_open(path, &f, err, errn) != 0)
        return -1;
    int rc = -1;
    if (gguf_model_config(&f, path, &c, err, errn) != 0 ||
        gguf_vocab_texts(&f, path, &tj, &tl, &cj, &cl, err, errn) != 0)
        goto done;
    if (tokenizer_config && !(copy = strdup(cj))) {
        free(tj), free(cj);
        tf_fail(err, errn, "%s: out of memory", path);
        goto done;
    }
    /* tokenizer_load_text takes both texts over */
    if (tokenizer_load_text(path, tj, tl, cj, cl, tok, err, errn) != 0)
        goto done;
    if (tokenizer_vocab_size(*tok) > c.vocab_size) {
        tf_fail(err, errn, "%s: the tokenizer has %d tokens but the model's vocab_size is %d",
                path, tokenizer_vocab_size(*tok), c.vocab_size);
        goto done;
    }
    /* every tensor's name, shape and type before anything the config
     * implies is allocated: a header alone cannot cost gigabytes */
    if (gguf_model_check_tensors(&f, path, &c, err, errn) != 0 ||
        llama_model_init(m, &c, err, errn) != 0 ||
        gguf_model_load_weights(&f, path, m, err, errn) != 0)
        goto done;
    rc = 0;
done:
    gguf_close(&f);
    if (rc != 0) {
        llama_model_free(m);
        tokenizer_free(*tok);
        *tok = NULL;
        free(copy);
        copy = NULL;
    }
    if (tokenizer_config)
        *tokenizer_config = copy;
    return rc;
}
