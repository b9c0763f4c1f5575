/* test_vlm.c: the `transformer` plugin as a vision-language model (LLaVA),
 * through its ops, the way a run drives it:
 *
 *   - parity: the llava_micro fixture (tests/ref/llava_ref.py: transformers'
 *     LlavaForConditionalGeneration, float64) loaded from `path` in
 *     transformers 5's save_pretrained layout, 8-bit images through the
 *     processor (CLIP's normalisation, no preprocessor_config.json): the
 *     log-probs and every gradient of the reference, through score(),
 *     backward() and gradients();
 *   - the pixels matter (another image, other log-probs), generation sees
 *     them (the greedy token is the reference's argmax), tokenize() expands
 *     the placeholder and detokenize() folds it back;
 *   - a fresh vlm-tiny learns to answer from the image alone, with the tower
 *     trained, and with it frozen (the tower's weights then stay put);
 *   - save and reload give the same scores; the processor resizes;
 *   - refusals: images on a text model, a wrong number of images, a wrong
 *     size under image_fit = "exact". */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "hf/safetensors.h"
#include "tern/model.h"
#include "vision/vlm.h"

#define FIXTURE TERN_TEST_SOURCE_DIR "/tests/fixtures/llava_micro"
#define S 16       /* the fixture's image side */
#define NV 16      /* its image rows */
#define IMG 259    /* its image token */
#define MAXT 64

static float *take(const st_file *f, const char *name, size_t *n)
{
    const st_tensor *t = st_find(f, name);
    cr_assert_not_null(t, "the reference lacks %s", name);
    float *out = malloc(t->numel * sizeof *out);
    char err[256];
    cr_assert_eq(st_to_f32(t, out, t->numel, err, sizeof err), 0, "%s", err);
    if (n)
        *n = t->numel;
    return out;
}

/* The reference's two sequences, their images and their references. */
typedef struct fixture {
    st_file ref;
    int32_t tokens[2][MAXT];
    size_t len[2];
    uint8_t rgb[2][S * S * 3];
    tern_image img[2];
} fixture;

static void fixture_open(fixture *f)
{
    char err[512];
    cr_assert_eq(st_open(FIXTURE "/reference.safetensors", &f->ref, err, sizeof err), 0, "%s",
                 err);
    for (int s = 0; s < 2; s++) {
        char name[32];
        size_t n;
        snprintf(name, sizeof name, "tokens.%d", s);
        float *t = take(&f->ref, name, &n);
        cr_assert(n <= MAXT);
        for (size_t i = 0; i < n; i++)
            f->tokens[s][i] = (int32_t)t[i];
        f->len[s] = n;
        free(t);
        snprintf(name, sizeof name, "rgb.%d", s);
        float *px = take(&f->ref, name, &n);
        cr_assert_eq(n, (size_t)S * S * 3);
        for (size_t i = 0; i < n; i++)
            f->rgb[s][i] = (uint8_t)px[i];
        free(px);
        f->img[s] = (tern_image){.size = sizeof(tern_image), .width = S, .height = S,
                                 .rgb = f->rgb[s], .source = "fixture"};
    }
}

static const tern_model_ops *open_model(harness *h, const char *group)
{
    cr_assert_eq(harness_open(h, "transformer", TERN_KIND_MODEL, group), TERN_OK, "%s",
                 h->error);
    return harness_ops(h);
}

/* max |got - want| over max(|want|, floor) */
static double rel_max(const float *got, const float *want, size_t n, double floor)
{
    double d = 0, m = floor;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)got[i] - want[i]));
        m = fmax(m, fabs((double)want[i]));
    }
    return d / m;
}

static tern_sequence seq_of(const fixture *f, int s, const tern_image *img)
{
    return (tern_sequence){.size = sizeof(tern_sequence), .tokens = f->tokens[s],
                           .len = f->len[s], .start = 1 + NV, .images = img,
                           .n_images = img ? 1 : 0};
}

