/* vlm.c: see vlm.h. S the encoder's image side, Nv its rows, D the
 * decoder's width. */
#include "vision/vlm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Source coordinate of output pixel centre `o` under a scale of in/out
 * (align_corners = False), clamped to the image: the two neighbours and the
 * weight of the second. */
static void sample_at(double o, double scale, int in, int *i0, int *i1, float *w)
{
    double x = (o + 0.5) * scale - 0.5;
    if (x < 0)
        x = 0;
    if (x > in - 1)
        x = in - 1;
    *i0 = (int)x;
    *i1 = *i0 + 1 < in ? *i0 + 1 : *i0;
    *w = (float)(x - *i0);
}

int vlm_pixels(const llama_vision *v, const tern_image *img, float *out, char *err, size_t errn)
{
    const int S = v->image, W = img->width, H = img->height;
    if (!img->rgb || W < 1 || H < 1) {
        snprintf(err, errn, "image %s has no pixels (%d x %d)", img->source ? img->source : "",
                 W, H);
        return -1;
    }
    /* the resized image's size (rw x rh) and the crop's corner in it */
    int rw = S, rh = S, left = 0, top = 0;
    if (v->crop && (W != S || H != S)) {
        /* short side S, long side int(S * long / short), as transformers */
        if (W <= H)
            rh = (int)((double)S * H / W);
        else
            rw = (int)((double)S * W / H);
        left = (rw - S) / 2;
        top = (rh - S) / 2;
    }
    const double sx = (double)W / rw, sy = (double)H / rh;
    const size_t plane = (size_t)S * S;
    for (int y = 0; y < S; y++) {
        int y0, y1;
        float wy;
        sample_at(y + top, sy, H, &y0, &y1, &wy);
        for (int x = 0; x < S; x++) {
            int x0, x1;
            float wx;
            sample_at(x + left, sx, W, &x0, &x1, &wx);
            const uint8_t *p00 = img->rgb + ((size_t)y0 * W + x0) * 3;
            const uint8_t *p01 = img->rgb + ((size_t)y0 * W + x1) * 3;
            const uint8_t *p10 = img->rgb + ((size_t)y1 * W + x0) * 3;
            const uint8_t *p11 = img->rgb + ((size_t)y1 * W + x1) * 3;
            for (int ch = 0; ch < 3; ch++) {
                float top_row = p00[ch] + wx * (p01[ch] - p00[ch]);
                float bottom = p10[ch] + wx * (p11[ch] - p10[ch]);
                float px = (top_row + wy * (bottom - top_row)) / 255.0f;
                out[ch * plane + (size_t)y * S + x] = (px - v->mean[ch]) / v->std[ch];
            }
        }
    }
    return 0;
}

void vlm_images_clear(vlm_images *s) { s->n = 0; }

void vlm_images_free(vlm_images *s)
{
    free(s->src), free(s->pixels), free(s->features), free(s->dfeatures);
    memset(s, 0, sizeof *s);
}

static int grow(vlm_images *s, const llama_config *c, int want)
{
    if (want <= s->cap)
        return 0;
    const int cap = want > 2 * s->cap ? want : 2 * s->cap;
    const size_t S = (size_t)c->vision.image, rows = (size_t)llama_image_rows(c) * c->hidden_size;
    const tern_image **src = realloc(s->src, (size_t)cap * sizeof *src);
    if (src)
        s->src = src;
    float *px = realloc(s->pixels, (size_t)cap * 3 * S * S * sizeof *px);
    if (px)
        s->pixels = px;
    float *f = realloc(s->features, (size_t)cap * rows * sizeof *f);
    if (f)
        s->features = f;
    float *df = realloc(s->dfeatures, (size_t)cap * rows * sizeof *df);
    if (df)
        s->dfeatures = df;
    if (!src || !px || !f || !df)
        return -1;
    s->cap = cap;
    return 0;
}

int vlm_images_add(vlm_images *s, const llama_config *c, const tern_image *img, char *err,
                   size_t errn)
{
    if (grow(s, c, s->n + 1) != 0) {
        snprintf(err, errn, "out of memory for %d images", s->n + 1);
        return -1;
    }
    const size_t S = (size_t)c->vision.image;
    if (vlm_pixels(&c->vision, img, s->pixels + (size_t)s->n * 3 * S * S, err, errn) != 0)
        return -1;
    s->src[s->n] = img;
    return s->n++;
}

int vlm_images_encode(vlm_images *s, llama_model *m, char *err, size_t errn)
{
    const clip_config cc = llama_clip_config(&m->cfg);
    const size_t S = (size_t)cc.image, rows = (size_t)clip_rows(&cc) * m->cfg.hidden_size;
    for (int i = 0; i < s->n; i++)
        if (clip_features(&m->gx, &cc, &m->p.vis, s->pixels + (size_t)i * 3 * S * S,
                          s->features + (size_t)i * rows, err, errn) != 0)
            return -1;
    return 0;
}

int vlm_images_backward(vlm_images *s, llama_model *m, int N, const float *const *row_input,
                        const float *dx, int tower, char *err, size_t errn)
{
    if (s->n == 0 || !row_input)
        return 0;
    const clip_config cc = llama_clip_config(&m->cfg);
    const size_t D = (size_t)m->cfg.hidden_size, S = (size_t)cc.image,
                 per = (size_t)clip_rows(&cc) * D, all = (size_t)s->n * per;
    /* dJ/d each feature row: the sum over the batch rows that took it */
    memset(s->dfeatures, 0, all * sizeof *s->dfeatures);
    for (int r = 0; r < N; r++) {
        const float *in = row_input[r];
        if (!in || in < s->features || in >= s->features + all)
            continue;
        float *d = s->dfeatures + (in - s->features);
        for (size_t j = 0; j < D; j++)
            d[j] += dx[(size_t)r * D + j];
    }
    for (int i = 0; i < s->n; i++)
        if (clip_backward(&m->gx, &cc, &m->p.vis, &m->g.vis, s->pixels + (size_t)i * 3 * S * S,
                          s->dfeatures + (size_t)i * per, tower, err, errn) != 0)
            return -1;
    return 0;
}
