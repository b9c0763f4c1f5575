/* clip.c: see clip.h. Shapes in comments: N image rows, T = N + 1 with CLS. */
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

/* out[n, o] = in[n, i] W[o, i]^T + b[o] */
static void linear(const gemm_ctx *gx, float *out, const float *in, const float *w,
                   const float *b, int n, int i, int o)
{
    matmul_forward(gx, out, in, w, n, i, o, 0);
    bias_forward(out, b, n, o);
}

/* att[T, D] = softmax(q_h k_h^T / sqrt(HD)) v_h for each head h, no mask;
 * q, k, v [T, D] with head h in columns h·HD .. (h+1)·HD; s: T × T scratch. */
static void attention_full(float *att, const float *q, const float *k, const float *v, int T,
                           int D, int H, float *s)
{
    const int HD = D / H;
    const float scale = 1.0f / sqrtf((float)HD);
    for (int h = 0; h < H; h++) {
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

int clip_features(const gemm_ctx *gx, const clip_config *c, const clip_params *p,
                  const float *pixels, float *out, char *err, size_t errn)
{
    const int D = c->hidden, Fi = c->intermediate, C = c->channels, P = c->patch,
              g = c->image / c->patch, N = g * g, T = N + 1, K = C * P * P;
    const size_t td = (size_t)T * D;
    float *x = malloc((size_t)N * K * sizeof *x), *h = malloc(td * sizeof *h);
    float *hn = malloc(td * sizeof *hn), *q = malloc(td * sizeof *q), *k = malloc(td * sizeof *k);
    float *v = malloc(td * sizeof *v), *att = malloc(td * sizeof *att);
    float *f = malloc((size_t)T * (Fi > c->out ? Fi : c->out) * sizeof *f);
    float *s = malloc((size_t)T * T * sizeof *s), *mean = malloc((size_t)T * sizeof *mean);
    float *rstd = malloc((size_t)T * sizeof *rstd);
    int rc = -1;
    if (!x || !h || !hn || !q || !k || !v || !att || !f || !s || !mean || !rstd) {
        snprintf(err, errn, "out of memory for an image's %d x %d patches", g, g);
        goto done;
    }
    /* x[n, (ch, y, x)]: patch n = (py, px) in row-major order */
    for (int py = 0; py < g; py++)
        for (int px = 0; px < g; px++)
            for (int ch = 0; ch < C; ch++)
                for (int y = 0; y < P; y++)
                    memcpy(x + ((size_t)(py * g + px) * K + (size_t)(ch * P + y) * P),
                           pixels + ((size_t)ch * c->image + (size_t)(py * P + y)) * c->image +
                               (size_t)px * P,
                           (size_t)P * sizeof(float));
    /* h = [cls; x Wpatch^T] + pos; LN_pre */
    memcpy(h, p->cls, (size_t)D * sizeof *h);
    matmul_forward(gx, h + D, x, p->patch_w, N, K, D, 0);
    for (size_t e = 0; e < td; e++)
        h[e] += p->pos[e];
    layernorm_forward(gx->tp, hn, mean, rstd, h, p->pre_w, p->pre_b, T, D, c->eps);
    memcpy(h, hn, td * sizeof *h);
    for (int l = 0; l < c->layers_run; l++) {
        const clip_layer *w = &p->layers[l];
        layernorm_forward(gx->tp, hn, mean, rstd, h, w->ln1_w, w->ln1_b, T, D, c->eps);
        linear(gx, q, hn, w->q_w, w->q_b, T, D, D);
        linear(gx, k, hn, w->k_w, w->k_b, T, D, D);
        linear(gx, v, hn, w->v_w, w->v_b, T, D, D);
        attention_full(att, q, k, v, T, D, c->heads, s);
        matmul_forward(gx, h, att, w->o_w, T, D, D, 1);
        bias_forward(h, w->o_b, T, D);
        layernorm_forward(gx->tp, hn, mean, rstd, h, w->ln2_w, w->ln2_b, T, D, c->eps);
        linear(gx, f, hn, w->fc1_w, w->fc1_b, T, D, Fi);
        for (size_t e = 0; e < (size_t)T * Fi; e++)
            f[e] = f[e] / (1.0f + expf(-1.702f * f[e])); /* quick_gelu */
        matmul_forward(gx, h, f, w->fc2_w, T, Fi, D, 1);
        bias_forward(h, w->fc2_b, T, D);
    }
    /* y = gelu(h[1:] P1^T + p1) P2^T + p2 */
    linear(gx, f, h + D, p->p1_w, p->p1_b, N, D, c->out);
    for (size_t e = 0; e < (size_t)N * c->out; e++)
        f[e] = 0.5f * f[e] * (1.0f + erff(f[e] * (float)M_SQRT1_2));
    linear(gx, out, f, p->p2_w, p->p2_b, N, c->out, c->out);
    rc = 0;
done:
    free(x), free(h), free(hn), free(q), free(k), free(v), free(att), free(f), free(s);
    free(mean), free(rstd);
    return rc;
}
