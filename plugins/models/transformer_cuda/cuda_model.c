/*
 * cuda_model.c: the decoder's forward and backward passes and AdamW on the
 * GPU, step for step as ../transformer/decoder/model.c (Llama and Qwen2):
 *
 *   x_0 = E[tokens]
 *   for each layer:  h = rmsnorm(x) ;  q, k, v = h Wq^T + bq, h Wk^T + bk, h Wv^T + bv
 *                    rope(q, k) ;  m = x + attention(q, k, v) Wo^T (+ bo)
 *                    h2 = rmsnorm(m) ;  x' = m + (silu(h2 Wg^T) ⊙ h2 Wu^T) Wd^T
 *   logits = rmsnorm(x_L) Wlm^T ;  logp, entropy = logprob(logits, targets)
 *
 * The host hands over a packed batch; its arrays go up once per call, logp
 * and entropy come back, everything else stays on the device.
 */
#include "cuda_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "kernels/kernels.h"

#define D_(m) ((m)->cfg.hidden_size)
#define F_(m) ((m)->cfg.intermediate_size)
#define V_(m) ((m)->cfg.vocab_size)
#define L_(m) ((m)->cfg.n_layers)
#define H_(m) ((m)->cfg.n_heads)
#define KV_(m) ((m)->cfg.n_kv_heads)
#define HD_(m) ((m)->cfg.hidden_size / (m)->cfg.n_heads)
#define QD_(m) (H_(m) * HD_(m))
#define KD_(m) (KV_(m) * HD_(m))

int cuda_device_count(char *err, size_t errn)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errn, "no usable CUDA device: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        return 0;
    }
    if (n == 0)
        snprintf(err, errn, "no CUDA device on this machine");
    return n;
}

/* cudaMalloc with a message that says how much was asked and what is free. */
static int dev_alloc(cuda_model *m, void **p, size_t bytes, const char *what, char *err,
                     size_t errn)
{
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e == cudaSuccess)
        return 0;
    (void)cudaGetLastError();
    *p = NULL;
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    snprintf(err, errn, "out of GPU memory on %s: %s needs %.1f MiB, %.1f MiB of %.1f MiB free "
             "(%s); use a smaller batch or model", m->where, what,
             bytes / 1048576.0, free_b / 1048576.0, total_b / 1048576.0, cudaGetErrorString(e));
    return -1;
}

