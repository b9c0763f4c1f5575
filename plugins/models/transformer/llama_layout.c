/* llama_layout.c: the flat parameter layout and its Hugging Face names
 * (see llama.h). Order: embed_tokens, then each layer's tensors, then norm,
 * then lm_head when untied. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

int llama_config_check(const llama_config *c, char *err, size_t errn)
{
#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf(err, errn, __VA_ARGS__);                                                      \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
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
    REQUIRE((c->hidden_size / c->n_heads) % 2 == 0, "head size %d must be even for RoPE",
            c->hidden_size / c->n_heads);
    REQUIRE(c->n_kv_heads > 0 && c->n_kv_heads <= c->n_heads && c->n_heads % c->n_kv_heads == 0,
            "num_key_value_heads %d must divide num_attention_heads %d", c->n_kv_heads,
            c->n_heads);
    REQUIRE(c->max_positions > 1 && c->max_positions <= (1 << 20),
            "max_position_embeddings %d is not in 2..2^20", c->max_positions);
    REQUIRE(c->rms_eps > 0 && c->rms_eps < 1, "rms_norm_eps %g is not in (0, 1)",
            (double)c->rms_eps);
    REQUIRE(c->rope_theta > 1, "rope_theta %g must be > 1", (double)c->rope_theta);
    REQUIRE(c->bos_id >= 0 && c->bos_id < c->vocab_size && c->eos_id >= 0 &&
                c->eos_id < c->vocab_size && c->pad_id >= 0 && c->pad_id < c->vocab_size,
            "special token ids (bos %d, eos %d, pad %d) must be below vocab_size %d", c->bos_id,
            c->eos_id, c->pad_id, c->vocab_size);
#undef REQUIRE
    return 0;
}

size_t llama_tensor_count(const llama_config *c)
{
    return 1 + 9 * (size_t)c->n_layers + 1 + (c->tie_embeddings ? 0 : 1);
}

/* Fill `out` for a tensor of `ndim` dims starting at *offset, and advance it. */
static void set_info(llama_tensor_info *out, const char *name, int64_t d0, int64_t d1,
                     size_t *offset)
{
    snprintf(out->name, sizeof out->name, "%s", name);
    out->ndim = d1 ? 2 : 1;
    out->shape[0] = d0;
    out->shape[1] = d1;
    out->numel = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    out->offset = *offset;
    *offset += out->numel;
}

void llama_tensor_describe(const llama_config *c, size_t i, llama_tensor_info *out)
{
    const int64_t V = c->vocab_size, D = c->hidden_size, F = c->intermediate_size;
    const int64_t HD = D / c->n_heads, Q = c->n_heads * HD, K = c->n_kv_heads * HD;
    static const char *const layer_names[9] = {
        "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
        "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
        "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"};
    const int64_t layer_shapes[9][2] = {{D, 0}, {Q, D}, {K, D}, {K, D}, {D, Q},
                                        {D, 0}, {F, D}, {F, D}, {D, F}};
    size_t layer_numel = 0;
    for (int k = 0; k < 9; k++)
        layer_numel += (size_t)layer_shapes[k][0] * (size_t)(layer_shapes[k][1] ? layer_shapes[k][1] : 1);

    size_t offset = 0;
    if (i == 0) {
        set_info(out, "model.embed_tokens.weight", V, D, &offset);
        return;
    }
    offset = (size_t)(V * D);
    size_t li = (i - 1) / 9, k = (i - 1) % 9;
    if (li < (size_t)c->n_layers) {
        offset += li * layer_numel;
        for (size_t j = 0; j < k; j++)
            offset += (size_t)layer_shapes[j][0] * (size_t)(layer_shapes[j][1] ? layer_shapes[j][1] : 1);
        char name[96];
        snprintf(name, sizeof name, "model.layers.%zu.%s", li, layer_names[k]);
        set_info(out, name, layer_shapes[k][0], layer_shapes[k][1], &offset);
        return;
    }
    offset += (size_t)c->n_layers * layer_numel;
    if (i == 1 + 9 * (size_t)c->n_layers) {
        set_info(out, "model.norm.weight", D, 0, &offset);
        return;
    }
    offset += (size_t)D;
    set_info(out, "lm_head.weight", V, D, &offset);
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
    llama_tensor_info t;
    size_t n = llama_tensor_count(c);
    for (size_t i = 0; i < n; i++) {
        llama_tensor_describe(c, i, &t);
        float *at = flat + t.offset;
        if (i == 0) {
            p->embed = at;
        } else if (i <= 9 * (size_t)c->n_layers) {
            llama_layer *ly = &p->layers[(i - 1) / 9];
            float **slot[9] = {&ly->attn_norm, &ly->wq,     &ly->wk,   &ly->wv,    &ly->wo,
                               &ly->mlp_norm,  &ly->w_gate, &ly->w_up, &ly->w_down};
            *slot[(i - 1) % 9] = at;
        } else if (i == 1 + 9 * (size_t)c->n_layers) {
            p->final_norm = at;
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
