/*
 * llama.h: the shapes and parameter layout of the Llama-family decoder the
 * `transformer` plugin implements, shared by every file of the plugin.
 *
 * Notation used in shape comments throughout:
 *   V vocab_size, D hidden_size, F intermediate_size, L num_hidden_layers,
 *   H num_attention_heads, KV num_key_value_heads, HD = D / H head size,
 *   N rows: the tokens of all sequences of a batch, packed one after another.
 *
 * All parameters live in one contiguous float array (so gradients and AdamW
 * moments are arrays of the same layout); llama_params holds views into it.
 * Linear weights are stored as Hugging Face does, [out, in]: y = x W^T.
 */
#ifndef TERN_LLAMA_H
#define TERN_LLAMA_H

#include <stddef.h>
#include <stdint.h>

typedef struct llama_config {
    int vocab_size;        /* V */
    int hidden_size;       /* D */
    int intermediate_size; /* F */
    int n_layers;          /* L */
    int n_heads;           /* H */
    int n_kv_heads;        /* KV, divides H */
    int max_positions;     /* longest sequence (prompt + generation) */
    float rms_eps;         /* RMSNorm epsilon */
    float rope_theta;      /* RoPE base */
    int tie_embeddings;    /* 1: lm_head is embed_tokens */
    int bos_id, eos_id, pad_id; /* special token ids (the tokenizer's) */
} llama_config;

/* Views of one layer's parameters inside the flat array. */
typedef struct llama_layer {
    float *attn_norm; /* [D]           input_layernorm.weight */
    float *wq;        /* [H*HD, D]     self_attn.q_proj.weight */
    float *wk;        /* [KV*HD, D]    self_attn.k_proj.weight */
    float *wv;        /* [KV*HD, D]    self_attn.v_proj.weight */
    float *wo;        /* [D, H*HD]     self_attn.o_proj.weight */
    float *mlp_norm;  /* [D]           post_attention_layernorm.weight */
    float *w_gate;    /* [F, D]        mlp.gate_proj.weight */
    float *w_up;      /* [F, D]        mlp.up_proj.weight */
    float *w_down;    /* [D, F]        mlp.down_proj.weight */
} llama_layer;

typedef struct llama_params {
    float *embed;       /* [V, D]  model.embed_tokens.weight */
    llama_layer *layers; /* [L] */
    float *final_norm;  /* [D]     model.norm.weight */
    float *lm_head;     /* [V, D]  lm_head.weight (== embed when tied) */
} llama_params;

/* One named tensor of the layout, in Hugging Face naming. */
typedef struct llama_tensor_info {
    char name[96];   /* e.g. "model.layers.3.mlp.up_proj.weight" */
    int ndim;        /* 1 or 2 */
    int64_t shape[2];
    size_t offset;   /* in floats from the start of the flat array */
    size_t numel;
} llama_tensor_info;

/* Check a config for consistency (positive sizes, H % KV == 0, D % H == 0,
 * HD even for RoPE, ...). 0, or -1 with a message in err. */
int llama_config_check(const llama_config *c, char *err, size_t errn);
/* Number of floats in the flat parameter array. */
size_t llama_param_count(const llama_config *c);
/* Number of named tensors (lm_head only when untied). */
size_t llama_tensor_count(const llama_config *c);
/* Describe tensor i (0 <= i < llama_tensor_count) of the layout. */
void llama_tensor_describe(const llama_config *c, size_t i, llama_tensor_info *out);
/* Point p's views into `flat` (llama_param_count floats). p->layers is
 * allocated here (free with llama_params_unbind). 0, or -1 on ENOMEM. */
int llama_params_bind(llama_params *p, const llama_config *c, float *flat);
void llama_params_unbind(llama_params *p);

#endif