int cuda_model_init(cuda_model *m, const llama_model *hm, int device, int bf16, char *err,
                    size_t errn)
{
    memset(m, 0, sizeof *m);
    m->cfg = hm->cfg;
    m->device = device;
    m->bf16 = bf16;
    m->n_params = hm->n_params;
    snprintf(m->where, sizeof m->where, "CUDA device %d", device);
    if (m->cfg.arch == ARCH_GPT2) {
        snprintf(err, errn, "transformer_cuda runs Llama and Qwen2 models (RMSNorm, RoPE, "
                 "SwiGLU); this is a GPT-2 model: use the CPU plugin `transformer` for it");
        return -1;
    }
    CU_TRY(cudaSetDevice(device));
    struct cudaDeviceProp prop;
    CU_TRY(cudaGetDeviceProperties(&prop, device));
    snprintf(m->where, sizeof m->where, "CUDA device %d (%.40s)", device, prop.name);
    if (bf16 && prop.major < 8) {
        snprintf(err, errn, "compute = \"bf16\" needs a GPU of compute capability 8.0 or later; "
                 "%s is %d.%d: use compute = \"fp32\"", m->where, prop.major, prop.minor);
        return -1;
    }
    const size_t bytes = m->n_params * sizeof(float);
    const size_t rope = (size_t)m->cfg.max_positions * (size_t)(HD_(m) / 2) * sizeof(float);
    if (dev_alloc(m, (void **)&m->params, bytes, "the parameters", err, errn) != 0 ||
        dev_alloc(m, (void **)&m->grads, bytes, "the gradients", err, errn) != 0 ||
        dev_alloc(m, (void **)&m->rope_cos, rope, "the RoPE tables", err, errn) != 0 ||
        dev_alloc(m, (void **)&m->rope_sin, rope, "the RoPE tables", err, errn) != 0 ||
        dev_alloc(m, (void **)&m->sumsq, sizeof(double), "the norm", err, errn) != 0 ||
        (bf16 && dev_alloc(m, (void **)&m->params16, m->n_params * sizeof(uint16_t),
                           "the bf16 weights", err, errn) != 0))
        goto fail;
    if (llama_params_bind(&m->p, &m->cfg, m->params) != 0 ||
        llama_params_bind(&m->g, &m->cfg, m->grads) != 0) {
        snprintf(err, errn, "out of memory");
        goto fail;
    }
    if (cudaStreamCreateWithFlags(&m->st, cudaStreamNonBlocking) != cudaSuccess ||
        cublasCreate(&m->blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(m->blas, m->st) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errn, "cannot create a CUDA stream and cuBLAS handle on %s", m->where);
        goto fail;
    }
    /* float32 products must stay float32: no TF32 shortcuts behind our back */
    if (cublasSetMathMode(m->blas, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errn, "cuBLAS: cannot set the math mode on %s", m->where);
        goto fail;
    }
    if (cudaMemcpyAsync(m->rope_cos, hm->rope_cos, rope, cudaMemcpyHostToDevice, m->st) ||
        cudaMemcpyAsync(m->rope_sin, hm->rope_sin, rope, cudaMemcpyHostToDevice, m->st) ||
        cudaMemsetAsync(m->grads, 0, bytes, m->st) || cudaStreamSynchronize(m->st)) {
        snprintf(err, errn, "cannot copy to %s", m->where);
        goto fail;
    }
    if (cuda_model_upload(m, hm->params, err, errn) != 0)
        goto fail;
    return 0;
fail:
    cuda_model_free(m);
    return -1;
}

static void free_arena(cuda_model *m)
{
    cudaFree(m->arena);
    free(m->acts);
    m->arena = NULL;
    m->acts = NULL;
    m->cap_rows = 0;
}

void cuda_model_free(cuda_model *m)
{
    pool_free(m->sampler);
    m->sampler = NULL;
    if (m->params)
        cudaSetDevice(m->device);
    free_arena(m);
    cudaFree(m->params), cudaFree(m->grads), cudaFree(m->adam_m), cudaFree(m->adam_v);
    cudaFree(m->params16), cudaFree(m->rope_cos), cudaFree(m->rope_sin), cudaFree(m->sumsq);
    if (m->blas)
        cublasDestroy(m->blas);
    if (m->st)
        cudaStreamDestroy(m->st);
    llama_params_unbind(&m->p);
    llama_params_unbind(&m->g);
    memset(m, 0, sizeof *m);
}

int cuda_model_upload(cuda_model *m, const float *params, char *err, size_t errn)
{
    CU_TRY(cudaSetDevice(m->device));
    /* all on the instance's stream: it does not order itself after the legacy default stream */
    CU_TRY(cudaMemcpyAsync(m->params, params, m->n_params * sizeof(float), cudaMemcpyHostToDevice,
                           m->st));
    if (cuda_refresh_bf16(m, err, errn) != 0)
        return -1;
    CU_TRY(cudaStreamSynchronize(m->st));
    return 0;
}

int cuda_model_download(cuda_model *m, float *params, char *err, size_t errn)
{
    CU_TRY(cudaSetDevice(m->device));
    CU_TRY(cudaMemcpyAsync(params, m->params, m->n_params * sizeof(float), cudaMemcpyDeviceToHost,
                           m->st));
    CU_TRY(cudaStreamSynchronize(m->st));
    return 0;
}

