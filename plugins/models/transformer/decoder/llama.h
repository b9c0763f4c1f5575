/*
 * llama.h: the shapes and parameter layout of the decoders the `transformer`
 * plugin implements, shared by every file of the plugin. Three Hugging Face
 * architectures share one code path:
 *
 *   LlamaForCausalLM  RMSNorm, RoPE (plain or Llama 3 scaled), SwiGLU MLP,
 *                     Linear layers (optional biases: attention_bias, mlp_bias)
 *   Qwen2ForCausalLM  the same, with biases on q_proj, k_proj, v_proj
 *   GPT2LMHeadModel   LayerNorm (weight and bias), learned positions (wpe),
 *                     GELU (tanh) MLP, Conv1D layers with biases, q/k/v fused
 *                     in c_attn
 *
 * Notation used in shape comments throughout:
 *   V vocab_size, D hidden_size, F intermediate_size, L num_hidden_layers,
 *   H num_attention_heads, KV num_key_value_heads, HD = D / H head size,
 *   QD = H*HD, KD = KV*HD, P max_positions,
 *   N rows: the tokens of all sequences of a batch, packed one after another.
 *
 * All parameters live in one contiguous float array (so gradients and AdamW
 * moments are arrays of the same layout); llama_params holds views into it.
 * Each tensor is stored as the Hugging Face file stores it: Linear weights
 * [out, in] (y = x W^T + b), GPT-2's Conv1D weights [in, out] (y = x W + b),
 * so loading and saving copy tensors as they are.
 */
#ifndef TERN_LLAMA_H
#define TERN_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include "vision/clip.h"

/* A LLaVA vision tower (LlavaForConditionalGeneration: vision/clip.h), whose
 * tensors follow the decoder's in the flat array: the projector, then the
 * CLIP encoder. layers 0: a text model. Sizes: Dv hidden, Iv intermediate,
 * C channels, S image, P patch, Nv = (S/P)^2 image rows. */
typedef struct llama_vision {
    int layers;          /* vision_config.num_hidden_layers; 0: no tower */
    int hidden;          /* Dv */
    int intermediate;    /* Iv */
    int heads;
    int channels;        /* C (3) */
    int image;           /* S: the encoder takes S x S pixels */
    int patch;           /* P */
    float eps;           /* layer_norm_eps */
    int feature_layer;   /* vision_feature_layer: -1 the last layer's output, -2 the one before, ... */
    int image_token;     /* image_token_index: its rows take the image's features */
    /* the processor (preprocessor_config.json): an image of another size is
     * resized (bilinear) so its short side is S and centre-cropped to S x S
     * (crop 1, CLIP's do_center_crop), or resized to S x S (crop 0); then
     * each channel is (pixel / 255 - mean) / std */
    int crop;
    float mean[3], std[3];
} llama_vision;

/* The Hugging Face architecture: tensor names, norm, MLP, positions. */
enum { ARCH_LLAMA = 0, ARCH_QWEN2 = 1, ARCH_GPT2 = 2 };

typedef struct llama_config {
    int arch;              /* ARCH_*; 0 (Llama) for configs that predate the field */
    int vocab_size;        /* V */
    int hidden_size;       /* D */
    int intermediate_size; /* F */
    int n_layers;          /* L */
    int n_heads;           /* H */
    int n_kv_heads;        /* KV, divides H */
    int max_positions;     /* longest sequence (prompt + generation) */
    float rms_eps;         /* the norms' epsilon (rms_norm_eps; GPT-2: layer_norm_epsilon) */
    float rope_theta;      /* RoPE base (unused by GPT-2) */
    /* Llama 3 RoPE scaling (rope_scaling.rope_type "llama3"); rope_factor 0: none */
    float rope_factor, rope_low_freq, rope_high_freq; /* factor, low/high_freq_factor */
    int rope_orig_max_pos; /* original_max_position_embeddings */
    int qkv_bias;          /* q, k, v projections have biases (Qwen2, attention_bias, GPT-2) */
    int o_bias;            /* the attention output projection has one (attention_bias, GPT-2) */
    int mlp_bias;          /* the MLP projections have them (mlp_bias, GPT-2) */
    int tie_embeddings;    /* 1: lm_head is embed_tokens (GPT-2: wte) */
    int bos_id, eos_id, pad_id; /* special token ids (the tokenizer's) */
    llama_vision vision;   /* LLaVA: the image side (vision.layers > 0), Llama/Qwen2 text */
} llama_config;

