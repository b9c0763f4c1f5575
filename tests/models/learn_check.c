/* learn_check.c: see learn_check.h. */
#include "learn_check.h"

#include <criterion/criterion.h>
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
    }
    cr_expect_lt(last, first * 0.5, "%s (%s): mean NLL %g -> %g, it does not learn", plugin, cfg,
                 first, last);
    free(lp), free(dlogp);
    ops->free_buffer(h.state, ids);
    harness_close(&h);
}