Test(vlm, matches_the_llava_reference_through_the_plugin)
{
    fixture f;
    fixture_open(&f);
    harness h;
    const tern_model_ops *ops = open_model(&h, "path = \"" FIXTURE "\"; threads = 2;");
    tern_image_spec spec = {.size = sizeof spec};
    cr_assert_eq(ops->image_spec(h.state, &spec), TERN_OK);
    cr_expect_eq(spec.width, S);
    cr_expect_eq(spec.tokens_per_image, NV);
    cr_expect_str_eq(spec.placeholder, "<image>");
    cr_expect_eq(spec.fit, TERN_IMAGE_FIT_RESIZE);

    /* log-probs of the text after the image, both sequences in one call */
    tern_sequence seqs[2] = {seq_of(&f, 0, &f.img[0]), seq_of(&f, 1, &f.img[1])};
    float lp0[MAXT], lp1[MAXT], *lp[2] = {lp0, lp1};
    cr_assert_eq(ops->score(h.state, seqs, 2, lp, NULL), TERN_OK);
    for (int s = 0; s < 2; s++) {
        char name[32];
        snprintf(name, sizeof name, "logp.%d", s);
        float *want = take(&f.ref, name, NULL);
        double d = rel_max(lp[s] + 1 + NV, want + 1 + NV, f.len[s] - 1 - NV, 1.0);
        cr_expect_lt(d, 2e-5, "sequence %d: log-probs off by %g", s, d);
        free(want);
    }

    /* J = Σ coef · logp: every gradient */
    float *coef[2];
    for (int s = 0; s < 2; s++) {
        char name[32];
        snprintf(name, sizeof name, "coef_logp.%d", s);
        coef[s] = take(&f.ref, name, NULL);
    }
    const float *dl[2] = {coef[0], coef[1]};
    cr_assert_eq(ops->backward(h.state, seqs, 2, dl, NULL), TERN_OK);
    const tern_tensor *g;
    size_t n;
    cr_assert_eq(ops->gradients(h.state, &g, &n), TERN_OK);
    int vision = 0, checked = 0;
    for (size_t i = 0; i < n; i++) {
        /* tern names the tower as llava-hf does; the fixture as transformers 5 saves it */
        char name[200];
        const char *at = strstr(g[i].name, "vision_tower.vision_model.");
        if (at)
            snprintf(name, sizeof name, "grad.vision_tower.%s",
                     g[i].name + strlen("vision_tower.vision_model."));
        else
            snprintf(name, sizeof name, "grad.%s", g[i].name);
        size_t k;
        float *want = take(&f.ref, name, &k);
        cr_assert_eq(k * sizeof(float), g[i].bytes, "%s: size", g[i].name);
        double d = rel_max(g[i].data, want, k, 1e-5);
        cr_expect_lt(d, 2e-3, "%s: gradient off by %g of its largest", g[i].name, d);
        vision += at != NULL;
        checked++;
        free(want);
    }
    cr_expect_eq(vision, 9 + 3 * 16 + 2 - 4, "%d vision tensors", vision);
    cr_expect_gt(checked, 60);
    free(coef[0]), free(coef[1]);
    st_close(&f.ref);
    harness_close(&h);
}