static int ensure_adam(cuda_model *m, char *err, size_t errn)
{
    if (m->adam_m)
        return 0;
    const size_t bytes = m->n_params * sizeof(float);
    if (dev_alloc(m, (void **)&m->adam_m, bytes, "the AdamW moments", err, errn) != 0 ||
        dev_alloc(m, (void **)&m->adam_v, bytes, "the AdamW moments", err, errn) != 0) {
        cudaFree(m->adam_m);
        m->adam_m = NULL;
        return -1;
    }
    CU_TRY(cudaMemsetAsync(m->adam_m, 0, bytes, m->st));
    CU_TRY(cudaMemsetAsync(m->adam_v, 0, bytes, m->st));
    m->adam_t = 0;
    return 0;
}

int cuda_model_upload_opt(cuda_model *m, const adamw *o, char *err, size_t errn)
{
    CU_TRY(cudaSetDevice(m->device));
    if (ensure_adam(m, err, errn) != 0)
        return -1;
    const size_t bytes = m->n_params * sizeof(float);
    CU_TRY(cudaMemcpyAsync(m->adam_m, o->m, bytes, cudaMemcpyHostToDevice, m->st));
    CU_TRY(cudaMemcpyAsync(m->adam_v, o->v, bytes, cudaMemcpyHostToDevice, m->st));
    CU_TRY(cudaStreamSynchronize(m->st));
    m->adam_t = o->t;
    return 0;
}

int cuda_model_download_opt(cuda_model *m, adamw *o, char *err, size_t errn)
{
    CU_TRY(cudaSetDevice(m->device));
    if (ensure_adam(m, err, errn) != 0)
        return -1;
    const size_t bytes = m->n_params * sizeof(float);
    CU_TRY(cudaMemcpyAsync(o->m, m->adam_m, bytes, cudaMemcpyDeviceToHost, m->st));
    CU_TRY(cudaMemcpyAsync(o->v, m->adam_v, bytes, cudaMemcpyDeviceToHost, m->st));
    CU_TRY(cudaStreamSynchronize(m->st));
    o->t = m->adam_t;
    return 0;
}

/* ---- activations ---------------------------------------------------------- */

/* Carve the arena for `rows` rows (grows only). Two passes over the same
 * list: count the bytes, then hand out the pointers. */
static int ensure_rows(cuda_model *m, size_t rows, char *err, size_t errn)
{
    if (rows <= m->cap_rows)
        return 0;
    free_arena(m);
    const size_t N = rows, D = D_(m), F = F_(m), V = V_(m), H = H_(m), QD = QD_(m), KD = KD_(m),
                 L = L_(m);
    m->acts = calloc(L, sizeof *m->acts);
    if (!m->acts) {
        snprintf(err, errn, "out of memory");
        return -1;
    }
    size_t op16 = N * (V > F ? V : F);
    op16 = op16 > N * QD ? op16 : N * QD;
    for (int pass = 0; pass < 2; pass++) {
        char *base = m->arena;
        size_t off = 0;
#define TAKE(ptr, count, type)                                                                   \
    do {                                                                                       \
        if (pass)                                                                              \
            ptr = (type *)(void *)(base + off);                                                \
        off += ((count) * sizeof(type) + 255) & ~(size_t)255;                                  \
    } while (0)
        TAKE(m->res, (L + 1) * N * D, float);
        for (size_t l = 0; l < L; l++) {
            cuda_layer_acts *a = &m->acts[l];
            TAKE(a->xn1, N * D, float); TAKE(a->rstd1, N, float);
            TAKE(a->q, N * QD, float); TAKE(a->k, N * KD, float); TAKE(a->v, N * KD, float);
            TAKE(a->att, N * QD, float); TAKE(a->lse, N * H, float);
            TAKE(a->res_mid, N * D, float); TAKE(a->xn2, N * D, float); TAKE(a->rstd2, N, float);
            TAKE(a->gate, N * F, float); TAKE(a->up, N * F, float); TAKE(a->act, N * F, float);
        }
        TAKE(m->xf, N * D, float); TAKE(m->rstdf, N, float); TAKE(m->logits, N * V, float);
        TAKE(m->dx, N * D, float); TAKE(m->dxn, N * D, float); TAKE(m->dq, N * QD, float);
        TAKE(m->dk, N * KD, float); TAKE(m->dv, N * KD, float); TAKE(m->datt, N * QD, float);
        TAKE(m->dgate, N * F, float); TAKE(m->dup, N * F, float); TAKE(m->dact, N * F, float);
        TAKE(m->delta, N * H, float);
        TAKE(m->tokens, N, int32_t); TAKE(m->pos, N, int32_t); TAKE(m->target, N, int32_t);
        TAKE(m->row_first, N, int32_t); TAKE(m->row_end, N, int32_t);
        TAKE(m->scale, N, float); TAKE(m->logp, N, float); TAKE(m->ent, N, float);
        TAKE(m->dlogp, N, float); TAKE(m->dent, N, float);
        if (m->bf16) {
            TAKE(m->op16a, op16, uint16_t); TAKE(m->op16b, op16, uint16_t);
        }
#undef TAKE
        if (!pass && dev_alloc(m, &m->arena, off, "the activations", err, errn) != 0) {
            free(m->acts);
            m->acts = NULL;
            return -1;
        }
    }
    m->cap_op16 = m->bf16 ? op16 : 0;
    m->cap_rows = rows;
    return 0;
}

