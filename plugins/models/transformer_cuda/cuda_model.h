/*
 * cuda_model.h: the decoder of ../transformer/decoder/model.h on one GPU: float32
 * parameters, gradients and AdamW state in device memory, the saved
 * activations of the last forward pass, and the products in cuBLAS (float32,
 * or bf16 operands with float32 sums). Llama and Qwen2 (RMSNorm, RoPE,
 * SwiGLU, optional biases); GPT-2 stays on the CPU plugin.
 *
 * Errors: every CUDA and cuBLAS status is checked; a failure returns -1 with
 * a message naming the call, the status and the device (cuda_check.h).
 */
#ifndef TERN_CUDA_MODEL_H
#define TERN_CUDA_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "decoder/adamw.h"
#include "decoder/llama.h"
#include "decoder/model.h"

/* Activations of one layer on the device, N rows (as llama_layer_acts). */
typedef struct cuda_layer_acts {
    float *xn1, *rstd1;     /* [N, D], [N] attention-input RMSNorm */
    float *q, *k, *v;       /* [N, QD], [N, KD], [N, KD] after RoPE */
    float *att, *lse;       /* [N, QD] attention output, [N, H] its log-sum-exp */
    float *res_mid;         /* [N, D] residual after attention */
    float *xn2, *rstd2;     /* [N, D], [N] MLP-input RMSNorm */
    float *gate, *up, *act; /* [N, F] each */
} cuda_layer_acts;

typedef struct cuda_model {
    llama_config cfg;
    int device;               /* CUDA ordinal */
    int bf16;                 /* 1: bf16 operands in the products */
    cudaStream_t st;
    cublasHandle_t blas;
    size_t n_params;
    float *params, *grads;    /* [n_params] each, the layout of llama.h */
    float *adam_m, *adam_v;   /* [n_params] each, allocated at the first step */
    int64_t adam_t;           /* AdamW steps taken */
    uint16_t *params16;       /* bf16 copy of params (bf16 mode), refreshed after changes */
    llama_params p, g;        /* device views into params and grads */
    float *rope_cos, *rope_sin; /* [P, HD/2] */
    double *sumsq;            /* [1] the squared gradient norm */

    /* one arena for the activations and batch arrays of cap_rows rows */
    size_t cap_rows;
    void *arena;
    float *res;               /* [(L + 1), N, D] residual stream */
    cuda_layer_acts *acts;    /* [L] (host array of device views) */
    float *xf, *rstdf;        /* [N, D], [N] final norm */
    float *logits;            /* [N, V]; backward turns it into dlogits in place */
    float *dx, *dxn, *dq, *dk, *dv, *datt, *dgate, *dup, *dact, *delta;
    int32_t *tokens, *pos, *target, *row_first, *row_end; /* [N] each */
    float *scale, *logp, *ent, *dlogp, *dent;             /* [N] each */
    uint16_t *op16a, *op16b;  /* bf16 operand scratch, cap_op16 halves each */
    size_t cap_op16;

    char where[64];           /* "device 0 (NVIDIA H100 ...)" for messages */
    pool *sampler;            /* host threads that sample generate's rows (NULL: one);
                                 owned, set after cuda_model_init (`threads`) */
} cuda_model;

/* Number of CUDA devices (0 with the reason in err when there is none or
 * no driver). */
int cuda_device_count(char *err, size_t errn);

/* Make the model on `device` for the config and weights of host model hm
 * (its params and RoPE tables are copied). bf16: products in bf16.
 * 0, or -1 with a message (no such device, out of GPU memory). */
int cuda_model_init(cuda_model *m, const llama_model *hm, int device, int bf16, char *err,
                    size_t errn);
void cuda_model_free(cuda_model *m);

/* Copy weights in (from host params[n_params]) or out. 0, or -1. */
int cuda_model_upload(cuda_model *m, const float *params, char *err, size_t errn);
int cuda_model_download(cuda_model *m, float *params, char *err, size_t errn);
/* AdamW state in or out of the host's adamw (n == n_params). 0, or -1. */
int cuda_model_upload_opt(cuda_model *m, const adamw *o, char *err, size_t errn);
int cuda_model_download_opt(cuda_model *m, adamw *o, char *err, size_t errn);

/* Make room for passes of `rows` rows: the activations and the bf16 operand
 * scratch that cuda_linear_forward converts its inputs into (grows only; the
 * decoder's steps use it for their rows, which may outnumber the prompts'
 * rows of the forward pass before them). 0, or -1 with a message. */
int cuda_model_reserve(cuda_model *m, size_t rows, char *err, size_t errn);

/* llama_forward's contract, with the batch on the host: logp[N], ent[N]
 * (may be NULL) come back to the host; activations stay on the device. */
int cuda_model_forward(cuda_model *m, const llama_batch *b, float *logp, float *ent, char *err,
                       size_t errn);
/* The pieces of a block that the training pass and KV-cache decoding
 * (cuda_generate.c) compute alike, as arch.h's for the CPU. From the normed
 * input xn[N, D] of layer w: q[N, QD], k[N, KD], v[N, KD], then RoPE on q
 * and k at positions pos (on the device). */
int cuda_qkv_forward(cuda_model *m, const llama_layer *w, float *q, float *k, float *v,
                     const float *xn, const int32_t *pos, int n, char *err, size_t errn);
/* The MLP up to its down projection: gate = xn Wg^T (+bg), up = xn Wu^T
 * (+bu), act = silu(gate) ⊙ up, all [N, F]. */
int cuda_mlp_in_forward(cuda_model *m, const llama_layer *w, float *gate, float *up, float *act,
                        const float *xn, int n, char *err, size_t errn);
/* llama_backward's contract (gradients accumulate on the device). */
int cuda_model_backward(cuda_model *m, const llama_batch *b, const float *dlogp,
                        const float *dent, char *err, size_t errn);
/* adamw_step's contract on the device; *norm: the norm before clipping.
 * Gradients are zeroed after. */
int cuda_model_step(cuda_model *m, const adamw_hparams *h, double *norm, char *err, size_t errn);

/* ---- cuda_linear.c: the products, in the model's precision ---------------- */
/* out[N, O] = in[N, I] W[O, I]^T (+ b[O] when b is not NULL); beta 1: += */
int cuda_linear_forward(cuda_model *m, float *out, const float *in, const float *w,
                        const float *b, int n, int i, int o, float beta, char *err, size_t errn);
/* din[N, I] = beta_in · din + dout W (din may be NULL); dW += dout^T in;
 * db += Σ rows of dout (db may be NULL) */
int cuda_linear_backward(cuda_model *m, float *din, float beta_in, float *dw, float *db,
                         const float *dout, const float *in, const float *w, int n, int i, int o,
                         char *err, size_t errn);
/* Re-make params16 from params (bf16 mode; a no-op otherwise). */
int cuda_refresh_bf16(cuda_model *m, char *err, size_t errn);

/* ---- cuda_generate.c: gen_run's decoder on the device ----------------------- */
#include "generation/generate.h"
int cuda_generate(cuda_model *m, const gen_prompt *prompts, int n_prompts, int max_rows,
                  gen_sample *out, char *err, size_t errn);

#endif
