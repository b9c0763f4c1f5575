/* test_clip.c: the CLIP vision encoder and LLaVA projector (vision/clip.c)
 * against tests/ref/llava_ref.py's fixture: the projected feature rows of
 * two images within float32 rounding of the float64 reference. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "hf/safetensors.h"
#include "vision/clip.h"

#define FIXTURE TERN_TEST_SOURCE_DIR "/tests/fixtures/llava_micro"

static float *take(const st_file *f, const char *name, size_t want)
{
    const st_tensor *t = st_find(f, name);
    cr_assert_not_null(t, "the fixture lacks %s", name);
    cr_assert(want == 0 || t->numel == want, "%s has %zu values, not %zu", name, t->numel, want);
    float *out = malloc(t->numel * sizeof *out);
    char err[256];
    cr_assert_eq(st_to_f32(t, out, t->numel, err, sizeof err), 0, "%s", err);
    return out;
}

Test(clip, features_match_the_llava_reference)
{
    st_file w, ref;
    char err[512];
    cr_assert_eq(st_open(FIXTURE "/model.safetensors", &w, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st_open(FIXTURE "/reference.safetensors", &ref, err, sizeof err), 0, "%s", err);
    const clip_config c = {.hidden = 24, .intermediate = 48, .heads = 4, .layers_run = 2,
                           .channels = 3, .image = 16, .patch = 4, .eps = 1e-5f, .out = 32};
    const int N = clip_rows(&c);
    cr_assert_eq(N, 16);
    float *owned[64];
    int n_owned = 0;
#define W(name, count) (owned[n_owned++] = take(&w, name, count))
    clip_layer layers[2];
    for (int l = 0; l < 2; l++) {
        char b[128];
#define LW(field, suffix, count)                                                                 \
    (snprintf(b, sizeof b, "vision_tower.encoder.layers.%d.%s", l, suffix),                      \
     layers[l].field = W(b, count))
        LW(ln1_w, "layer_norm1.weight", 24), LW(ln1_b, "layer_norm1.bias", 24);
        LW(q_w, "self_attn.q_proj.weight", 576), LW(q_b, "self_attn.q_proj.bias", 24);
        LW(k_w, "self_attn.k_proj.weight", 576), LW(k_b, "self_attn.k_proj.bias", 24);
        LW(v_w, "self_attn.v_proj.weight", 576), LW(v_b, "self_attn.v_proj.bias", 24);
        LW(o_w, "self_attn.out_proj.weight", 576), LW(o_b, "self_attn.out_proj.bias", 24);
        LW(ln2_w, "layer_norm2.weight", 24), LW(ln2_b, "layer_norm2.bias", 24);
        LW(fc1_w, "mlp.fc1.weight", 48 * 24), LW(fc1_b, "mlp.fc1.bias", 48);
        LW(fc2_w, "mlp.fc2.weight", 24 * 48), LW(fc2_b, "mlp.fc2.bias", 24);
#undef LW
    }
    clip_params p = {
        .patch_w = W("vision_tower.embeddings.patch_embedding.weight", 24 * 48),
        .cls = W("vision_tower.embeddings.class_embedding", 24),
        .pos = W("vision_tower.embeddings.position_embedding.weight", 17 * 24),
        .pre_w = W("vision_tower.pre_layrnorm.weight", 24),
        .pre_b = W("vision_tower.pre_layrnorm.bias", 24),
        .layers = layers,
        .p1_w = W("multi_modal_projector.linear_1.weight", 32 * 24),
        .p1_b = W("multi_modal_projector.linear_1.bias", 32),
        .p2_w = W("multi_modal_projector.linear_2.weight", 32 * 32),
        .p2_b = W("multi_modal_projector.linear_2.bias", 32),
    };
#undef W
    gemm_ctx gx = {0};
    for (int s = 0; s < 2; s++) {
        char name[32];
        snprintf(name, sizeof name, "pixels.%d", s);
        float *pix = take(&ref, name, 3 * 16 * 16);
        snprintf(name, sizeof name, "features.%d", s);
        float *want = take(&ref, name, (size_t)N * 32), got[16 * 32];
        cr_assert_eq(clip_features(&gx, &c, &p, pix, got, err, sizeof err), 0, "%s", err);
        double num = 0, den = 0, worst = 0;
        for (int e = 0; e < N * 32; e++) {
            const double d = (double)got[e] - want[e];
            num += d * d;
            den += (double)want[e] * want[e];
            worst = fmax(worst, fabs(d));
        }
        cr_expect_lt(sqrt(num / den), 1e-5, "image %d: relative error %g (worst %g)", s,
                     sqrt(num / den), worst);
        free(pix), free(want);
    }
    for (int i = 0; i < n_owned; i++)
        free(owned[i]);
    st_close(&w);
    st_close(&ref);
}
