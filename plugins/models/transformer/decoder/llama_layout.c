/* llama_layout.c: the flat parameter layout and its Hugging Face names
 * (see llama.h). Order: the embeddings (GPT-2: wte, then wpe), then each
 * layer's tensors, then the final norm (GPT-2: weight, bias), then lm_head
 * when untied. A LLaVA (vision.layers > 0) names those "language_model." +
 * the Llama name and goes on with the projector, then the CLIP tower: its
 * embeddings and pre-norm, each layer, the post-norm (in the files, unused),
 * in llava-hf's names (vision_tower.vision_model.X), which every
 * transformers version loads. A Llama without biases keeps the order it always had:
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
    const llama_vision *v = &c->vision;
    if (v->layers > 0) {
        REQUIRE(!gpt2, "a LLaVA's language model is Llama or Qwen2, not GPT-2");
        REQUIRE(v->layers <= 1024, "vision_config.num_hidden_layers %d is not in 1..1024",
                v->layers);
        REQUIRE(v->hidden > 0 && v->hidden <= 65536 && v->heads > 0 && v->hidden % v->heads == 0,
                "vision_config.hidden_size %d must be in 1..65536 and a multiple of "
                "num_attention_heads %d", v->hidden, v->heads);
        REQUIRE(v->intermediate > 0 && v->intermediate <= 262144,
                "vision_config.intermediate_size %d is not in 1..262144", v->intermediate);
        REQUIRE(v->channels == 3, "vision_config.num_channels is %d; images are RGB (3)",
                v->channels);
        REQUIRE(v->patch > 0 && v->image >= v->patch && v->image <= 4096 &&
                    v->image % v->patch == 0,
                "vision_config.image_size %d must be a multiple of patch_size %d (at most 4096)",
                v->image, v->patch);
        REQUIRE(v->eps > 0 && v->eps < 1, "vision_config.layer_norm_eps %g is not in (0, 1)",
                (double)v->eps);
        REQUIRE((v->feature_layer < 0 && v->feature_layer >= -v->layers) ||
                    (v->feature_layer > 0 && v->feature_layer <= v->layers),
                "vision_feature_layer %d must name a layer of the %d: -%d..-1 or 1..%d",
                v->feature_layer, v->layers, v->layers, v->layers);
        REQUIRE(v->image_token >= 0 && v->image_token < c->vocab_size,
                "image_token_index %d must be below the text vocab_size %d", v->image_token,
                c->vocab_size);
        const int g = v->image / v->patch;
        REQUIRE(g * g < c->max_positions, "an image takes %d positions (%d x %d patches), "
                "max_position_embeddings is %d", g * g, g, g, c->max_positions);
        for (int ch = 0; ch < 3; ch++)
            REQUIRE(v->std[ch] > 0, "image_std[%d] is %g; it must be > 0", ch, (double)v->std[ch]);
    }
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
    int slot;         /* SLOT(field) or SLOT_*; for vision tensors a field offset */
    int64_t d2, d3;   /* the patch convolution's 4 dimensions: d2, d3 > 0 */
} entry;

/* The tensors of one layer, in order; returns their count (at most 16). */
static int layer_entries(const llama_config *c, entry *e)
{
    const int64_t D = c->hidden_size, F = c->intermediate_size;
    const int64_t HD = D / c->n_heads, Q = c->n_heads * HD, K = c->n_kv_heads * HD;
    int n = 0;
#define ADD(nm, a, b, k, s) (e[n++] = (entry){nm, a, b, k, s, 0, 0})
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
        e[0] = (entry){"transformer.wte.weight", V, D, TENSOR_MATRIX, SLOT_NONE, 0, 0};
        e[1] = (entry){"transformer.wpe.weight", P, D, TENSOR_MATRIX, SLOT_NONE, 0, 0};
        return 2;
    }
    e[0] = (entry){"model.embed_tokens.weight", V, D, TENSOR_MATRIX, SLOT_NONE, 0, 0};
    return 1;
}

static int post_entries(const llama_config *c, entry *e)
{
    const int64_t V = c->vocab_size, D = c->hidden_size;
    int n = 0;
    if (c->arch == ARCH_GPT2) {
        e[n++] = (entry){"transformer.ln_f.weight", D, 0, TENSOR_NORM, SLOT_NONE, 0, 0};
        e[n++] = (entry){"transformer.ln_f.bias", D, 0, TENSOR_BIAS, SLOT_NONE, 0, 0};
    } else {
        e[n++] = (entry){"model.norm.weight", D, 0, TENSOR_NORM, SLOT_NONE, 0, 0};
    }
    if (!c->tie_embeddings)
        e[n++] = (entry){"lm_head.weight", V, D, TENSOR_MATRIX, SLOT_NONE, 0, 0};
    return n;
}

