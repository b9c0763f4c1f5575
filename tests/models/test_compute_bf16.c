/* test_compute_bf16.c: the transformer's bf16 products (compute = "bf16").
 *
 * - layers/gemm.c's bf16 GEMM against a double-precision product of the same
 *   bf16-rounded operands: every transpose, odd sizes, K and N across the
 *   packing blocks, leading dimensions wider than the matrices, beta 0 / 1 /
 *   other (beta 0 must not read C); a B packed once (generation's weights)
 *   gives the same bits as packing it at every call.
 * - The model in bf16 against PyTorch's float32 reference (the llama_micro
 *   fixture of test_transformer): within bf16's 2e-2, and not equal to the
 *   float32 result (the setting takes effect).
 * - Generation and score agree in bf16; training in bf16 learns; bad values
 *   of the setting are refused.
 *
 * On a CPU without AVX512-BF16 the tests skip and say so. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/model.h"
#include "harness.h"
#include "hf/checkpoint.h"
#include "hf/hf_config.h"
#include "hf/safetensors.h"
#include "layers/gemm.h"
#include "layers/pool.h"
#include "layers/simd.h"
#include "model_checks.h"
#include "tern/model.h"
#include "tern/rng.h"

#define FIXTURE TERN_TEST_SOURCE_DIR "/tests/fixtures/llama_micro"

static void need_bf16(void)
{
    if (!gemm_bf16_available() && simd_env_cap())
        cr_skip_test("skipped: TERN_SIMD=%s turns AVX512-BF16 off, so compute = \"bf16\" is "
                     "refused here", simd_env_cap());
    if (!gemm_bf16_available())
        cr_skip_test("skipped: this CPU has no AVX512-BF16, so compute = \"bf16\" is refused here");
}

/* float32 -> bf16 -> float32, round to nearest even */
static float round_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* x[0..n) uniform in [-1, 1) from r */
static void fill_uniform(float *x, size_t n, tern_rng *r)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(tern_rng_uniform(r) * 2 - 1);
}

/* One product: C = alpha op(A) op(B) + beta C with random data, checked
 * element by element against the double-precision sum of the bf16-rounded
 * operands. The float32 sum differs from it only by rounding: at most
 * K · 2^-24 · sum |a b| (a loose bound, written as 1e-6 · K · sum |a b|). */
static void check_gemm(int ta, int tb, int m, int n, int k, int pad, float alpha, float beta)
{
    const int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    const int arows = ta ? k : m, brows = tb ? n : k;
    float *a = malloc((size_t)arows * lda * sizeof *a), *b = malloc((size_t)brows * ldb * sizeof *b);
    float *c = malloc((size_t)m * ldc * sizeof *c), *c0 = malloc((size_t)m * ldc * sizeof *c0);
    tern_rng r;
    tern_rng_seed(&r, (uint64_t)(m * 131 + n * 17 + k + ta * 2 + tb));
    fill_uniform(a, (size_t)arows * lda, &r);
    fill_uniform(b, (size_t)brows * ldb, &r);
    for (size_t i = 0; i < (size_t)m * ldc; i++)
        c0[i] = c[i] = beta == 0.0f ? NAN : (float)tern_rng_uniform(&r); /* beta 0: never read */
    gemm_ws *ws = gemm_ws_new();
    cr_assert_not_null(ws);
    gemm(ws, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    double worst = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double sum = 0, mag = 0;
            for (int p = 0; p < k; p++) {
                double x = round_bf16(ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]);
                double y = round_bf16(tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]);
                sum += x * y;
                mag += fabs(x * y);
            }
            double want = alpha * sum + (beta == 0.0f ? 0.0 : beta * c0[(size_t)i * ldc + j]);
            double got = c[(size_t)i * ldc + j];
            double tol = 1e-6 * (k + 1) * (fabs(alpha) * mag + fabs(beta) + 1e-30);
            cr_assert(fabs(got - want) <= tol, "ta %d tb %d %dx%dx%d: C[%d][%d] = %.9g, want %.9g",
                      ta, tb, m, n, k, i, j, got, want);
            worst = fmax(worst, fabs(got - want));
        }
    /* the padding columns of C are not written */
    for (int i = 0; i < m; i++)
        for (int j = n; j < ldc; j++) {
            float got = c[(size_t)i * ldc + j], was = c0[(size_t)i * ldc + j];
            cr_assert(memcmp(&got, &was, sizeof got) == 0, "C[%d][%d] outside the matrix written",
                      i, j);
        }
    gemm_ws_free(ws);
    free(a), free(b), free(c), free(c0);
}

