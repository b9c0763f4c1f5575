/* clip.c: see clip.h. Shapes in comments: N image rows, T = N + 1 with CLS,
 * K = C·P·P values a patch, Lr = layers_run. */
#include "vision/clip.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers/layers.h"

int clip_rows(const clip_config *c)
{
    const int g = c->image / c->patch;
    return g * g;
}

/* What the backward pass reads, for one image. */
typedef struct clip_layer_acts {
    float *hn1, *mean1, *rstd1;  /* [T, D], [T], [T] LN1 */
    float *q, *k, *v;            /* [T, D] each */
    float *probs;                /* [H, T, T] softmax rows */
    float *att;                  /* [T, D] heads' outputs, before out_proj */
    float *hmid;                 /* [T, D] residual after attention */
    float *hn2, *mean2, *rstd2;  /* LN2 */
    float *u, *a;                /* [T, Fi] fc1's output, quick_gelu of it */
} clip_layer_acts;

typedef struct clip_acts {
    void *arena;
    float *x;                    /* [N, K] patches */
    float *e, *mean0, *rstd0;    /* [T, D] embeddings before LN_pre */
    float *h;                    /* [Lr + 1, T, D]: LN_pre's output, then each layer's */
    clip_layer_acts *l;          /* [Lr] */
    float *y1, *gel;             /* [N, Dt] projector: linear_1's output, gelu of it */
} clip_acts;

static void acts_free(clip_acts *s)
{
    free(s->arena);
    free(s->l);
    memset(s, 0, sizeof *s);
}

static int acts_alloc(clip_acts *s, const clip_config *c)
{
    const size_t D = (size_t)c->hidden, Fi = (size_t)c->intermediate, H = (size_t)c->heads,
                 N = (size_t)clip_rows(c), T = N + 1, K = (size_t)c->channels * c->patch * c->patch,
                 Dt = (size_t)c->out, Lr = (size_t)c->layers_run;
    memset(s, 0, sizeof *s);
    const size_t per_layer = 7 * T * D + 4 * T + H * T * T + 2 * T * Fi;
    const size_t total = N * K + T * D + 2 * T + (Lr + 1) * T * D + Lr * per_layer + 2 * N * Dt;
    s->arena = malloc(total * sizeof(float));
    s->l = calloc(Lr ? Lr : 1, sizeof *s->l);
    if (!s->arena || !s->l) {
        acts_free(s);
        return -1;
    }
    float *p = s->arena;
#define CARVE(ptr, n) (ptr = p, p += (n))
    CARVE(s->x, N * K), CARVE(s->e, T * D), CARVE(s->mean0, T), CARVE(s->rstd0, T);
    CARVE(s->h, (Lr + 1) * T * D);
    for (size_t l = 0; l < Lr; l++) {
        clip_layer_acts *a = &s->l[l];
        CARVE(a->hn1, T * D), CARVE(a->mean1, T), CARVE(a->rstd1, T);
        CARVE(a->q, T * D), CARVE(a->k, T * D), CARVE(a->v, T * D);
        CARVE(a->probs, H * T * T), CARVE(a->att, T * D), CARVE(a->hmid, T * D);
        CARVE(a->hn2, T * D), CARVE(a->mean2, T), CARVE(a->rstd2, T);
        CARVE(a->u, T * Fi), CARVE(a->a, T * Fi);
    }
    CARVE(s->y1, N * Dt), CARVE(s->gel, N * Dt);
#undef CARVE
    return 0;
}

/* out[n, o] = in[n, i] W[o, i]^T + b[o] */
static void linear(const gemm_ctx *gx, float *out, const float *in, const float *w,
                   const float *b, int n, int i, int o)
{
    matmul_forward(gx, out, in, w, n, i, o, 0);
    bias_forward(out, b, n, o);
}

/* din[n, i] += dout W; dW += dout^T in; db += Σ rows dout */
static void linear_back(const gemm_ctx *gx, float *din, float *dw, float *db, const float *dout,
                        const float *in, const float *w, int n, int i, int o)
{
    matmul_backward(gx, din, dw, dout, in, w, n, i, o);
    bias_backward(db, dout, n, o);
}