/* ---- the vision tower (LLaVA) ----------------------------------------------- */

#define VSLOT(field) ((int)offsetof(clip_params, field))
#define VLSLOT(field) ((int)offsetof(clip_layer, field))
#define VISION_PREFIX "vision_tower.vision_model."

/* The projector, the embeddings and the pre-norm: what comes before the
 * tower's layers (9 tensors). */
static int vision_pre_entries(const llama_config *c, entry *e)
{
    const llama_vision *v = &c->vision;
    const int64_t Dt = c->hidden_size, Dv = v->hidden, g = v->image / v->patch;
    int n = 0;
    e[n++] = (entry){"multi_modal_projector.linear_1.weight", Dt, Dv, TENSOR_MATRIX,
                     VSLOT(p1_w), 0, 0};
    e[n++] = (entry){"multi_modal_projector.linear_1.bias", Dt, 0, TENSOR_BIAS, VSLOT(p1_b), 0, 0};
    e[n++] = (entry){"multi_modal_projector.linear_2.weight", Dt, Dt, TENSOR_MATRIX,
                     VSLOT(p2_w), 0, 0};
    e[n++] = (entry){"multi_modal_projector.linear_2.bias", Dt, 0, TENSOR_BIAS, VSLOT(p2_b), 0, 0};
    /* the tower starts here (llama_tower_offset) */
    e[n++] = (entry){VISION_PREFIX "embeddings.class_embedding", Dv, 0, TENSOR_MATRIX,
                     VSLOT(cls), 0, 0};
    e[n++] = (entry){VISION_PREFIX "embeddings.patch_embedding.weight", Dv, v->channels,
                     TENSOR_MATRIX, VSLOT(patch_w), v->patch, v->patch};
    e[n++] = (entry){VISION_PREFIX "embeddings.position_embedding.weight", g * g + 1, Dv,
                     TENSOR_MATRIX, VSLOT(pos), 0, 0};
    e[n++] = (entry){VISION_PREFIX "pre_layrnorm.weight", Dv, 0, TENSOR_NORM, VSLOT(pre_w), 0, 0};
    e[n++] = (entry){VISION_PREFIX "pre_layrnorm.bias", Dv, 0, TENSOR_BIAS, VSLOT(pre_b), 0, 0};
    return n;
}
#define VISION_PROJECTOR_TENSORS 4

/* One encoder layer's 16 tensors (names after "encoder.layers.i."). */
static int vision_layer_entries(const llama_config *c, entry *e)
{
    const int64_t Dv = c->vision.hidden, Iv = c->vision.intermediate;
    int n = 0;
#define VADD(nm, a, b, k, f) (e[n++] = (entry){nm, a, b, k, VLSLOT(f), 0, 0})
    VADD("self_attn.q_proj.weight", Dv, Dv, TENSOR_MATRIX, q_w);
    VADD("self_attn.q_proj.bias", Dv, 0, TENSOR_BIAS, q_b);
    VADD("self_attn.k_proj.weight", Dv, Dv, TENSOR_MATRIX, k_w);
    VADD("self_attn.k_proj.bias", Dv, 0, TENSOR_BIAS, k_b);
    VADD("self_attn.v_proj.weight", Dv, Dv, TENSOR_MATRIX, v_w);
    VADD("self_attn.v_proj.bias", Dv, 0, TENSOR_BIAS, v_b);
    VADD("self_attn.out_proj.weight", Dv, Dv, TENSOR_MATRIX, o_w);
    VADD("self_attn.out_proj.bias", Dv, 0, TENSOR_BIAS, o_b);
    VADD("layer_norm1.weight", Dv, 0, TENSOR_NORM, ln1_w);
    VADD("layer_norm1.bias", Dv, 0, TENSOR_BIAS, ln1_b);
    VADD("mlp.fc1.weight", Iv, Dv, TENSOR_MATRIX, fc1_w);
    VADD("mlp.fc1.bias", Iv, 0, TENSOR_BIAS, fc1_b);
    VADD("mlp.fc2.weight", Dv, Iv, TENSOR_MATRIX, fc2_w);
    VADD("mlp.fc2.bias", Dv, 0, TENSOR_BIAS, fc2_b);
    VADD("layer_norm2.weight", Dv, 0, TENSOR_NORM, ln2_w);
    VADD("layer_norm2.bias", Dv, 0, TENSOR_BIAS, ln2_b);
#undef VADD
    return n;
}