int cuda_model_reserve(cuda_model *m, size_t rows, char *err, size_t errn)
{
    return ensure_rows(m, rows, err, errn);
}

/* Check the batch as llama_forward does, and send its arrays up. */
static int upload_batch(cuda_model *m, const llama_batch *b, char *err, size_t errn)
{
    const int N = b->n_rows;
    if (N < 1 || b->n_seqs < 1) {
        snprintf(err, errn, "empty batch");
        return -1;
    }
    int32_t *first = malloc(2 * (size_t)N * sizeof *first);
    float *scale = malloc((size_t)N * sizeof *scale);
    if (!first || !scale) {
        free(first), free(scale);
        snprintf(err, errn, "out of memory");
        return -1;
    }
    int32_t *end = first + N;
    int rc = 0;
    for (int s = 0; s < b->n_seqs && rc == 0; s++)
        for (int r = b->seq_start[s]; r < b->seq_start[s + 1]; r++) {
            if (b->tokens[r] < 0 || b->tokens[r] >= V_(m) || b->target[r] >= V_(m) ||
                b->pos[r] < 0 || b->pos[r] >= m->cfg.max_positions) {
                snprintf(err, errn, "row %d: token %d, target %d or position %d is outside the "
                         "model (vocab %d, context %d)", r, b->tokens[r], b->target[r],
                         b->pos[r], V_(m), m->cfg.max_positions);
                rc = -1;
                break;
            }
            first[r] = b->seq_start[s];
            end[r] = b->seq_start[s + 1];
            scale[r] = b->scale ? b->scale[r] : 1.0f;
        }
    if (rc == 0 && ensure_rows(m, (size_t)N, err, errn) != 0)
        rc = -1;
    if (rc == 0) {
        const size_t ib = (size_t)N * sizeof(int32_t);
        cudaError_t e = cudaMemcpyAsync(m->tokens, b->tokens, ib, cudaMemcpyHostToDevice, m->st);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(m->pos, b->pos, ib, cudaMemcpyHostToDevice, m->st);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(m->target, b->target, ib, cudaMemcpyHostToDevice, m->st);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(m->row_first, first, ib, cudaMemcpyHostToDevice, m->st);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(m->row_end, end, ib, cudaMemcpyHostToDevice, m->st);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(m->scale, scale, (size_t)N * sizeof(float),
                                cudaMemcpyHostToDevice, m->st);
        /* the host arrays are freed below: wait for the copies */
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(m->st);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(err, errn, "copying the batch to %s: %s", m->where, cudaGetErrorString(e));
            rc = -1;
        }
    }
    free(first), free(scale);
    return rc;
}

