/* test_clip.c: the CLIP vision encoder and LLaVA projector (vision/clip.c)
 * against tests/ref/llava_ref.py's fixture: the projected feature rows of
 * two images within float32 rounding of the float64 reference, and the whole
 * LLaVA forward pass (the decoder with the image rows at the image tokens:
 * llama_batch.row_input) giving the reference's log-probs and logits. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/model.h"
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

/* The fixture's vision tower and projector: weights (or zeroed arrays of
 * their shapes, for gradients), each with its file name. */
typedef struct tower {
    clip_config c;
    clip_layer layers[2];
    clip_params p;
    float *owned[64];
    const char *names[64];
    size_t counts[64];
    int n_owned;
} tower;

static float *tw(tower *t, const st_file *w, const char *name, size_t count)
{
    float *v = w ? take(w, name, count) : calloc(count, sizeof(float));
    cr_assert_not_null(v);
    t->names[t->n_owned] = strdup(name);
    t->counts[t->n_owned] = count;
    return t->owned[t->n_owned++] = v;
}

/* w NULL: zeroed arrays */
static void tower_load(tower *t, const st_file *w)
{
    t->n_owned = 0;
    t->c = (clip_config){.hidden = 24, .intermediate = 48, .heads = 4, .layers_run = 2,
                         .channels = 3, .image = 16, .patch = 4, .eps = 1e-5f, .out = 32};
    for (int l = 0; l < 2; l++) {
        char b[128];
        clip_layer *y = &t->layers[l];
#define LW(field, suffix, count)                                                                 \
    (snprintf(b, sizeof b, "vision_tower.encoder.layers.%d.%s", l, suffix),                      \
     y->field = tw(t, w, b, count))
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
    t->p = (clip_params){
        .patch_w = tw(t, w, "vision_tower.embeddings.patch_embedding.weight", 24 * 48),
        .cls = tw(t, w, "vision_tower.embeddings.class_embedding", 24),
        .pos = tw(t, w, "vision_tower.embeddings.position_embedding.weight", 17 * 24),
        .pre_w = tw(t, w, "vision_tower.pre_layrnorm.weight", 24),
        .pre_b = tw(t, w, "vision_tower.pre_layrnorm.bias", 24),
        .layers = t->layers,
        .p1_w = tw(t, w, "multi_modal_projector.linear_1.weight", 32 * 24),
        .p1_b = tw(t, w, "multi_modal_projector.linear_1.bias", 32),
        .p2_w = tw(t, w, "multi_modal_projector.linear_2.weight", 32 * 32),
        .p2_b = tw(t, w, "multi_modal_projector.linear_2.bias", 32),
    };
}

static void tower_free(tower *t)
{
    for (int i = 0; i < t->n_owned; i++)
        free(t->owned[i]), free((char *)t->names[i]);
}

/* max |got - want| over max |want| (at least 1e-5: the keys' biases have a
 * zero gradient in exact arithmetic) */
static double rel_max(const float *got, const float *want, size_t n)
{
    double d = 0, m = 1e-5;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)got[i] - want[i]));
        m = fmax(m, fabs((double)want[i]));
    }
    return d / m;
}

/* The decoder's weights from the file's language_model.* names. */
static void text_load(llama_model *m, const st_file *w)
{
    char err[512];
    llama_config c = {.vocab_size = 260, .hidden_size = 32, .intermediate_size = 80,
                      .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .max_positions = 64,
                      .rms_eps = 1e-5f, .rope_theta = 10000.0f, .bos_id = 256, .eos_id = 257,
                      .pad_id = 258};
    cr_assert_eq(llama_model_init(m, &c, err, sizeof err), 0, "%s", err);
    for (size_t i = 0; i < llama_tensor_count(&c); i++) {
        llama_tensor_info ti;
        llama_tensor_describe(&c, i, &ti);
        char name[160];
        snprintf(name, sizeof name, "language_model.%s", ti.name);
        float *v = take(w, name, ti.numel);
        memcpy(m->params + ti.offset, v, ti.numel * sizeof(float));
        free(v);
    }
}