/* The post-norm: in every CLIP file, but LLaVA's features come before it. */
static int vision_post_entries(const llama_config *c, entry *e)
{
    const int64_t Dv = c->vision.hidden;
    e[0] = (entry){VISION_PREFIX "post_layernorm.weight", Dv, 0, TENSOR_NORM, SLOT_NONE, 0, 0};
    e[1] = (entry){VISION_PREFIX "post_layernorm.bias", Dv, 0, TENSOR_BIAS, SLOT_NONE, 0, 0};
    return 2;
}

static size_t vision_tensor_count(const llama_config *c)
{
    if (c->vision.layers <= 0)
        return 0;
    entry e[16];
    size_t n = (size_t)vision_pre_entries(c, e) + (size_t)vision_post_entries(c, e);
    return n + (size_t)vision_layer_entries(c, e) * (size_t)c->vision.layers;
}

static size_t numel_of(const entry *e)
{
    return (size_t)e->d0 * (size_t)(e->d1 ? e->d1 : 1) * (size_t)(e->d2 ? e->d2 : 1) *
           (size_t)(e->d3 ? e->d3 : 1);
}

static size_t sum_numel(const entry *e, int n)
{
    size_t s = 0;
    for (int k = 0; k < n; k++)
        s += numel_of(&e[k]);
    return s;
}

static size_t text_tensor_count(const llama_config *c)
{
    entry e[16];
    size_t n = (size_t)pre_entries(c, e) + (size_t)post_entries(c, e);
    return n + (size_t)layer_entries(c, e) * (size_t)c->n_layers;
}

size_t llama_tensor_count(const llama_config *c)
{
    return text_tensor_count(c) + vision_tensor_count(c);
}

static void set_info(llama_tensor_info *out, const char *prefix, const entry *e, size_t offset)
{
    snprintf(out->name, sizeof out->name, "%s%s", prefix, e->name);
    out->kind = e->kind;
    out->ndim = e->d2 ? 4 : e->d1 ? 2 : 1;
    out->shape[0] = e->d0;
    out->shape[1] = e->d1;
    out->shape[2] = e->d2;
    out->shape[3] = e->d3;
    out->numel = numel_of(e);
    out->offset = offset;
}

/* Tensor i of one part laid out as pre entries, n_layers times the layer
 * entries (names after layer_fmt with the layer's index), post entries,
 * from `offset`: its info, and its layer (-1: none) and slot. */
static void describe_part(const entry *pre, size_t n_pre, const entry *lay, size_t n_lay,
                          size_t n_layers, const entry *post, const char *prefix,
                          const char *layer_fmt, size_t i, size_t offset, llama_tensor_info *out,
                          int *layer, int *slot)
{
    *layer = -1;
    if (i < n_pre) {
        set_info(out, prefix, &pre[i], offset + sum_numel(pre, (int)i));
        *slot = pre[i].slot;
        return;
    }
    offset += sum_numel(pre, (int)n_pre);
    i -= n_pre;
    if (i < n_lay * n_layers) {
        size_t li = i / n_lay, k = i % n_lay;
        offset += li * sum_numel(lay, (int)n_lay) + sum_numel(lay, (int)k);
        char lp[96];
        snprintf(lp, sizeof lp, layer_fmt, prefix, li);
        set_info(out, lp, &lay[k], offset);
        *layer = (int)li;
        *slot = lay[k].slot;
        return;
    }
    offset += n_layers * sum_numel(lay, (int)n_lay);
    i -= n_lay * n_layers;
    set_info(out, prefix, &post[i], offset + sum_numel(post, (int)i));
    *slot = post[i].slot;
}

/* Floats of the decoder's part of the layout. */
static size_t text_param_count(const llama_config *c)
{
    entry pre[2], lay[16], post[3];
    return sum_numel(pre, pre_entries(c, pre)) +
           (size_t)c->n_layers * sum_numel(lay, layer_entries(c, lay)) +
           sum_numel(post, post_entries(c, post));
}

/* Tensor i, and the layer it belongs to (-1: none) and its slot there;
 * *vision: whether it is the vision side's. */