int cuda_qkv_forward(cuda_model *m, const llama_layer *w, float *q, float *k, float *v,
                     const float *xn, const int32_t *pos, int n, char *err, size_t errn)
{
    const int D = D_(m), H = H_(m), KV = KV_(m), HD = HD_(m), QD = QD_(m), KD = KD_(m);
    if (cuda_linear_forward(m, q, xn, w->wq, w->bq, n, D, QD, 0, err, errn) ||
        cuda_linear_forward(m, k, xn, w->wk, w->bk, n, D, KD, 0, err, errn) ||
        cuda_linear_forward(m, v, xn, w->wv, w->bv, n, D, KD, 0, err, errn))
        return -1;
    CU_TRY(k_rope(m->st, q, pos, m->rope_cos, m->rope_sin, n, H, HD, 1));
    CU_TRY(k_rope(m->st, k, pos, m->rope_cos, m->rope_sin, n, KV, HD, 1));
    return 0;
}

int cuda_mlp_in_forward(cuda_model *m, const llama_layer *w, float *gate, float *up, float *act,
                        const float *xn, int n, char *err, size_t errn)
{
    const int D = D_(m), F = F_(m);
    if (cuda_linear_forward(m, gate, xn, w->w_gate, w->b_gate, n, D, F, 0, err, errn) ||
        cuda_linear_forward(m, up, xn, w->w_up, w->b_up, n, D, F, 0, err, errn))
        return -1;
    CU_TRY(k_swiglu_forward(m->st, act, gate, up, (size_t)n * F));
    return 0;
}

int cuda_model_forward(cuda_model *m, const llama_batch *b, float *logp, float *ent, char *err,
                       size_t errn)
{
    CU_TRY(cudaSetDevice(m->device));
    if (upload_batch(m, b, err, errn) != 0)
        return -1;
    const int N = b->n_rows, D = D_(m), F = F_(m), V = V_(m), H = H_(m), KV = KV_(m),
              HD = HD_(m), QD = QD_(m);
    const size_t ND = (size_t)N * D;
    const float eps = m->cfg.rms_eps;
    cudaStream_t st = m->st;

    CU_TRY(k_embedding_forward(st, m->res, m->tokens, m->p.embed, N, D));
    for (int l = 0; l < L_(m); l++) {
        const llama_layer *w = &m->p.layers[l];
        cuda_layer_acts *a = &m->acts[l];
        float *x = m->res + (size_t)l * ND, *x_out = m->res + (size_t)(l + 1) * ND;
        /* attention block */
        CU_TRY(k_rmsnorm_forward(st, a->xn1, a->rstd1, x, w->attn_norm, N, D, eps));
        if (cuda_qkv_forward(m, w, a->q, a->k, a->v, a->xn1, m->pos, N, err, errn))
            return -1;
        CU_TRY(k_attention_forward(st, a->att, a->lse, a->q, a->k, a->v, m->row_first, N, H, KV,
                                   HD));
        CU_TRY(cudaMemcpyAsync(a->res_mid, x, ND * sizeof(float), cudaMemcpyDeviceToDevice, st));
        if (cuda_linear_forward(m, a->res_mid, a->att, w->wo, w->bo, N, QD, D, 1, err, errn))
            return -1;
        /* MLP block */
        CU_TRY(k_rmsnorm_forward(st, a->xn2, a->rstd2, a->res_mid, w->mlp_norm, N, D, eps));
        if (cuda_mlp_in_forward(m, w, a->gate, a->up, a->act, a->xn2, N, err, errn))
            return -1;
        CU_TRY(cudaMemcpyAsync(x_out, a->res_mid, ND * sizeof(float), cudaMemcpyDeviceToDevice,
                               st));
        if (cuda_linear_forward(m, x_out, a->act, w->w_down, w->b_down, N, F, D, 1, err, errn))
            return -1;
    }
    CU_TRY(k_rmsnorm_forward(st, m->xf, m->rstdf, m->res + (size_t)L_(m) * ND,
                             m->p.final_norm, N, D, eps));
    if (cuda_linear_forward(m, m->logits, m->xf, m->p.lm_head, NULL, N, D, V, 0, err, errn))
        return -1;
    CU_TRY(k_logprob_forward(st, m->logp, ent ? m->ent : NULL, m->logits, m->scale, m->target,
                             N, V));
    CU_TRY(cudaMemcpyAsync(logp, m->logp, (size_t)N * sizeof(float), cudaMemcpyDeviceToHost, st));
    if (ent)
        CU_TRY(cudaMemcpyAsync(ent, m->ent, (size_t)N * sizeof(float), cudaMemcpyDeviceToHost,
                               st));
    CU_TRY(cudaStreamSynchronize(st));
    return 0;
}