Test(gemm_bf16, every_transpose_and_odd_sizes)
{
    need_bf16();
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_gemm(ta, tb, 1, 1, 1, 0, 1.0f, 0.0f);
            check_gemm(ta, tb, 13, 33, 7, 3, 1.0f, 0.0f);   /* edge tiles, odd K */
            check_gemm(ta, tb, 25, 17, 64, 0, 0.5f, 1.0f);  /* accumulate */
            check_gemm(ta, tb, 12, 32, 2, 5, -2.0f, 0.25f); /* exactly one tile */
        }
}

Test(gemm_bf16, k_and_n_across_packing_blocks)
{
    need_bf16();
    check_gemm(0, 1, 40, 70, 1031, 0, 1.0f, 0.0f); /* K over two KC blocks, odd */
    check_gemm(1, 0, 30, 1100, 40, 2, 1.0f, 1.0f); /* N over NC */
    check_gemm(0, 0, 200, 40, 520, 0, 1.0f, 0.5f); /* M over MC, K over KC */
}

Test(gemm_bf16, zero_k_scales_c)
{
    need_bf16();
    gemm_ws *ws = gemm_ws_new();
    float c[4] = {1, 2, 3, 4}, dummy = 0;
    gemm(ws, 0, 0, 2, 2, 0, 1.0f, &dummy, 1, &dummy, 2, 0.5f, c, 2);
    cr_expect(c[0] == 0.5f && c[3] == 2.0f);
    gemm(ws, 0, 0, 2, 2, 0, 1.0f, &dummy, 1, &dummy, 2, 0.0f, c, 2);
    cr_expect(c[0] == 0.0f && c[3] == 0.0f);
    gemm_ws_free(ws);
}

/* A B packed once (gemm_pack_b, as generation packs the weights and
 * gemm_product a product's B) gives the same bits as gemm_split packing it
 * at every call: both layouts of A and B, rows or columns split, 1 to 3
 * workers, K over a packing block, edge tiles; and gemm_product on a team of
 * 3 the same bits as gemm_split. */
