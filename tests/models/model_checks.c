/* model_checks.c: see model_checks.h. */
#include "model_checks.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tern/model.h"

void expect_training_halves_nll(const char *plugin, const char *cfg)
{
    harness h;
    int rc = harness_open(&h, plugin, TERN_KIND_MODEL, cfg);
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    const tern_model_ops *ops = harness_ops(&h);
    const char *text = "the cat sat on the mat. the cat sat on the mat.";
    int32_t *ids = NULL;
    size_t n = 0;
    cr_assert_eq(ops->tokenize(h.state, text, strlen(text), 1, &ids, &n), TERN_OK);
    tern_sequence s = {.size = sizeof s, .tokens = ids, .len = n, .start = 1};
    float *dlogp = malloc(n * sizeof *dlogp), *lp = malloc(n * sizeof *lp);
    for (size_t i = 0; i < n; i++)
        dlogp[i] = i >= 1 ? -1.0f / (float)(n - 1) : 0; /* minimise mean NLL */
    double first = 0, last = 0;
    for (int step = 0; step < 30; step++) {
        cr_assert_eq(ops->score(h.state, &s, 1, &lp, NULL), TERN_OK);
        double nll = 0;
        for (size_t i = 1; i < n; i++)
            nll -= lp[i];
        nll /= (double)(n - 1);
        if (step == 0)
            first = nll;
        last = nll;
        const float *g[1] = {dlogp};
        cr_assert_eq(ops->backward(h.state, &s, 1, g, NULL), TERN_OK);
        tern_optim_step st = {.size = sizeof st, .lr = 3e-3, .beta1 = 0.9, .beta2 = 0.95,
                              .eps = 1e-8, .weight_decay = 0.0, .grad_clip = 1.0};
        cr_assert_eq(ops->step(h.state, &st), TERN_OK);
        cr_expect_gt(st.grad_norm, 0);
    }
    cr_expect_lt(last, first * 0.5, "%s (%s): mean NLL %g -> %g, it does not learn", plugin, cfg,
                 first, last);
    free(lp), free(dlogp);
    ops->free_buffer(h.state, ids);
    harness_close(&h);
}

void expect_generate_matches_score(const char *plugin, const char *cfg, float temperature)
{
    harness h;
    int rc = harness_open(&h, plugin, TERN_KIND_MODEL, cfg);
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    const tern_model_ops *ops = harness_ops(&h);
    int32_t prompt[3] = {256, 72, 105};
    tern_gen_request req = {.size = sizeof req, .prompt = prompt, .prompt_len = 3,
                            .n_samples = 4, .max_new_tokens = 20, .temperature = temperature,
                            .top_p = 1, .seed = 42};
    tern_gen_output out[4];
    for (int i = 0; i < 4; i++)
        out[i] = (tern_gen_output){.size = sizeof out[i]};
    cr_assert_eq(ops->generate(h.state, &req, 1, out), TERN_OK, "%s", h.error);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(out[i].len, 20);
        int32_t seq[32];
        memcpy(seq, prompt, sizeof prompt);
        memcpy(seq + 3, out[i].tokens, out[i].len * sizeof *seq);
        tern_sequence s = {.size = sizeof s, .tokens = seq, .len = 3 + out[i].len, .start = 3,
                           .temperature = temperature};
        float lpbuf[32], *lp = lpbuf;
        cr_assert_eq(ops->score(h.state, &s, 1, &lp, NULL), TERN_OK);
        double worst = 0;
        for (size_t k = 0; k < out[i].len; k++)
            worst = fmax(worst, fabs((double)lp[3 + k] - out[i].logprobs[k]));
        cr_expect_lt(worst, 1e-4, "%s (%s): sample %d: max |generate - score| = %g", plugin, cfg,
                     i, worst);
        ops->free_buffer(h.state, out[i].tokens);
        ops->free_buffer(h.state, out[i].logprobs);
    }
    harness_close(&h);
}
