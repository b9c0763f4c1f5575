/* test_llama_grad.c: the Llama forward/backward against central finite
 * differences, for every parameter tensor (embedding, each projection, each
 * norm, lm_head; tied and untied), on a micro model with packed sequences of
 * different lengths. The objective is the one the RL core differentiates:
 * J = sum_r a_r logp_r + b_r entropy_r. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/model.h"
#include "tern/rng.h"

static llama_config micro(int tied)
{
    llama_config c = {.vocab_size = 23, .hidden_size = 16, .intermediate_size = 24,
                      .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .max_positions = 16,
                      .rms_eps = 1e-5f, .rope_theta = 10000.0f, .tie_embeddings = tied,
                      .bos_id = 20, .eos_id = 21, .pad_id = 22};
    return c;
}

/* Two sequences (5 and 7 tokens) packed; targets are the next tokens. */
typedef struct fixture {
    int32_t start[3], tokens[12], pos[12], target[12];
    float a[12], b[12], scale[12];
    llama_batch batch;
} fixture;

static void make_batch(fixture *f, tern_rng *r, int vocab)
{
    int lens[2] = {5, 7}, row = 0;
    f->start[0] = 0;
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < lens[s]; i++, row++) {
            f->tokens[row] = (int32_t)(tern_rng_u64(r) % (uint64_t)vocab);
            f->pos[row] = i;
        }
        f->start[s + 1] = row;
    }
    for (int s = 0; s < 2; s++)
        for (int rr = f->start[s]; rr < f->start[s + 1]; rr++)
            f->target[rr] = rr + 1 < f->start[s + 1] ? f->tokens[rr + 1] : -1;
    for (int i = 0; i < 12; i++) {
        f->a[i] = (float)(tern_rng_uniform(r) * 2 - 1);
        f->b[i] = (float)(tern_rng_uniform(r) * 2 - 1);
    }
    for (int i = 0; i < 12; i++)
        f->scale[i] = i < 5 ? 1.0f / 0.7f : 1.0f / 1.3f; /* two temperatures */
    f->batch = (llama_batch){.n_seqs = 2, .n_rows = 12, .seq_start = f->start,
                             .tokens = f->tokens, .pos = f->pos, .target = f->target};
}

static double objective(llama_model *m, fixture *f)
{
    float logp[12], ent[12];
    char err[256];
    cr_assert_eq(llama_forward(m, &f->batch, logp, ent, err, sizeof err), 0, "%s", err);
    double j = 0;
    for (int i = 0; i < 12; i++)
        j += (double)f->a[i] * logp[i] + (double)f->b[i] * ent[i];
    return j;
}

static void check_gradients(int tied, int with_temperature)
{
    llama_config c = micro(tied);
    llama_model m;
    char err[256];
    cr_assert_eq(llama_model_init(&m, &c, err, sizeof err), 0, "%s", err);
    llama_init_random(&m, 7);
    tern_rng r;
    tern_rng_seed(&r, 11);
    /* weights of std 0.1 and norm weights in 1 +- 0.2, so every path matters
     * while float32 rounding stays far below the differences measured */
    for (size_t i = 0; i < m.n_params; i++)
        m.params[i] = m.params[i] == 1.0f ? 1.0f + (float)(tern_rng_uniform(&r) - 0.5) * 0.4f
                                          : m.params[i] * 5;
    fixture f;
    make_batch(&f, &r, c.vocab_size);
    if (with_temperature)
        f.batch.scale = f.scale;

    objective(&m, &f);
    llama_zero_grad(&m);
    llama_backward(&m, &f.batch, f.a, f.b);

    const float eps = 1e-2f;
    size_t checked = 0;
    for (size_t t = 0; t < llama_tensor_count(&c); t++) {
        llama_tensor_info ti;
        llama_tensor_describe(&c, t, &ti);
        for (int k = 0; k < 16; k++) {
            size_t idx = ti.offset + (size_t)(tern_rng_u64(&r) % ti.numel);
            float keep = m.params[idx];
            /* fourth-order central difference: float32 noise and curvature both small */
            double jv[4];
            const float step[4] = {2 * eps, eps, -eps, -2 * eps};
            for (int q = 0; q < 4; q++) {
                m.params[idx] = keep + step[q];
                jv[q] = objective(&m, &f);
            }
            m.params[idx] = keep;
            double fd = (8 * (jv[1] - jv[2]) - (jv[0] - jv[3])) / (12 * eps), g = m.grads[idx];
            cr_expect(fabs(fd - g) <= 1e-3 + 1e-2 * fabs(fd), "%s[%zu]: backward %.6g, finite difference %.6g",
                      ti.name, idx - ti.offset, g, fd);
            checked++;
        }
    }
    cr_expect_geq(checked, 16 * (1 + 9 * 2 + 1));
    llama_model_free(&m);
}

Test(llama_grad, untied_every_tensor_matches_finite_differences) { check_gradients(0, 0); }
Test(llama_grad, tied_every_tensor_matches_finite_differences) { check_gradients(1, 0); }
Test(llama_grad, temperature_scaled_rows_match_finite_differences) { check_gradients(0, 1); }

Test(llama_grad, packed_sequences_do_not_see_each_other)
{
    llama_config c = micro(0);
    llama_model m;
    char err[256];
    cr_assert_eq(llama_model_init(&m, &c, err, sizeof err), 0, "%s", err);
    llama_init_random(&m, 3);
    tern_rng r;
    tern_rng_seed(&r, 5);
    fixture f;
    make_batch(&f, &r, c.vocab_size);
    float both[12], alone[7];
    cr_assert_eq(llama_forward(&m, &f.batch, both, NULL, err, sizeof err), 0, "%s", err);
    /* the second sequence on its own */
    int32_t start[2] = {0, 7};
    llama_batch b2 = {.n_seqs = 1, .n_rows = 7, .seq_start = start, .tokens = f.tokens + 5,
                      .pos = f.pos + 5, .target = f.target + 5};
    cr_assert_eq(llama_forward(&m, &b2, alone, NULL, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 7; i++)
        cr_expect_float_eq(both[5 + i], alone[i], 1e-5, "row %d", i);
    llama_model_free(&m);
}

Test(llama_grad, refuses_out_of_range_input)
{
    llama_config c = micro(0);
    llama_model m;
    char err[256];
    cr_assert_eq(llama_model_init(&m, &c, err, sizeof err), 0, "%s", err);
    int32_t start[2] = {0, 2}, tok[2] = {1, 99}, pos[2] = {0, 1}, tgt[2] = {99, -1};
    llama_batch b = {.n_seqs = 1, .n_rows = 2, .seq_start = start, .tokens = tok, .pos = pos,
                     .target = tgt};
    float lp[2];
    cr_expect_neq(llama_forward(&m, &b, lp, NULL, err, sizeof err), 0);
    cr_expect(strstr(err, "outside the vocabulary of 23"), "%s", err);
    llama_model_free(&m);
}