static void check_packed(int ta, int tb, int m, int n, int k, int pad, int by_rows, float beta)
{
    const int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    const int arows = ta ? k : m, brows = tb ? n : k;
    float *a = malloc((size_t)arows * lda * sizeof *a), *b = malloc((size_t)brows * ldb * sizeof *b);
    float *c1 = malloc((size_t)m * ldc * sizeof *c1), *c2 = malloc((size_t)m * ldc * sizeof *c2);
    tern_rng r;
    tern_rng_seed(&r, (uint64_t)(m * 7 + n * 3 + k + tb + 5 * ta));
    fill_uniform(a, (size_t)arows * lda, &r);
    fill_uniform(b, (size_t)brows * ldb, &r);
    gemm_packed *pk = gemm_pack_b(tb, k, n, b, ldb);
    cr_assert_not_null(pk);
    gemm_ws *ws[3];
    for (int w = 0; w < 3; w++)
        cr_assert_not_null(ws[w] = gemm_ws_new());
    gemm_ctx gx = {.tp = NULL, .ws = ws};
    for (int nw = 1; nw <= 3; nw++) {
        for (size_t i = 0; i < (size_t)m * ldc; i++)
            c1[i] = c2[i] = (float)tern_rng_uniform(&r);
        for (int wk = 0; wk < nw; wk++) {
            gemm_split(&gx, wk, nw, by_rows, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c1, ldc);
            gemm_split_packed(&gx, wk, nw, by_rows, ta, m, a, lda, pk, beta, c2, ldc);
        }
        cr_assert(memcmp(c1, c2, (size_t)m * ldc * sizeof *c1) == 0,
                  "ta %d tb %d %dx%dx%d, %s split on %d workers, beta %g: packed once differs",
                  ta, tb, m, n, k, by_rows ? "row" : "column", nw, beta);
    }
    /* gemm_product on a team of 3 (B packed by the team) */
    pool *tp = pool_new(3);
    cr_assert_not_null(tp);
    gemm_ctx team = {.tp = tp, .ws = ws};
    for (size_t i = 0; i < (size_t)m * ldc; i++)
        c1[i] = c2[i] = (float)tern_rng_uniform(&r);
    for (int wk = 0; wk < 3; wk++)
        gemm_split(&gx, wk, 3, by_rows, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c1, ldc);
    gemm_product(&team, by_rows, ta, tb, m, n, k, a, lda, b, ldb, beta, c2, ldc);
    cr_assert(memcmp(c1, c2, (size_t)m * ldc * sizeof *c1) == 0,
              "ta %d tb %d %dx%dx%d, %s split: gemm_product differs from gemm_split", ta, tb, m,
              n, k, by_rows ? "row" : "column");
    pool_free(tp);
    for (int w = 0; w < 3; w++)
        gemm_ws_free(ws[w]);
    gemm_packed_free(pk);
    free(a), free(b), free(c1), free(c2);
}

Test(gemm_bf16, b_packed_once_gives_the_same_bits)
{
    need_bf16();
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int by_rows = 0; by_rows < 2; by_rows++) {
                check_packed(ta, tb, 64, 259, 384, 0, by_rows, 0.0f); /* a decode step's head */
                check_packed(ta, tb, 13, 70, 1031, 3, by_rows, 1.0f); /* K over KC, odd */
                check_packed(ta, tb, 300, 40, 20, 1, by_rows, 0.0f);  /* M over MC, row blocks */
                check_packed(ta, tb, 1, 33, 7, 0, by_rows, 0.5f);
            }
}

/* ---- the model in bf16 against PyTorch's float32 reference ------------- */

static double rel_err(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1e-300));
}

static float *tensor(const st_file *f, const char *name, size_t *n)
{
    const st_tensor *t = st_find(f, name);
    cr_assert_not_null(t, "fixture lacks %s", name);
    float *out = malloc(t->numel * sizeof(float));
    char err[256];
    cr_assert_eq(st_to_f32(t, out, t->numel, err, sizeof err), 0, "%s", err);
    *n = t->numel;
    return out;
}

/* The fixture's three sequences packed into one batch (as test_transformer). */
typedef struct ref_batch {
    int32_t start[4], tokens[64], pos[64], target[64];
    float a[64], b[64];
    llama_batch batch;
} ref_batch;

static void load_ref_batch(const st_file *ref, ref_batch *rb)
{
    int r = 0;
    for (int s = 0; s < 3; s++) {
        char name[64];
        size_t n, k;
        snprintf(name, sizeof name, "tokens.%d", s);
        float *tok = tensor(ref, name, &n);
        snprintf(name, sizeof name, "coef_logp.%d", s);
        float *ca = tensor(ref, name, &k);
        snprintf(name, sizeof name, "coef_entropy.%d", s);
        float *cb = tensor(ref, name, &k);
        rb->start[s] = r;
        for (size_t i = 0; i < n; i++, r++) {
            int last = i + 1 == n;
            rb->tokens[r] = (int32_t)tok[i];
            rb->pos[r] = (int32_t)i;
            rb->target[r] = last ? -1 : (int32_t)tok[i + 1];
            rb->a[r] = last ? 0 : ca[i + 1];
            rb->b[r] = last ? 0 : cb[i + 1];
        }
        free(tok), free(ca), free(cb);
    }
    rb->start[3] = r;
    rb->batch = (llama_batch){.n_seqs = 3, .n_rows = r, .seq_start = rb->start,
                              .tokens = rb->tokens, .pos = rb->pos, .target = rb->target};
}