Test(vlm, the_pixels_matter_and_generation_sees_them)
{
    fixture f;
    fixture_open(&f);
    harness h;
    const tern_model_ops *ops = open_model(&h, "path = \"" FIXTURE "\";");
    /* sequence 0 scored with sequence 1's picture */
    tern_sequence right = seq_of(&f, 0, &f.img[0]), wrong = seq_of(&f, 0, &f.img[1]);
    float a[MAXT], b[MAXT], *pa = a, *pb = b;
    cr_assert_eq(ops->score(h.state, &right, 1, &pa, NULL), TERN_OK);
    cr_assert_eq(ops->score(h.state, &wrong, 1, &pb, NULL), TERN_OK);
    double d = 0;
    for (size_t i = 1 + NV; i < f.len[0]; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    cr_expect_gt(d, 1e-3, "another image changes the log-probs by %g only", d);

    /* greedy generation from the prompt and its image: the reference's argmax */
    const size_t P = 1 + NV + 3;
    float *logits = take(&f.ref, "logits.0", NULL);
    const float *row = logits + (P - 1) * 260;
    int32_t best = 0;
    for (int v = 1; v < 260; v++)
        best = row[v] > row[best] ? v : best;
    tern_gen_request req = {.size = sizeof req, .prompt = f.tokens[0], .prompt_len = P,
                            .n_samples = 1, .max_new_tokens = 1, .temperature = 0,
                            .top_p = 1, .images = &f.img[0], .n_images = 1};
    tern_gen_output out = {.size = sizeof out};
    cr_assert_eq(ops->generate(h.state, &req, 1, &out), TERN_OK);
    cr_assert_eq(out.len, 1);
    cr_expect_eq(out.tokens[0], best, "greedy token %d, the reference's argmax %d",
                 out.tokens[0], best);
    ops->free_buffer(h.state, out.tokens);
    ops->free_buffer(h.state, out.logprobs);
    free(logits);
    st_close(&f.ref);
    harness_close(&h);
}

Test(vlm, the_placeholder_becomes_image_tokens)
{
    harness h;
    const tern_model_ops *ops = open_model(&h, "path = \"" FIXTURE "\";");
    const char *text = "<image>\nHi <image>";
    int32_t *ids;
    size_t n;
    cr_assert_eq(ops->tokenize(h.state, text, strlen(text), 1, &ids, &n), TERN_OK);
    cr_assert_eq(n, 1 + NV + 4 + NV, "%zu tokens", n);
    cr_expect_eq(ids[0], 256);
    for (int i = 0; i < NV; i++)
        cr_expect_eq(ids[1 + i], IMG);
    cr_expect_eq(ids[1 + NV], '\n');
    char *back;
    size_t blen;
    cr_assert_eq(ops->detokenize(h.state, ids + 1, n - 1, &back, &blen), TERN_OK);
    cr_expect_str_eq(back, text);
    ops->free_buffer(h.state, back);
    ops->free_buffer(h.state, ids);
    harness_close(&h);
}

/* Two solid pictures, and the question "?" whose answer is the picture's
 * letter: a model can only get both right by looking. */
static void solid(uint8_t *rgb, int side, uint8_t r, uint8_t g, uint8_t b)
{
    for (int i = 0; i < side * side; i++)
        rgb[3 * i] = r, rgb[3 * i + 1] = g, rgb[3 * i + 2] = b;
}

/* Train vlm-tiny to answer "R" for the red picture and "B" for the blue one;
 * the mean log-prob of the right answers before and after, and (when
 * tower_before/after are given) a tower weight before and after. */
static void learn_from_pixels(const char *group, double *before, double *after,
                              float *tower_before, float *tower_after, float *proj_before,
                              float *proj_after)
{
    harness h;
    const tern_model_ops *ops = open_model(&h, group);
    static uint8_t red[32 * 32 * 3], blue[32 * 32 * 3];
    solid(red, 32, 220, 20, 20);
    solid(blue, 32, 20, 20, 220);
    tern_image img[2] = {{.size = sizeof(tern_image), .width = 32, .height = 32, .rgb = red},
                         {.size = sizeof(tern_image), .width = 32, .height = 32, .rgb = blue}};
    int32_t *prompt;
    size_t pn;
    const char *q = "<image>?";
    cr_assert_eq(ops->tokenize(h.state, q, strlen(q), 1, &prompt, &pn), TERN_OK);
    cr_assert_eq(pn, 1 + 64 + 1);
    int32_t toks[2][80];
    tern_sequence seqs[2];
    for (int s = 0; s < 2; s++) {
        memcpy(toks[s], prompt, pn * sizeof *prompt);
        toks[s][pn] = s == 0 ? 'R' : 'B';
        seqs[s] = (tern_sequence){.size = sizeof(tern_sequence), .tokens = toks[s],
                                  .len = pn + 1, .start = pn, .images = &img[s], .n_images = 1};
    }
    ops->free_buffer(h.state, prompt);
    const tern_tensor *w;
    size_t nw;
    cr_assert_eq(ops->tensors(h.state, &w, &nw), TERN_OK);
    const float *tower = NULL, *proj = NULL;
    for (size_t i = 0; i < nw; i++) {
        if (strcmp(w[i].name, "vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight") == 0)
            tower = w[i].data;
        if (strcmp(w[i].name, "multi_modal_projector.linear_1.weight") == 0)
            proj = w[i].data;
    }
    cr_assert(tower && proj);
    if (tower_before)
        *tower_before = tower[5], *proj_before = proj[5];
    float d[2][80] = {{0}}, l0[80], l1[80], *lp[2] = {l0, l1};
    d[0][pn] = d[1][pn] = -1; /* the loss: −log p(answer) */
    const float *dl[2] = {d[0], d[1]};
    tern_optim_step st = {.size = sizeof st, .lr = 3e-3, .beta1 = 0.9, .beta2 = 0.999,
                          .eps = 1e-8, .grad_clip = 1.0};
    for (int step = 0; step <= 60; step++) {
        cr_assert_eq(ops->score(h.state, seqs, 2, lp, NULL), TERN_OK);
        double m = 0.5 * (l0[pn] + l1[pn]);
        if (step == 0)
            *before = m;
        *after = m;
        if (step < 60) {
            cr_assert_eq(ops->backward(h.state, seqs, 2, dl, NULL), TERN_OK);
            cr_assert_eq(ops->step(h.state, &st), TERN_OK);
        }
    }
    cr_assert_eq(ops->tensors(h.state, &w, &nw), TERN_OK);
    if (tower_after)
        *tower_after = tower[5], *proj_after = proj[5];
    harness_close(&h);
}

Test(vlm, a_fresh_model_learns_from_the_pixels)
{
    double before, after;
    float t0, t1, p0, p1;
    learn_from_pixels("init = { preset = \"vlm-tiny\"; seed = 3; }; threads = 2;", &before,
                      &after, &t0, &t1, &p0, &p1);
    /* both answers likely: each picture's letter, not one letter for both */
    cr_expect_gt(after, log(0.9), "mean log-prob of the right letter %g -> %g", before, after);
    cr_expect_neq(t0, t1, "the tower trains");
    learn_from_pixels("init = { preset = \"vlm-tiny\"; seed = 3; }; threads = 2; "
                      "train_vision_tower = false;", &before, &after, &t0, &t1, &p0, &p1);
    cr_expect_gt(after, log(0.9), "frozen tower: mean log-prob %g -> %g", before, after);
    cr_expect_eq(t0, t1, "a frozen tower stays put");
    cr_expect_neq(p0, p1, "the projector trains under a frozen tower");
}

Test(vlm, save_and_reload_score_the_same)
{
    fixture f;
    fixture_open(&f);
    char dir[] = "/tmp/tern_vlm_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char out[128], group[256];
    snprintf(out, sizeof out, "%s/saved", dir);
    harness h;
    const tern_model_ops *ops = open_model(&h, "path = \"" FIXTURE "\";");
    tern_sequence s = seq_of(&f, 1, &f.img[1]);
    float a[MAXT], b[MAXT], *pa = a, *pb = b;
    cr_assert_eq(ops->score(h.state, &s, 1, &pa, NULL), TERN_OK);
    cr_assert_eq(ops->save(h.state, out, 0), TERN_OK);
    harness_close(&h);
    snprintf(group, sizeof group, "path = \"%s\";", out);
    ops = open_model(&h, group);
    cr_assert_eq(ops->score(h.state, &s, 1, &pb, NULL), TERN_OK);
    for (size_t i = 1 + NV; i < f.len[1]; i++)
        cr_expect_eq(a[i], b[i], "position %zu: %g then %g", i, a[i], b[i]);
    harness_close(&h);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "test -s %s/preprocessor_config.json && rm -rf %s", out, dir);
    cr_expect_eq(system(cmd), 0, "saved with its preprocessor_config.json");
    st_close(&f.ref);
}

