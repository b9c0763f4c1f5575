/* llama_layout.c: the flat parameter layout and its Hugging Face names
 * (see llama.h). Order: the embeddings (GPT-2: wte, then wpe), then each
 * layer's tensors, then the final norm (GPT-2: weight, bias), then lm_head
 * when untied. A Llama without biases keeps the order it always had:
 * embed_tokens, per layer input_layernorm, q, k, v, o, post_attention_layernorm,
 * gate, up, down, then norm, lm_head. Every tensor sits where the HF file
 * has it, with its HF shape; only the views (llama_params_bind) know that
 * GPT-2's c_attn holds q, k and v side by side. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/llama.h"

const char *llama_arch_name(int arch)
{
    switch (arch) {
    case ARCH_LLAMA: return "LlamaForCausalLM";
    case ARCH_QWEN2: return "Qwen2ForCausalLM";
    case ARCH_GPT2: return "GPT2LMHeadModel";
    default: return "?";
    }
}

int llama_qkv_ld(const llama_config *c)
{
    return c->arch == ARCH_GPT2 ? 3 * c->hidden_size : c->hidden_size;
}

int llama_config_check(const llama_config *c, char *err, size_t errn)
{
#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf(err, errn, __VA_ARGS__);                                                      \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
    const int gpt2 = c->arch == ARCH_GPT2;
    REQUIRE(c->arch == ARCH_LLAMA || c->arch == ARCH_QWEN2 || gpt2,
            "architecture %d is not one tern implements", c->arch);
    REQUIRE(c->vocab_size > 0 && c->vocab_size <= (1 << 24), "vocab_size %d is not in 1..2^24",
            c->vocab_size);
    REQUIRE(c->hidden_size > 0 && c->hidden_size <= 65536, "hidden_size %d is not in 1..65536",
            c->hidden_size);
    REQUIRE(c->intermediate_size > 0 && c->intermediate_size <= 262144,
            "intermediate_size %d is not in 1..262144", c->intermediate_size);
    REQUIRE(c->n_layers > 0 && c->n_layers <= 1024, "num_hidden_layers %d is not in 1..1024",
            c->n_layers);
    REQUIRE(c->n_heads > 0 && c->hidden_size % c->n_heads == 0,
            "hidden_size %d is not a multiple of num_attention_heads %d", c->hidden_size,
            c->n_heads);
    REQUIRE(gpt2 || (c->hidden_size / c->n_heads) % 2 == 0, "head size %d must be even for RoPE",
            c->hidden_size / c->n_heads);
    REQUIRE(c->n_kv_heads > 0 && c->n_kv_heads <= c->n_heads && c->n_heads % c->n_kv_heads == 0,
            "num_key_value_heads %d must divide num_attention_heads %d", c->n_kv_heads,
            c->n_heads);
    REQUIRE(c->max_positions > 1 && c->max_positions <= (1 << 20),
            "max_position_embeddings %d is not in 2..2^20", c->max_positions);
    REQUIRE(c->rms_eps > 0 && c->rms_eps < 1, "norm epsilon %g is not in (0, 1)",
            (double)c->rms_eps);
    REQUIRE(gpt2 || c->rope_theta > 1, "rope_theta %g must be > 1", (double)c->rope_theta);
    if (c->rope_factor != 0) {
        REQUIRE(!gpt2, "GPT-2 has no RoPE to scale");
        REQUIRE(c->rope_factor >= 1, "rope_scaling factor %g must be >= 1",
                (double)c->rope_factor);
        REQUIRE(c->rope_low_freq > 0 && c->rope_high_freq > c->rope_low_freq,
                "rope_scaling low_freq_factor %g and high_freq_factor %g must satisfy 0 < low < "
                "high", (double)c->rope_low_freq, (double)c->rope_high_freq);
        REQUIRE(c->rope_orig_max_pos > 0,
                "rope_scaling original_max_position_embeddings %d must be > 0",
                c->rope_orig_max_pos);
    }
    if (gpt2)
        REQUIRE(c->n_kv_heads == c->n_heads && c->qkv_bias && c->o_bias && c->mlp_bias,
                "GPT-2 has as many key/value heads as heads and biases on every layer");
    REQUIRE(c->bos_id >= 0 && c->bos_id < c->vocab_size && c->eos_id >= 0 &&
                c->eos_id < c->vocab_size && c->pad_id >= 0 && c->pad_id < c->vocab_size,
            "special token ids (bos %d, eos %d, pad %d) must be below vocab_size %d", c->bos_id,
            c->eos_id, c->pad_id, c->vocab_size);
#undef REQUIRE
    return 0;
}

/* ---- the table ------------------------------------------------------------ */

/* Where a tensor's view goes: a field of llama_layer (by offset), or one of
 * these. */
enum { SLOT_QKV_W = -1, SLOT_QKV_B = -2, SLOT_NONE = -3 };
#define SLOT(field) ((int)offsetof(llama_layer, field))

typedef struct entry {
    const char *name; /* suffix after the layer's prefix, or the full name */
    int64_t d0, d1;   /* shape; d1 = 0 for a vector */
    int kind;         /* TENSOR_* */
    int slot;         /* SLOT(field) or SLOT_* */
} entry;