static void describe(const llama_config *c, size_t i, llama_tensor_info *out, int *layer,
                     int *slot, int *vision)
{
    const size_t n_text = text_tensor_count(c);
    *vision = i >= n_text;
    if (!*vision) {
        entry pre[2], lay[16], post[3];
        const size_t n_pre = (size_t)pre_entries(c, pre), n_lay = (size_t)layer_entries(c, lay);
        post_entries(c, post);
        describe_part(pre, n_pre, lay, n_lay, (size_t)c->n_layers, post,
                      c->vision.layers > 0 ? "language_model." : "",
                      c->arch == ARCH_GPT2 ? "%stransformer.h.%zu." : "%smodel.layers.%zu.", i,
                      0, out, layer, slot);
        return;
    }
    entry pre[9], lay[16], post[2];
    const size_t n_pre = (size_t)vision_pre_entries(c, pre),
                 n_lay = (size_t)vision_layer_entries(c, lay);
    vision_post_entries(c, post);
    describe_part(pre, n_pre, lay, n_lay, (size_t)c->vision.layers, post, "",
                  "%s" VISION_PREFIX "encoder.layers.%zu.", i - n_text, text_param_count(c), out,
                  layer, slot);
}

void llama_tensor_describe(const llama_config *c, size_t i, llama_tensor_info *out)
{
    int layer, slot, vision;
    describe(c, i, out, &layer, &slot, &vision);
}

size_t llama_param_count(const llama_config *c)
{
    llama_tensor_info last;
    llama_tensor_describe(c, llama_tensor_count(c) - 1, &last);
    return last.offset + last.numel;
}

size_t llama_tower_offset(const llama_config *c)
{
    if (c->vision.layers <= 0)
        return llama_param_count(c);
    llama_tensor_info t;
    llama_tensor_describe(c, text_tensor_count(c) + VISION_PROJECTOR_TENSORS, &t);
    return t.offset;
}

int llama_image_rows(const llama_config *c)
{
    if (c->vision.layers <= 0)
        return 0;
    const int g = c->vision.image / c->vision.patch;
    return g * g;
}

clip_config llama_clip_config(const llama_config *c)
{
    const llama_vision *v = &c->vision;
    const int run = v->feature_layer < 0 ? v->layers + v->feature_layer + 1 : v->feature_layer;
    return (clip_config){.hidden = v->hidden, .intermediate = v->intermediate, .heads = v->heads,
                         .layers_run = run, .channels = v->channels, .image = v->image,
                         .patch = v->patch, .eps = v->eps, .out = c->hidden_size};
}

int llama_params_bind(llama_params *p, const llama_config *c, float *flat)
{
    memset(p, 0, sizeof *p);
    p->layers = calloc((size_t)c->n_layers, sizeof *p->layers);
    if (c->vision.layers > 0)
        p->vis.layers = calloc((size_t)c->vision.layers, sizeof *p->vis.layers);
    if (!p->layers || (c->vision.layers > 0 && !p->vis.layers)) {
        llama_params_unbind(p);
        return -1;
    }
    const size_t D = (size_t)c->hidden_size;
    const char *tp = c->vision.layers > 0 ? "language_model." : "";
    const size_t tpl = strlen(tp);
    llama_tensor_info t;
    size_t n = llama_tensor_count(c);
    for (size_t i = 0; i < n; i++) {
        int layer, slot, vision;
        describe(c, i, &t, &layer, &slot, &vision);
        float *at = flat + t.offset;
        const char *name = t.name + (vision ? 0 : tpl);
        if (vision) {
            if (slot == SLOT_NONE)
                continue; /* the post-norm: kept, never computed with */
            char *base = layer >= 0 ? (char *)&p->vis.layers[layer] : (char *)&p->vis;
            *(float **)(base + slot) = at;
        } else if (layer >= 0) {
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
        } else if (strcmp(name, "model.embed_tokens.weight") == 0 ||
                   strcmp(name, "transformer.wte.weight") == 0) {
            p->embed = at;
        } else if (strcmp(name, "transformer.wpe.weight") == 0) {
            p->pos_embed = at;
        } else if (strcmp(name, "model.norm.weight") == 0 ||
                   strcmp(name, "transformer.ln_f.weight") == 0) {
            p->final_norm = at;
        } else if (strcmp(name, "transformer.ln_f.bias") == 0) {
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
    free(p->vis.layers);
    memset(p, 0, sizeof *p);
}