int cuda_model_backward(cuda_model *m, const llama_batch *b, const float *dlogp,
                        const float *dent, char *err, size_t errn)
{
    CU_TRY(cudaSetDevice(m->device));
    const int N = b->n_rows, D = D_(m), F = F_(m), V = V_(m), H = H_(m), KV = KV_(m),
              HD = HD_(m), QD = QD_(m), KD = KD_(m);
    const size_t ND = (size_t)N * D;
    cudaStream_t st = m->st;
    if ((size_t)N > m->cap_rows) {
        snprintf(err, errn, "backward without the forward pass of this batch");
        return -1;
    }
    CU_TRY(cudaMemcpyAsync(m->dlogp, dlogp, (size_t)N * sizeof(float), cudaMemcpyHostToDevice,
                           st));
    if (dent)
        CU_TRY(cudaMemcpyAsync(m->dent, dent, (size_t)N * sizeof(float), cudaMemcpyHostToDevice,
                               st));

    /* head: dlogits replaces logits (in place); dx becomes dL/dx_L */
    float *dlogits = m->logits;
    CU_TRY(k_logprob_backward(st, dlogits, m->logits, m->scale, m->target, m->dlogp,
                              dent ? m->dent : NULL, N, V));
    if (cuda_linear_backward(m, m->dxn, 0, m->g.lm_head, NULL, dlogits, m->xf, m->p.lm_head, N,
                             D, V, err, errn))
        return -1;
    CU_TRY(cudaMemsetAsync(m->dx, 0, ND * sizeof(float), st));
    CU_TRY(k_rmsnorm_backward(st, m->dx, m->g.final_norm, m->dxn, m->res + (size_t)L_(m) * ND,
                              m->p.final_norm, m->rstdf, N, D));

    for (int l = L_(m) - 1; l >= 0; l--) {
        const llama_layer *w = &m->p.layers[l], *gw = &m->g.layers[l];
        cuda_layer_acts *a = &m->acts[l];
        const float *x = m->res + (size_t)l * ND;
        /* MLP block: x_out = m + act Wd^T; dx holds dL/dx_out and becomes dL/dm */
        if (cuda_linear_backward(m, m->dact, 0, gw->w_down, gw->b_down, m->dx, a->act, w->w_down,
                                 N, F, D, err, errn))
            return -1;
        CU_TRY(k_swiglu_backward(st, m->dgate, m->dup, m->dact, a->gate, a->up, (size_t)N * F));
        if (cuda_linear_backward(m, m->dxn, 0, gw->w_gate, gw->b_gate, m->dgate, a->xn2,
                                 w->w_gate, N, D, F, err, errn) ||
            cuda_linear_backward(m, m->dxn, 1, gw->w_up, gw->b_up, m->dup, a->xn2, w->w_up, N, D,
                                 F, err, errn))
            return -1;
        CU_TRY(k_rmsnorm_backward(st, m->dx, gw->mlp_norm, m->dxn, a->res_mid, w->mlp_norm,
                                  a->rstd2, N, D));
        /* attention block: m = x + att Wo^T; dx becomes dL/dx */
        if (cuda_linear_backward(m, m->datt, 0, gw->wo, gw->bo, m->dx, a->att, w->wo, N, QD, D,
                                 err, errn))
            return -1;
        CU_TRY(k_attention_delta(st, m->delta, m->datt, a->att, N, H, HD));
        CU_TRY(k_attention_backward_dq(st, m->dq, m->datt, a->lse, m->delta, a->q, a->k, a->v,
                                       m->row_first, N, H, KV, HD));
        CU_TRY(k_attention_backward_dkdv(st, m->dk, m->dv, m->datt, a->lse, m->delta, a->q, a->k,
                                         a->v, m->row_end, N, H, KV, HD));
        CU_TRY(k_rope(st, m->dq, m->pos, m->rope_cos, m->rope_sin, N, H, HD, -1));
        CU_TRY(k_rope(st, m->dk, m->pos, m->rope_cos, m->rope_sin, N, KV, HD, -1));
        if (cuda_linear_backward(m, m->dxn, 0, gw->wq, gw->bq, m->dq, a->xn1, w->wq, N, D, QD,
                                 err, errn) ||
            cuda_linear_backward(m, m->dxn, 1, gw->wk, gw->bk, m->dk, a->xn1, w->wk, N, D, KD,
                                 err, errn) ||
            cuda_linear_backward(m, m->dxn, 1, gw->wv, gw->bv, m->dv, a->xn1, w->wv, N, D, KD,
                                 err, errn))
            return -1;
        CU_TRY(k_rmsnorm_backward(st, m->dx, gw->attn_norm, m->dxn, x, w->attn_norm, a->rstd1, N,
                                  D));
    }
    CU_TRY(k_embedding_backward(st, m->g.embed, b->tokens, m->dx, N, D));
    /* the next forward overwrites the (now gradient) logits; surface errors here */
    CU_TRY(cudaStreamSynchronize(st));
    return 0;
}