/* The tensors of one layer, in order; returns their count (at most 16). */
static int layer_entries(const llama_config *c, entry *e)
{
    const int64_t D = c->hidden_size, F = c->intermediate_size;
    const int64_t HD = D / c->n_heads, Q = c->n_heads * HD, K = c->n_kv_heads * HD;
    int n = 0;
#define ADD(nm, a, b, k, s) (e[n++] = (entry){nm, a, b, k, s})
    if (c->arch == ARCH_GPT2) {
        /* Conv1D weights are [in, out] */
        ADD("ln_1.weight", D, 0, TENSOR_NORM, SLOT(attn_norm));
        ADD("ln_1.bias", D, 0, TENSOR_BIAS, SLOT(attn_norm_b));
        ADD("attn.c_attn.weight", D, 3 * D, TENSOR_MATRIX, SLOT_QKV_W);
        ADD("attn.c_attn.bias", 3 * D, 0, TENSOR_BIAS, SLOT_QKV_B);
        ADD("attn.c_proj.weight", D, D, TENSOR_MATRIX, SLOT(wo));
        ADD("attn.c_proj.bias", D, 0, TENSOR_BIAS, SLOT(bo));
        ADD("ln_2.weight", D, 0, TENSOR_NORM, SLOT(mlp_norm));
        ADD("ln_2.bias", D, 0, TENSOR_BIAS, SLOT(mlp_norm_b));
        ADD("mlp.c_fc.weight", D, F, TENSOR_MATRIX, SLOT(w_up));
        ADD("mlp.c_fc.bias", F, 0, TENSOR_BIAS, SLOT(b_up));
        ADD("mlp.c_proj.weight", F, D, TENSOR_MATRIX, SLOT(w_down));
        ADD("mlp.c_proj.bias", D, 0, TENSOR_BIAS, SLOT(b_down));
        return n;
    }
    ADD("input_layernorm.weight", D, 0, TENSOR_NORM, SLOT(attn_norm));
    ADD("self_attn.q_proj.weight", Q, D, TENSOR_MATRIX, SLOT(wq));
    if (c->qkv_bias)
        ADD("self_attn.q_proj.bias", Q, 0, TENSOR_BIAS, SLOT(bq));
    ADD("self_attn.k_proj.weight", K, D, TENSOR_MATRIX, SLOT(wk));
    if (c->qkv_bias)
        ADD("self_attn.k_proj.bias", K, 0, TENSOR_BIAS, SLOT(bk));
    ADD("self_attn.v_proj.weight", K, D, TENSOR_MATRIX, SLOT(wv));
    if (c->qkv_bias)
        ADD("self_attn.v_proj.bias", K, 0, TENSOR_BIAS, SLOT(bv));
    ADD("self_attn.o_proj.weight", D, Q, TENSOR_MATRIX, SLOT(wo));
    if (c->o_bias)
        ADD("self_attn.o_proj.bias", D, 0, TENSOR_BIAS, SLOT(bo));
    ADD("post_attention_layernorm.weight", D, 0, TENSOR_NORM, SLOT(mlp_norm));
    ADD("mlp.gate_proj.weight", F, D, TENSOR_MATRIX, SLOT(w_gate));
    if (c->mlp_bias)
        ADD("mlp.gate_proj.bias", F, 0, TENSOR_BIAS, SLOT(b_gate));
    ADD("mlp.up_proj.weight", F, D, TENSOR_MATRIX, SLOT(w_up));
    if (c->mlp_bias)
        ADD("mlp.up_proj.bias", F, 0, TENSOR_BIAS, SLOT(b_up));
    ADD("mlp.down_proj.weight", D, F, TENSOR_MATRIX, SLOT(w_down));
    if (c->mlp_bias)
        ADD("mlp.down_proj.bias", D, 0, TENSOR_BIAS, SLOT(b_down));
    return n;
}

/* The tensors before the layers (n_pre) and after them (n_post). */
static int pre_entries(const llama_config *c, entry *e)
{
    const int64_t V = c->vocab_size, D = c->hidden_size, P = c->max_positions;
    if (c->arch == ARCH_GPT2) {
        e[0] = (entry){"transformer.wte.weight", V, D, TENSOR_MATRIX, SLOT_NONE};
        e[1] = (entry){"transformer.wpe.weight", P, D, TENSOR_MATRIX, SLOT_NONE};
        return 2;
    }
    e[0] = (entry){"model.embed_tokens.weight", V, D, TENSOR_MATRIX, SLOT_NONE};
    return 1;
}

static int post_entries(const llama_config *c, entry *e)
{
    const int64_t V = c->vocab_size, D = c->hidden_size;
    int n = 0;
    if (c->arch == ARCH_GPT2) {
        e[n++] = (entry){"transformer.ln_f.weight", D, 0, TENSOR_NORM, SLOT_NONE};
        e[n++] = (entry){"transformer.ln_f.bias", D, 0, TENSOR_BIAS, SLOT_NONE};
    } else {
        e[n++] = (entry){"model.norm.weight", D, 0, TENSOR_NORM, SLOT_NONE};
    }
    if (!c->tie_embeddings)
        e[n++] = (entry){"lm_head.weight", V, D, TENSOR_MATRIX, SLOT_NONE};
    return n;
}