/* Views of one layer's parameters inside the flat array; NULL where the
 * architecture has no such tensor. Names: Llama/Qwen2 (model.layers.i.) |
 * GPT-2 (transformer.h.i.). */
typedef struct llama_layer {
    float *attn_norm, *attn_norm_b; /* [D] input_layernorm.weight | ln_1.weight, ln_1.bias */
    /* Llama/Qwen2: self_attn.{q,k,v}_proj.weight [QD, D], [KD, D], [KD, D] and
     * .bias [QD], [KD], [KD]. GPT-2: column blocks 0..D, D..2D, 2D..3D of
     * attn.c_attn.weight [D, 3D] (so rows are 3D floats apart) and of
     * attn.c_attn.bias [3D]. */
    float *wq, *wk, *wv;
    float *bq, *bk, *bv;
    float *wo, *bo;       /* self_attn.o_proj.weight [D, QD], .bias [D] | attn.c_proj [D, D], [D] */
    float *mlp_norm, *mlp_norm_b; /* [D] post_attention_layernorm.weight | ln_2.weight, .bias */
    float *w_gate, *b_gate; /* mlp.gate_proj.weight [F, D], .bias [F] (not GPT-2) */
    float *w_up, *b_up;     /* mlp.up_proj.weight [F, D], .bias [F] | mlp.c_fc [D, F], [F] */
    float *w_down, *b_down; /* mlp.down_proj.weight [D, F], .bias [D] | mlp.c_proj [F, D], [D] */
} llama_layer;

typedef struct llama_params {
    float *embed;        /* [V, D]  model.embed_tokens.weight | transformer.wte.weight */
    float *pos_embed;    /* [P, D]  transformer.wpe.weight (GPT-2 only) */
    llama_layer *layers; /* [L] */
    float *final_norm;   /* [D]     model.norm.weight | transformer.ln_f.weight */
    float *final_norm_b; /* [D]     transformer.ln_f.bias (GPT-2 only) */
    float *lm_head;      /* [V, D]  lm_head.weight (== embed when tied) */
    /* a LLaVA's tower and projector (vision.layers > 0): views as clip.h
     * takes them, vis.layers [vision.layers] allocated by llama_params_bind */
    clip_params vis;
} llama_params;

enum { TENSOR_MATRIX = 0, TENSOR_NORM = 1, TENSOR_BIAS = 2 };

/* One named tensor of the layout, in Hugging Face naming. */
typedef struct llama_tensor_info {
    char name[96];   /* e.g. "model.layers.3.mlp.up_proj.weight" */
    int kind;        /* TENSOR_*: how it starts and whether weight decay applies */
    int ndim;        /* 1, 2, or 4 (the vision tower's patch convolution) */
    int64_t shape[4];
    size_t offset;   /* in floats from the start of the flat array */
    size_t numel;
} llama_tensor_info;

/* Check a config for consistency (positive sizes, H % KV == 0, D % H == 0,
 * HD even for RoPE, what each architecture requires, the vision tower's
 * sizes). 0, or -1 with a
 * message in err. */
int llama_config_check(const llama_config *c, char *err, size_t errn);
/* Number of floats in the flat parameter array. */
size_t llama_param_count(const llama_config *c);
/* Where the vision encoder's tensors start in it (after the decoder's and
 * the projector's): what a frozen tower leaves alone. llama_param_count
 * for a text model. */
size_t llama_tower_offset(const llama_config *c);
/* The tower's config for clip.h: the layers up to the feature layer run. */
clip_config llama_clip_config(const llama_config *c);
/* Image rows per image: (S / P)^2 (0 for a text model). */
int llama_image_rows(const llama_config *c);
/* The architecture's name in Hugging Face's "architectures" ("LlamaForCausalLM", ...). */
const char *llama_arch_name(int arch);
/* The row stride of the q/k/v weight views: D for Linear [out, in] layers,
 * 3D for GPT-2's c_attn blocks. */
int llama_qkv_ld(const llama_config *c);
/* Number of named tensors (lm_head only when untied). */
size_t llama_tensor_count(const llama_config *c);
/* Describe tensor i (0 <= i < llama_tensor_count) of the layout. */
void llama_tensor_describe(const llama_config *c, size_t i, llama_tensor_info *out);
/* Point p's views into `flat` (llama_param_count floats). p->layers is
 * allocated here (free with llama_params_unbind). 0, or -1 on ENOMEM. */
int llama_params_bind(llama_params *p, const llama_config *c, float *flat);
void llama_params_unbind(llama_params *p);

#endif