/* att[T, D] = P_h v_h with P_h = softmax(q_h k_h^T / sqrt(HD)) for each head
 * h (no mask), q, k, v [T, D] with head h in columns h·HD ..; probs [H, T, T]. */
static void attention_full(float *att, float *probs, const float *q, const float *k,
                           const float *v, int T, int D, int H)
{
    const int HD = D / H;
    const float scale = 1.0f / sqrtf((float)HD);
    for (int h = 0; h < H; h++) {
        float *s = probs + (size_t)h * T * T;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, HD, scale, q + h * HD, D,
                    k + h * HD, D, 0.0f, s, T);
        for (int r = 0; r < T; r++) {
            float *row = s + (size_t)r * T, mx = row[0], sum = 0;
            for (int t = 1; t < T; t++)
                mx = row[t] > mx ? row[t] : mx;
            for (int t = 0; t < T; t++)
                sum += row[t] = expf(row[t] - mx);
            for (int t = 0; t < T; t++)
                row[t] /= sum;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, HD, T, 1.0f, s, T, v + h * HD,
                    D, 0.0f, att + h * HD, D);
    }
}

/* From datt[T, D]: dq, dk, dv [T, D] (set). Per head, with P the probs:
 *   dP = dO v^T,  dv = P^T dO,  dS = P ⊙ (dP − rowsum(dP ⊙ P)),
 *   dq = dS k · scale,  dk = dS^T q · scale.   dp: T × T scratch. */
static void attention_full_back(float *dq, float *dk, float *dv, const float *datt,
                                const float *probs, const float *q, const float *k,
                                const float *v, int T, int D, int H, float *dp)
{
    const int HD = D / H;
    const float scale = 1.0f / sqrtf((float)HD);
    for (int h = 0; h < H; h++) {
        const float *P = probs + (size_t)h * T * T;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, HD, 1.0f, datt + h * HD, D,
                    v + h * HD, D, 0.0f, dp, T);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, HD, T, 1.0f, P, T, datt + h * HD,
                    D, 0.0f, dv + h * HD, D);
        for (int r = 0; r < T; r++) {
            const float *pr = P + (size_t)r * T;
            float *d = dp + (size_t)r * T, dot = 0;
            for (int t = 0; t < T; t++)
                dot += d[t] * pr[t];
            for (int t = 0; t < T; t++)
                d[t] = pr[t] * (d[t] - dot);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, HD, T, scale, dp, T, k + h * HD,
                    D, 0.0f, dq + h * HD, D);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, HD, T, scale, dp, T, q + h * HD, D,
                    0.0f, dk + h * HD, D);
    }
}

static float quick_gelu(float x) { return x / (1.0f + expf(-1.702f * x)); }

static float quick_gelu_grad(float x)
{
    const float s = 1.0f / (1.0f + expf(-1.702f * x));
    return s + 1.702f * x * s * (1.0f - s);
}

static float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2)); }

/* d/dx of x·Φ(x) = Φ(x) + x·φ(x) */
static float gelu_erf_grad(float x)
{
    return 0.5f * (1.0f + erff(x * (float)M_SQRT1_2)) +
           x * expf(-0.5f * x * x) * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2);
}

