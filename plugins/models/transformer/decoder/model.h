/*
 * model.h: a decoder (Llama, Qwen2 or GPT-2; llama.h) with its parameters, gradients and the saved
 * activations of the last forward pass; forward and backward over a packed
 * batch. No I/O here (checkpoint.c) and no sampling (generate.c).
 */
#ifndef TERN_MODEL_IMPL_H
#define TERN_MODEL_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/llama.h"
#include "layers/layers.h"

/* The rows whose logits a forward pass computes: the head (a D x V product
 * per row) is a fifth of a 135M model's work, and only some rows need it. */
typedef enum llama_head {
    LLAMA_HEAD_ALL = 0,  /* every row: llama_model.logits[N, V] */
    LLAMA_HEAD_TARGETS,  /* the rows with a target, in row order: logits[n_head, V] */
    LLAMA_HEAD_LAST      /* each sequence's last row (a prefill): logits[S, V] */
} llama_head;

/* A packed batch: the rows of sequence s are [seq_start[s], seq_start[s+1]). */
typedef struct llama_batch {
    int n_seqs;               /* S */
    int n_rows;               /* N = seq_start[S] */
    const int32_t *seq_start; /* [S + 1] */
    const int32_t *tokens;    /* [N] input token of each row */
    const int32_t *pos;       /* [N] its position in its sequence */
    const int32_t *target;    /* [N] the next token row r predicts, or -1 for none */
    const float *scale;       /* [N] 1 / temperature of row r's softmax, or NULL for 1 */
    /* Branches after a shared prefix, as attn_shape's (NULL: each sequence
     * plain causal): shared[S] rows of prefix per sequence, seg0[N] the row of
     * its sequence where row r's branch starts. Positions (pos) restart after
     * the prefix in every branch. An engine that cannot mask branches is never
     * given them (tf_engine.branches). */
    const int32_t *shared;    /* [S] or NULL */
    const int32_t *seg0;      /* [N] or NULL */
    llama_head head;          /* which rows get logits (ALL when zeroed) */
    /* Inputs given as vectors (a vision model's image rows, vision/clip.h):
     * row r's input is row_input[r] ([D] floats) instead of E[tokens[r]] when
     * it is not NULL; NULL array: every row from its token. llama_backward
     * then leaves such a row's token embedding alone, and its gradient
     * dJ/d row_input[r] is llama_model.dx[r * D ..] until the next pass. */
    const float *const *row_input; /* [N] or NULL */
} llama_batch;

/* Activations saved by forward for backward, per layer l (N rows). */
typedef struct llama_layer_acts {
    float *xn1, *mean1, *rstd1;  /* [N, D], [N], [N] attention-input norm (mean: LayerNorm) */
    float *q, *k, *v;            /* [N, H*HD], [N, KV*HD] x2, after RoPE (if any) */
    float *probs;                /* attention probabilities */
    float *att;                  /* [N, H*HD] attention output before o_proj */
    float *res_mid;              /* [N, D] residual after attention */
    float *xn2, *mean2, *rstd2;  /* [N, D], [N], [N] MLP-input norm */
    float *gate, *up, *act;      /* [N, F] each (gate: not GPT-2); up: GPT-2's c_fc output */
} llama_layer_acts;

typedef struct llama_model {
    llama_config cfg;
    size_t n_params;
    float *params, *grads;       /* [n_params] each; grads zeroed by llama_zero_grad */
    llama_params p, g;           /* views into params and grads */
    float *rope_cos, *rope_sin;  /* [max_positions, HD/2]; NULL for GPT-2 (learned positions) */
    gemm_ctx gx;                 /* owned: the instance's threads (gx.tp, NULL: one) and,
                                    for bf16 products, a workspace per thread */

    /* activations, sized for cap_rows rows and cap_probs probabilities */
    size_t cap_rows, cap_probs;
    float *res;                  /* [(L + 1), N, D]: residual stream into each layer, and out */
    llama_layer_acts *acts;      /* [L] */
    float *xf, *meanf, *rstdf;   /* [N, D], [N], [N] final norm */
    float *logits;               /* [n_head, V]: the head rows' (llama_batch.head) */
    int n_head;                  /* rows in logits after the last forward */
    int32_t *head_row;           /* [n_head]: the batch row of each */
    int32_t *h_target;           /* [n_head] their targets, scales, log-probs, ... */
    float *h_scale, *h_logp, *h_ent, *h_dlogp, *h_dent;
    /* backward scratch */
    float *dx, *dxn, *dq, *dk, *dv, *datt, *dgate, *dup, *dact, *dlogits, *dscratch;
    size_t cap_scratch;          /* floats in dscratch (largest T*T) */
} llama_model;

/* Allocate a model for `c` (parameters zero). 0, or -1 with a message. */
int llama_model_init(llama_model *m, const llama_config *c, char *err, size_t errn);

/* Whether every weight of m is a finite number: 0, or -1 with err naming
 * the first tensor that holds a NaN or an infinity and where (a corrupt
 * file, or the checkpoint of a run that diverged). One pass over the
 * weights. */
int llama_check_finite(const llama_model *m, char *err, size_t errn);
void llama_model_free(llama_model *m);
/* bf16 products (on: 1) or float32 (0) for the linear layers and the head
 * (gemm.h). Attention's products, parameters, gradients, AdamW state and
 * everything between the products stay float32. 0, or -1 when the
 * CPU has no AVX512-BF16 (gemm_bf16_available) or memory runs out. */
int llama_model_set_bf16(llama_model *m, int on);
/* Run the model's products on n threads (n >= 1). 0, or -1 if the threads
 * cannot be started (the model keeps its previous setting). */
int llama_model_set_threads(llama_model *m, int n);
/* Fresh weights from `seed`: matrices ~ N(0, 0.02), norm weights 1, biases 0. */
void llama_init_random(llama_model *m, uint64_t seed);

/* Forward over a batch: logp[N] and ent[N] (ent may be NULL) for each row's
 * target (0 where target < 0); activations are kept for llama_backward.
 * 0, or -1 with a message (out of memory, a token or position out of range). */
int llama_forward(llama_model *m, const llama_batch *b, float *logp, float *ent, char *err,
                  size_t errn);
/* Backward from dL/dlogp[N] and dL/dent[N] (may be NULL) of the last
 * forward (same batch): ACCUMULATES into m->grads. */
void llama_backward(llama_model *m, const llama_batch *b, const float *dlogp, const float *dent);
void llama_zero_grad(llama_model *m);

#endif