Test(vlm, the_processor_normalises_and_resizes)
{
    llama_vision v = {.image = 4, .crop = 1, .mean = {0.5f, 0.5f, 0.5f}, .std = {0.5f, 0.5f, 0.5f}};
    /* 4 x 4 as it is: (p / 255 - 0.5) / 0.5 */
    uint8_t rgb[8 * 4 * 3];
    for (int i = 0; i < 4 * 4 * 3; i++)
        rgb[i] = (uint8_t)(i * 5);
    tern_image im = {.size = sizeof im, .width = 4, .height = 4, .rgb = rgb};
    float out[3 * 16];
    char err[128];
    cr_assert_eq(vlm_pixels(&v, &im, out, err, sizeof err), 0, "%s", err);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            for (int c = 0; c < 3; c++)
                cr_expect_float_eq(out[c * 16 + y * 4 + x],
                                   (rgb[(y * 4 + x) * 3 + c] / 255.0f - 0.5f) / 0.5f, 1e-6);
    /* 8 wide, 4 high: short side 4 already, the centre 4 columns kept */
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++)
            for (int c = 0; c < 3; c++)
                rgb[(y * 8 + x) * 3 + c] = (uint8_t)(x < 2 || x >= 6 ? 0 : 255);
    im.width = 8;
    cr_assert_eq(vlm_pixels(&v, &im, out, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 3 * 16; i++)
        cr_expect_float_eq(out[i], 1.0f, 1e-6, "value %d: %g", i, out[i]);
    /* 2 x 2 up to 4 x 4, no crop: the corners keep their colour */
    v.crop = 0;
    uint8_t small[2 * 2 * 3] = {0, 0, 0, 255, 255, 255, 255, 255, 255, 0, 0, 0};
    tern_image sm = {.size = sizeof sm, .width = 2, .height = 2, .rgb = small};
    cr_assert_eq(vlm_pixels(&v, &sm, out, err, sizeof err), 0, "%s", err);
    cr_expect_float_eq(out[0], -1.0f, 1e-6);
    cr_expect_float_eq(out[3], 1.0f, 1e-6);
    cr_expect_float_eq(out[15], -1.0f, 1e-6);
}