/* The forward pass into s; out[N, Dt] the projected features. */
static void forward(const gemm_ctx *gx, const clip_config *c, const clip_params *p,
                    const float *pixels, clip_acts *s, float *out)
{
    const int D = c->hidden, Fi = c->intermediate, C = c->channels, P = c->patch,
              g = c->image / c->patch, N = g * g, T = N + 1, K = C * P * P, Dt = c->out;
    const size_t td = (size_t)T * D;
    /* x[n, (ch, y, x)]: patch n = (py, px) in row-major order */
    for (int py = 0; py < g; py++)
        for (int px = 0; px < g; px++)
            for (int ch = 0; ch < C; ch++)
                for (int y = 0; y < P; y++)
                    memcpy(s->x + ((size_t)(py * g + px) * K + (size_t)(ch * P + y) * P),
                           pixels + ((size_t)ch * c->image + (size_t)(py * P + y)) * c->image +
                               (size_t)px * P,
                           (size_t)P * sizeof(float));
    /* e = [cls; x Wpatch^T] + pos;  h0 = LN_pre(e) */
    memcpy(s->e, p->cls, (size_t)D * sizeof(float));
    matmul_forward(gx, s->e + D, s->x, p->patch_w, N, K, D, 0);
    for (size_t i = 0; i < td; i++)
        s->e[i] += p->pos[i];
    layernorm_forward(gx->tp, s->h, s->mean0, s->rstd0, s->e, p->pre_w, p->pre_b, T, D, c->eps);
    for (int l = 0; l < c->layers_run; l++) {
        const clip_layer *w = &p->layers[l];
        clip_layer_acts *a = &s->l[l];
        const float *hin = s->h + (size_t)l * td;
        float *hout = s->h + (size_t)(l + 1) * td;
        layernorm_forward(gx->tp, a->hn1, a->mean1, a->rstd1, hin, w->ln1_w, w->ln1_b, T, D,
                          c->eps);
        linear(gx, a->q, a->hn1, w->q_w, w->q_b, T, D, D);
        linear(gx, a->k, a->hn1, w->k_w, w->k_b, T, D, D);
        linear(gx, a->v, a->hn1, w->v_w, w->v_b, T, D, D);
        attention_full(a->att, a->probs, a->q, a->k, a->v, T, D, c->heads);
        memcpy(a->hmid, hin, td * sizeof(float));
        matmul_forward(gx, a->hmid, a->att, w->o_w, T, D, D, 1);
        bias_forward(a->hmid, w->o_b, T, D);
        layernorm_forward(gx->tp, a->hn2, a->mean2, a->rstd2, a->hmid, w->ln2_w, w->ln2_b, T, D,
                          c->eps);
        linear(gx, a->u, a->hn2, w->fc1_w, w->fc1_b, T, D, Fi);
        for (size_t i = 0; i < (size_t)T * Fi; i++)
            a->a[i] = quick_gelu(a->u[i]);
        memcpy(hout, a->hmid, td * sizeof(float));
        matmul_forward(gx, hout, a->a, w->fc2_w, T, Fi, D, 1);
        bias_forward(hout, w->fc2_b, T, D);
    }
    /* out = gelu(h[1:] P1^T + p1) P2^T + p2 */
    const float *f = s->h + (size_t)c->layers_run * td + D;
    linear(gx, s->y1, f, p->p1_w, p->p1_b, N, D, Dt);
    for (size_t i = 0; i < (size_t)N * Dt; i++)
        s->gel[i] = gelu_erf(s->y1[i]);
    linear(gx, out, s->gel, p->p2_w, p->p2_b, N, Dt, Dt);
}

int clip_features(const gemm_ctx *gx, const clip_config *c, const clip_params *p,
                  const float *pixels, float *out, char *err, size_t errn)
{
    clip_acts s;
    if (acts_alloc(&s, c) != 0) {
        snprintf(err, errn, "out of memory for an image of %d x %d pixels", c->image, c->image);
        return -1;
    }
    forward(gx, c, p, pixels, &s, out);
    acts_free(&s);
    return 0;
}

