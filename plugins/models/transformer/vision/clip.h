/*
 * clip.h: a CLIP vision encoder and LLaVA's projector, forward and
 * backward: the image's feature rows a vision-language model places at
 * its image tokens, as Hugging Face's LlavaForConditionalGeneration computes
 * them (tests/ref/llava_ref.py):
 *
 *   patches  x[N, C·P·P]  the image's P×P patches in row-major order, each
 *                         flattened (channel, y, x)
 *   embed    h = [cls; x Wpatch^T] + pos            [N + 1, D]
 *            h = LN_pre(h)
 *   blocks   for l < layers_run (pre-norm, no causal mask):
 *              h += attn(LN1(h)) Wo^T + bo   (q, k, v = LN1(h) W^T + b)
 *              h += quick_gelu(LN2(h) W1^T + b1) W2^T + b2
 *   features f = h[1:]  (CLS dropped)              [N, D]
 *   project  y = gelu(f P1^T + p1) P2^T + p2        [N, Dt]
 *
 * quick_gelu(x) = x·sigmoid(1.702x); gelu is the erf form. layers_run is
 * the encoder's layers less one: LLaVA takes the second-to-last layer's
 * output (vision_feature_layer = -2), so the last layer never runs.
 */
#ifndef TERN_CLIP_H
#define TERN_CLIP_H

#include <stddef.h>

#include "layers/gemm.h"

typedef struct clip_config {
    int hidden;        /* D */
    int intermediate;  /* I */
    int heads;         /* H (D / H per head) */
    int layers_run;    /* encoder layers applied */
    int channels;      /* C */
    int image;         /* S: the image is S × S */
    int patch;         /* P: S / P patches a side */
    float eps;         /* LayerNorm epsilon */
    int out;           /* Dt: the language model's width */
} clip_config;

/* One encoder layer's weights (or, in clip_backward's grads, their
 * gradients: the same shapes). */
typedef struct clip_layer {
    float *ln1_w, *ln1_b, *q_w, *q_b, *k_w, *k_b, *v_w, *v_b, *o_w, *o_b;
    float *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
} clip_layer;

typedef struct clip_params {
    float *patch_w;          /* [D, C·P·P] (the conv's [D, C, P, P]) */
    float *cls;              /* [D] */
    float *pos;              /* [N + 1, D] */
    float *pre_w, *pre_b;    /* [D] */
    clip_layer *layers;      /* [layers_run] */
    float *p1_w, *p1_b;      /* [Dt, D], [Dt] */
    float *p2_w, *p2_b;      /* [Dt, Dt], [Dt] */
} clip_params;

/* Patches a side squared: the feature rows of one image. */
int clip_rows(const clip_config *c);

/* out[N, Dt] = the projected features of pixels[C, S, S] (normalised as the
 * processor's pixel_values). Products on gx. 0, or -1 with a message (out of
 * memory). */
int clip_features(const gemm_ctx *gx, const clip_config *c, const clip_params *p,
                  const float *pixels, float *out, char *err, size_t errn);

/* Add to g (every array the shape of p's) dJ/dθ given dout[N, Dt] = dJ/d
 * the features of pixels: runs the forward again, keeping what the
 * backward needs (an image's activations are small beside the decoder's).
 * tower 0: the projector's gradients only (a frozen encoder; its arrays in
 * g are not touched). 0, or -1 with a message (out of memory). */
int clip_backward(const gemm_ctx *gx, const clip_config *c, const clip_params *p,
                  const clip_params *g, const float *pixels, const float *dout, int tower,
                  char *err, size_t errn);

#endif