/* The fixture's weights (w) and reference values (ref). */
static void open_fixture(st_file *w, st_file *ref)
{
    char err[512];
    cr_assert_eq(st_open(FIXTURE "/model.safetensors", w, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st_open(FIXTURE "/reference.safetensors", ref, err, sizeof err), 0, "%s", err);
}

Test(clip, features_match_the_llava_reference)
{
    st_file w, ref;
    char err[512];
    open_fixture(&w, &ref);
    tower t;
    tower_load(&t, &w);
    const int N = clip_rows(&t.c);
    cr_assert_eq(N, 16);
    gemm_ctx gx = {0};
    for (int s = 0; s < 2; s++) {
        char name[32];
        snprintf(name, sizeof name, "pixels.%d", s);
        float *pix = take(&ref, name, 3 * 16 * 16);
        snprintf(name, sizeof name, "features.%d", s);
        float *want = take(&ref, name, (size_t)N * 32), got[16 * 32];
        cr_assert_eq(clip_features(&gx, &t.c, &t.p, pix, got, err, sizeof err), 0, "%s", err);
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
    tower_free(&t);
    st_close(&w);
    st_close(&ref);
}

/* Sequence s of the fixture through the whole model: the tower's rows at the
 * image tokens, then the decoder over every row; q->b stays valid for a
 * backward pass. */
typedef struct llava_seq {
    int T;
    float *pix;
    float feats[16 * 32], lp[64];
    int32_t tok[64], pos[64], tgt[64], start[2], img[16];
    const float *rows[64];
    llama_batch b;
} llava_seq;

static void llava_forward(llama_model *m, const tower *t, const st_file *ref, int s,
                          llava_seq *q)
{
    char name[32], err[512];
    snprintf(name, sizeof name, "tokens.%d", s);
    float *tokf = take(ref, name, 0);
    q->T = (int)st_find(ref, name)->numel;
    cr_assert_leq(q->T, 64);
    snprintf(name, sizeof name, "pixels.%d", s);
    q->pix = take(ref, name, 3 * 16 * 16);
    cr_assert_eq(clip_features(&m->gx, &t->c, &t->p, q->pix, q->feats, err, sizeof err), 0, "%s",
                 err);
    for (int i = 0, k = 0; i < q->T; i++) {
        q->tok[i] = (int32_t)tokf[i];
        q->pos[i] = i;
        q->tgt[i] = i + 1 < q->T ? (int32_t)tokf[i + 1] : -1;
        q->rows[i] = NULL;
        if (q->tok[i] == 259) {
            cr_assert_lt(k, 16);
            q->img[k] = i;
            q->rows[i] = q->feats + (size_t)32 * k++;
        }
    }
    q->start[0] = 0;
    q->start[1] = q->T;
    q->b = (llama_batch){.n_seqs = 1, .n_rows = q->T, .seq_start = q->start, .tokens = q->tok,
                         .pos = q->pos, .target = q->tgt, .row_input = q->rows};
    cr_assert_eq(llama_forward(m, &q->b, q->lp, NULL, err, sizeof err), 0, "%s", err);
    free(tokf);
}

/* The whole model: the decoder's weights from the file's language_model.*
 * names, the image rows from the tower at the image tokens. */
Test(clip, llava_log_probs_match_the_reference)
{
    st_file w, ref;
    open_fixture(&w, &ref);
    tower t;
    tower_load(&t, &w);
    llama_model m;
    text_load(&m, &w);
    const llama_config c = m.cfg;
    for (int s = 0; s < 2; s++) {
        llava_seq q;
        llava_forward(&m, &t, &ref, s, &q);
        const int T = q.T, V = c.vocab_size;
        char name[32];
        snprintf(name, sizeof name, "logp.%d", s);
        float *want_lp = take(&ref, name, (size_t)T);
        snprintf(name, sizeof name, "logits.%d", s);
        float *want_logits = take(&ref, name, (size_t)T * V);
        double worst_lp = 0, worst_logit = 0;
        for (int i = 0; i + 1 < T; i++)
            worst_lp = fmax(worst_lp, fabs((double)q.lp[i] - want_lp[i + 1]));
        for (size_t e = 0; e < (size_t)T * V; e++)
            worst_logit = fmax(worst_logit, fabs((double)m.logits[e] - want_logits[e]));
        cr_expect_lt(worst_lp, 1e-5, "sequence %d: log-probs differ by up to %g", s, worst_lp);
        cr_expect_lt(worst_logit, 1e-5, "sequence %d: logits differ by up to %g", s, worst_logit);
        free(q.pix), free(want_lp), free(want_logits);
    }
    llama_model_free(&m);
    tower_free(&t);
    st_close(&w);
    st_close(&ref);
}

/* dJ/dθ for every weight, J = Σ coef_logp · logp over both sequences: the
 * decoder's backward, its gradient at the image rows (llama_model.dx) into
 * clip_backward. */
Test(clip, llava_gradients_match_the_reference)
{
    st_file w, ref;
    char err[512];
    open_fixture(&w, &ref);
    tower t, g;
    tower_load(&t, &w);
    tower_load(&g, NULL);
    llama_model m;
    text_load(&m, &w);
    llama_zero_grad(&m);
    const int D = 32;
    for (int s = 0; s < 2; s++) {
        llava_seq q;
        llava_forward(&m, &t, &ref, s, &q);
        char name[32];
        snprintf(name, sizeof name, "coef_logp.%d", s);
        float *coef = take(&ref, name, (size_t)q.T), dlp[64], dfeats[16 * 32];
        for (int i = 0; i < q.T; i++)
            dlp[i] = i + 1 < q.T ? coef[i + 1] : 0; /* row i's log-prob is token i + 1's */
        llama_backward(&m, &q.b, dlp, NULL);
        for (int k = 0; k < 16; k++)
            memcpy(dfeats + (size_t)k * D, m.dx + (size_t)q.img[k] * D, (size_t)D * sizeof(float));
        cr_assert_eq(clip_backward(&m.gx, &t.c, &t.p, &g.p, q.pix, dfeats, 1, err, sizeof err), 0,
                     "%s", err);
        free(q.pix), free(coef);
    }
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < g.n_owned; i++) {
        char name[200];
        snprintf(name, sizeof name, "grad.%s", g.names[i]);
        float *want = take(&ref, name, g.counts[i]);
        const double e = rel_max(g.owned[i], want, g.counts[i]);
        if (e > worst)
            worst = e, worst_name = g.names[i];
        free(want);
    }
    for (size_t i = 0; i < llama_tensor_count(&m.cfg); i++) {
        llama_tensor_info ti;
        llama_tensor_describe(&m.cfg, i, &ti);
        char name[200];
        snprintf(name, sizeof name, "grad.language_model.%s", ti.name);
        float *want = take(&ref, name, ti.numel);
        const double e = rel_max(m.grads + ti.offset, want, ti.numel);
        if (e > worst)
            worst = e, worst_name = ti.name;
        free(want);
    }
    cr_expect_lt(worst, 1e-4, "the gradients differ by up to %g of their tensor's largest (%s)",
                 worst, worst_name);
    llama_model_free(&m);
    tower_free(&t);
    tower_free(&g);
    st_close(&w);
    st_close(&ref);
}