static size_t numel_of(const entry *e) { return (size_t)e->d0 * (size_t)(e->d1 ? e->d1 : 1); }

static size_t sum_numel(const entry *e, int n)
{
    size_t s = 0;
    for (int k = 0; k < n; k++)
        s += numel_of(&e[k]);
    return s;
}

size_t llama_tensor_count(const llama_config *c)
{
    entry e[16];
    size_t n = (size_t)pre_entries(c, e) + (size_t)post_entries(c, e);
    return n + (size_t)layer_entries(c, e) * (size_t)c->n_layers;
}

static void set_info(llama_tensor_info *out, const char *prefix, const entry *e, size_t offset)
{
    snprintf(out->name, sizeof out->name, "%s%s", prefix, e->name);
    out->kind = e->kind;
    out->ndim = e->d1 ? 2 : 1;
    out->shape[0] = e->d0;
    out->shape[1] = e->d1;
    out->numel = numel_of(e);
    out->offset = offset;
}

/* Tensor i, and the layer it belongs to (-1: none) and its slot there. */
static void describe(const llama_config *c, size_t i, llama_tensor_info *out, int *layer,
                     int *slot)
{
    entry pre[2], lay[16], post[3];
    const size_t n_pre = (size_t)pre_entries(c, pre), n_lay = (size_t)layer_entries(c, lay);
    size_t offset = 0;
    *layer = -1;
    *slot = SLOT_NONE;
    if (i < n_pre) {
        set_info(out, "", &pre[i], sum_numel(pre, (int)i));
        return;
    }
    offset = sum_numel(pre, (int)n_pre);
    i -= n_pre;
    if (i < n_lay * (size_t)c->n_layers) {
        size_t li = i / n_lay, k = i % n_lay;
        offset += li * sum_numel(lay, (int)n_lay) + sum_numel(lay, (int)k);
        char prefix[32];
        snprintf(prefix, sizeof prefix, c->arch == ARCH_GPT2 ? "transformer.h.%zu." :
                 "model.layers.%zu.", li);
        set_info(out, prefix, &lay[k], offset);
        *layer = (int)li;
        *slot = lay[k].slot;
        return;
    }
    offset += (size_t)c->n_layers * sum_numel(lay, (int)n_lay);
    i -= n_lay * (size_t)c->n_layers;
    post_entries(c, post);
    set_info(out, "", &post[i], offset + sum_numel(post, (int)i));
}

void llama_tensor_describe(const llama_config *c, size_t i, llama_tensor_info *out)
{
    int layer, slot;
    describe(c, i, out, &layer, &slot);
}

size_t llama_param_count(const llama_config *c)
{
    llama_tensor_info last;
    llama_tensor_describe(c, llama_tensor_count(c) - 1, &last);
    return last.offset + last.numel;
}

int llama_params_bind(llama_params *p, const llama_config *c, float *flat)
{
    memset(p, 0, sizeof *p);
    p->layers = calloc((size_t)c->n_layers, sizeof *p->layers);
    if (!p->layers)
        return -1;
    const size_t D = (size_t)c->hidden_size;
    llama_tensor_info t;
    size_t n = llama_tensor_count(c);
    for (size_t i = 0; i < n; i++) {
        int layer, slot;
        describe(c, i, &t, &layer, &slot);
        float *at = flat + t.offset;
        if (layer >= 0) {
            llama_layer *ly = &p->layers[layer];
            if (slot == SLOT_QKV_W || slot == SLOT_QKV_B) {
                /* c_attn: q, k, v side by side in each row [D, 3D] (weight) or
                 * in the vector [3D] (bias) */
                int weight = slot == SLOT_QKV_W;
                *(weight ? &ly->wq : &ly->bq) = at;
                *(weight ? &ly->wk : &ly->bk) = at + D;
                *(weight ? &ly->wv : &ly->bv) = at + 2 * D;
            } else {
                *(float **)((char *)ly + slot) = at;
            }
        } else if (strcmp(t.name, "model.embed_tokens.weight") == 0 ||
                   strcmp(t.name, "transformer.wte.weight") == 0) {
            p->embed = at;
        } else if (strcmp(t.name, "transformer.wpe.weight") == 0) {
            p->pos_embed = at;
        } else if (strcmp(t.name, "model.norm.weight") == 0 ||
                   strcmp(t.name, "transformer.ln_f.weight") == 0) {
            p->final_norm = at;
        } else if (strcmp(t.name, "transformer.ln_f.bias") == 0) {
            p->final_norm_b = at;
        } else {
            p->lm_head = at;
        }
    }
    if (c->tie_embeddings)
        p->lm_head = p->embed;
    return 0;
}

void llama_params_unbind(llama_params *p)
{
    free(p->layers);
    memset(p, 0, sizeof *p);
}