int cuda_model_step(cuda_model *m, const adamw_hparams *h, double *norm, char *err, size_t errn)
{
    CU_TRY(cudaSetDevice(m->device));
    if (ensure_adam(m, err, errn) != 0)
        return -1;
    cudaStream_t st = m->st;
    double ss = 0;
    CU_TRY(cudaMemsetAsync(m->sumsq, 0, sizeof(double), st));
    CU_TRY(k_sumsq(st, m->sumsq, m->grads, m->n_params));
    CU_TRY(cudaMemcpyAsync(&ss, m->sumsq, sizeof ss, cudaMemcpyDeviceToHost, st));
    CU_TRY(cudaStreamSynchronize(st));
    *norm = sqrt(ss);
    float k = 1.0f;
    if (h->grad_clip > 0 && *norm > h->grad_clip)
        k = (float)(h->grad_clip / (*norm + 1e-6));
    m->adam_t++;
    const float lr = (float)h->lr, wd = (float)h->lr * (float)h->weight_decay;
    const float bc1 = (float)(1.0 - pow(h->beta1, (double)m->adam_t));
    const float bc2 = (float)(1.0 - pow(h->beta2, (double)m->adam_t));
    /* tensor by tensor: weight decay applies to matrices only */
    llama_tensor_info t;
    for (size_t i = 0; i < llama_tensor_count(&m->cfg); i++) {
        llama_tensor_describe(&m->cfg, i, &t);
        const float decay = t.ndim == 2 ? 1.0f - wd : 1.0f;
        CU_TRY(k_adamw(st, m->params + t.offset, m->grads + t.offset, m->adam_m + t.offset,
                       m->adam_v + t.offset, t.numel, k, (float)h->beta1, (float)h->beta2,
                       (float)h->eps, lr, decay, bc1, bc2));
    }
    CU_TRY(cudaMemsetAsync(m->grads, 0, m->n_params * sizeof(float), st));
    if (cuda_refresh_bf16(m, err, errn) != 0)
        return -1;
    CU_TRY(cudaStreamSynchronize(st));
    return 0;
}