int clip_backward(const gemm_ctx *gx, const clip_config *c, const clip_params *p,
                  const clip_params *g, const float *pixels, const float *dout, int tower,
                  char *err, size_t errn)
{
    const int D = c->hidden, Fi = c->intermediate, N = clip_rows(c), T = N + 1,
              K = c->channels * c->patch * c->patch, Dt = c->out;
    const size_t td = (size_t)T * D;
    clip_acts s;
    float *out = malloc((size_t)N * Dt * sizeof *out), *dg = malloc((size_t)N * Dt * sizeof *dg);
    float *dh = calloc(td, sizeof *dh), *dmid = malloc(td * sizeof *dmid);
    float *dn = malloc(td * sizeof *dn), *datt = malloc(td * sizeof *datt);
    float *dq = malloc(td * sizeof *dq), *dk = malloc(td * sizeof *dk), *dv = malloc(td * sizeof *dv);
    float *du = malloc((size_t)T * Fi * sizeof *du), *dp = malloc((size_t)T * T * sizeof *dp);
    int rc = -1;
    if (acts_alloc(&s, c) != 0 || !out || !dg || !dh || !dmid || !dn || !datt || !dq || !dk ||
        !dv || !du || !dp) {
        snprintf(err, errn, "out of memory for an image's backward pass");
        goto done;
    }
    forward(gx, c, p, pixels, &s, out);

    /* the projector: dgel = dout P2; dy1 = dgel ⊙ gelu'(y1); dh[1:] = dy1 P1 */
    const float *f = s.h + (size_t)c->layers_run * td + D;
    memset(dg, 0, (size_t)N * Dt * sizeof *dg);
    linear_back(gx, dg, g->p2_w, g->p2_b, dout, s.gel, p->p2_w, N, Dt, Dt);
    for (size_t i = 0; i < (size_t)N * Dt; i++)
        dg[i] *= gelu_erf_grad(s.y1[i]);
    /* CLS row stays 0; a frozen tower needs no gradient below the projector */
    linear_back(gx, tower ? dh + D : NULL, g->p1_w, g->p1_b, dg, f, p->p1_w, N, D, Dt);
    if (!tower) {
        rc = 0;
        goto done;
    }

    for (int l = c->layers_run - 1; l >= 0; l--) {
        const clip_layer *w = &p->layers[l];
        const clip_layer *gw = &g->layers[l];
        const clip_layer_acts *a = &s.l[l];
        const float *hin = s.h + (size_t)l * td;
        /* MLP: h_out = hmid + quick_gelu(LN2(hmid) W1^T + b1) W2^T + b2 */
        memcpy(dmid, dh, td * sizeof *dmid);
        memset(du, 0, (size_t)T * Fi * sizeof *du);
        linear_back(gx, du, gw->fc2_w, gw->fc2_b, dh, a->a, w->fc2_w, T, Fi, D);
        for (size_t i = 0; i < (size_t)T * Fi; i++)
            du[i] *= quick_gelu_grad(a->u[i]);
        memset(dn, 0, td * sizeof *dn);
        linear_back(gx, dn, gw->fc1_w, gw->fc1_b, du, a->hn2, w->fc1_w, T, D, Fi);
        layernorm_backward(gx->tp, dmid, gw->ln2_w, gw->ln2_b, dn, a->hmid, w->ln2_w, a->mean2,
                           a->rstd2, T, D);
        /* attention: hmid = hin + att Wo^T + bo */
        memcpy(dh, dmid, td * sizeof *dh);
        memset(datt, 0, td * sizeof *datt);
        linear_back(gx, datt, gw->o_w, gw->o_b, dmid, a->att, w->o_w, T, D, D);
        attention_full_back(dq, dk, dv, datt, a->probs, a->q, a->k, a->v, T, D, c->heads, dp);
        memset(dn, 0, td * sizeof *dn);
        linear_back(gx, dn, gw->q_w, gw->q_b, dq, a->hn1, w->q_w, T, D, D);
        linear_back(gx, dn, gw->k_w, gw->k_b, dk, a->hn1, w->k_w, T, D, D);
        linear_back(gx, dn, gw->v_w, gw->v_b, dv, a->hn1, w->v_w, T, D, D);
        layernorm_backward(gx->tp, dh, gw->ln1_w, gw->ln1_b, dn, hin, w->ln1_w, a->mean1,
                           a->rstd1, T, D);
    }
    /* h0 = LN_pre(e), e = [cls; x Wpatch^T] + pos */
    memset(dn, 0, td * sizeof *dn);
    layernorm_backward(gx->tp, dn, g->pre_w, g->pre_b, dh, s.e, p->pre_w, s.mean0, s.rstd0, T, D);
    for (size_t i = 0; i < td; i++)
        g->pos[i] += dn[i];
    for (int j = 0; j < D; j++)
        g->cls[j] += dn[j];
    matmul_backward(gx, NULL, g->patch_w, dn + D, s.x, p->patch_w, N, K, D);
    rc = 0;
done:
    acts_free(&s);
    free(out), free(dg), free(dh), free(dmid), free(dn), free(datt), free(dq), free(dk), free(dv);
    free(du), free(dp);
    return rc;
}