Test(vlm, refuses_what_it_cannot_see)
{
    fixture f;
    fixture_open(&f);
    harness h;
    /* a text model: no image_spec, no images */
    const tern_model_ops *ops = open_model(&h, "init = { preset = \"tiny\"; seed = 1; };");
    tern_image_spec spec = {.size = sizeof spec};
    cr_expect_eq(ops->image_spec(h.state, &spec), TERN_EUNSUPPORTED);
    int32_t toks[4] = {256, 'a', 'b', 'c'};
    tern_sequence s = {.size = sizeof s, .tokens = toks, .len = 4, .start = 1,
                       .images = &f.img[0], .n_images = 1};
    float l[4], *lp = l;
    cr_expect_eq(ops->score(h.state, &s, 1, &lp, NULL), TERN_EUNSUPPORTED);
    harness_close(&h);

    /* a LLaVA: as many images as placeholders, and the size under "exact" */
    ops = open_model(&h, "path = \"" FIXTURE "\"; image_fit = \"exact\";");
    cr_assert_eq(ops->image_spec(h.state, &spec), TERN_OK);
    cr_expect_eq(spec.fit, TERN_IMAGE_FIT_EXACT);
    tern_sequence none = seq_of(&f, 0, NULL);
    float m[MAXT], *mp = m;
    cr_expect_eq(ops->score(h.state, &none, 1, &mp, NULL), TERN_EINVAL);
    tern_image two[2] = {f.img[0], f.img[1]};
    tern_sequence extra = seq_of(&f, 0, two);
    extra.n_images = 2;
    cr_expect_eq(ops->score(h.state, &extra, 1, &mp, NULL), TERN_EINVAL);
    uint8_t big[20 * 20 * 3] = {0};
    tern_image odd = {.size = sizeof odd, .width = 20, .height = 20, .rgb = big, .source = "x"};
    tern_sequence sized = seq_of(&f, 0, &odd);
    cr_expect_eq(ops->score(h.state, &sized, 1, &mp, NULL), TERN_EINVAL);
    harness_close(&h);

    /* "resize" takes it */
    ops = open_model(&h, "path = \"" FIXTURE "\";");
    cr_expect_eq(ops->score(h.state, &sized, 1, &mp, NULL), TERN_OK);
    harness_close(&h);
    st_close(&f.ref);
}