/* Logits and every gradient of the fixture model: bf16 on `threads` threads
 * against PyTorch's float32 numbers. */
static void check_parity(int threads)
{
    need_bf16();
    llama_config c;
    llama_model m;
    char err[512];
    cr_assert_eq(hf_config_read(FIXTURE "/config.json", &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(llama_model_init(&m, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(checkpoint_load_weights(FIXTURE, &m, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(llama_model_set_threads(&m, threads), 0);
    cr_assert_eq(llama_model_set_bf16(&m, 1), 0);
    st_file ref;
    cr_assert_eq(st_open(FIXTURE "/reference.safetensors", &ref, err, sizeof err), 0, "%s", err);
    ref_batch rb;
    load_ref_batch(&ref, &rb);
    float logp[64], ent[64];
    cr_assert_eq(llama_forward(&m, &rb.batch, logp, ent, err, sizeof err), 0, "%s", err);
    for (int s = 0; s < 3; s++) {
        char name[64];
        size_t n;
        snprintf(name, sizeof name, "logits.%d", s);
        float *want = tensor(&ref, name, &n);
        double e = rel_err(m.logits + (size_t)rb.start[s] * c.vocab_size, want, n);
        cr_expect_lt(e, 2e-2, "logits of sequence %d: relative error %g", s, e);
        /* float32 matches to 4e-7; bf16 operands cannot */
        cr_expect_gt(e, 1e-5, "logits of sequence %d match float32 (%g): bf16 not in use", s, e);
        free(want);
    }
    llama_zero_grad(&m);
    llama_backward(&m, &rb.batch, rb.a, rb.b);
    for (size_t t = 0; t < llama_tensor_count(&c); t++) {
        llama_tensor_info ti;
        llama_tensor_describe(&c, t, &ti);
        char name[128];
        size_t n;
        snprintf(name, sizeof name, "grad.%s", ti.name);
        float *want = tensor(&ref, name, &n);
        double e = rel_err(m.grads + ti.offset, want, n);
        cr_expect_lt(e, 2e-2, "%s: relative error %g", name, e);
        free(want);
    }
    st_close(&ref);
    llama_model_free(&m);
}

Test(model_bf16, forward_and_gradients_within_bf16_of_pytorch) { check_parity(1); }
Test(model_bf16, forward_and_gradients_within_bf16_of_pytorch_on_3_threads) { check_parity(3); }

/* ---- through the plugin: compute = "bf16" ------------------------------ */

Test(plugin_bf16, generate_and_score_agree)
{
    need_bf16();
    expect_generate_matches_score("transformer", "path = \"" FIXTURE "\"; threads = 2; "
                                                 "compute = \"bf16\";", 1.0f);
}

Test(plugin_bf16, continuous_batching_equals_one_batch)
{
    need_bf16();
    expect_decode_rows_change_nothing("transformer", "path = \"" FIXTURE "\"; threads = 2; "
                                      "compute = \"bf16\";", 1e-5);
}

Test(plugin_bf16, adamw_steps_reduce_the_loss)
{
    need_bf16();
    expect_training_halves_nll("transformer", "compute = \"bf16\"; init = { preset = \"tiny\"; "
                                              "seed = 3; num_hidden_layers = 2; };");
}

Test(plugin_bf16, unknown_compute_is_refused)
{
    harness h;
    cr_expect_neq(harness_open(&h, "transformer", TERN_KIND_MODEL,
                               "compute = \"fp16\"; init = { preset = \"tiny\"; };"),
                  TERN_OK);
    cr_expect(strstr(h.error, "compute") && strstr(h.error, "bf16"), "%s", h.error);
    harness_close(&h);
}
