/* test_multi_explorer.c: the `multi_explorer` sync plugin: N explorers that
 * never wait, the trainer publishing every I steps, max_staleness bounding
 * what the trainer accepts (docs/architecture.md §4, diagram (d)). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/errmsg.h"
#include "harness.h"
#include "tern/sync.h"

static const tern_sync_ops *start(harness *h, const char *settings)
{
    int rc = harness_open(h, "multi_explorer", TERN_KIND_SYNC, settings);
    cr_assert_eq(rc, TERN_OK, "%s: %s", settings, h->error);
    return harness_ops(h);
}

static tern_sync_info describe(const tern_sync_ops *ops, void *state)
{
    tern_sync_info info = {.size = sizeof info};
    cr_assert_eq(ops->describe(state, &info), TERN_OK);
    return info;
}

Test(multi_explorer, defaults_and_describe)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "");
    tern_sync_info info = describe(ops, h.state);
    cr_expect_eq(info.explorers, 2);
    cr_expect_str_eq(info.transport, "checkpoint");
    cr_expect_eq(info.max_staleness, -1);
    harness_close(&h);

    ops = start(&h, "explorers = 5; method = \"memory\"; max_staleness = 2;");
    info = describe(ops, h.state);
    cr_expect_eq(info.explorers, 5);
    cr_expect_str_eq(info.transport, "memory");
    cr_expect_eq(info.max_staleness, 2);
    harness_close(&h);
}

Test(multi_explorer, every_explorer_uses_newest_and_id_n_is_refused)
{
    for (uint32_t n = 1; n <= 6; n++) {
        harness h;
        char settings[64];
        snprintf(settings, sizeof settings, "explorers = %u;", n);
        const tern_sync_ops *ops = start(&h, settings);
        /* batches are numbered globally: explorer e takes k = e, e + n, ... */
        for (int64_t k = 0; k < 30; k++) {
            tern_sync_plan plan = {.size = sizeof plan};
            cr_assert_eq(ops->explorer_plan(h.state, (uint32_t)(k % n), k, &plan), TERN_OK);
            cr_expect_eq(plan.mode, TERN_SYNC_USE_NEWEST, "N=%u batch %lld", n, (long long)k);
        }
        tern_sync_plan plan = {.size = sizeof plan};
        cr_expect_eq(ops->explorer_plan(h.state, n, 0, &plan), TERN_EINVAL, "N=%u", n);
        cr_expect(strstr(tern_error_message(), "explorer"), "%s", tern_error_message());
        cr_expect_eq(ops->explorer_plan(h.state, n + 7, 0, &plan), TERN_EINVAL, "N=%u", n);
        cr_expect_eq(ops->explorer_plan(h.state, UINT32_MAX, 0, &plan), TERN_EINVAL);
        harness_close(&h);
    }
}

Test(multi_explorer, trainer_publishes_every_interval_steps)
{
    for (int I = 1; I <= 6; I++) {
        harness h;
        char settings[64];
        snprintf(settings, sizeof settings, "interval = %d; explorers = 3;", I);
        const tern_sync_ops *ops = start(&h, settings);
        for (int64_t t = 0; t < 40; t++)
            cr_expect_eq(ops->trainer_publishes(h.state, t), (t + 1) % I == 0, "I=%d t=%lld", I,
                         (long long)t);
        harness_close(&h);
    }
}

Test(multi_explorer, max_staleness_accept_rule)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "");
    cr_expect_eq(ops->accept(h.state, 0, 123456), 1, "unbounded by default");
    harness_close(&h);
    for (int ms = 0; ms <= 4; ms++) {
        char settings[64];
        snprintf(settings, sizeof settings, "max_staleness = %d; explorers = 4;", ms);
        ops = start(&h, settings);
        for (int64_t w = 0; w < 12; w++)
            for (int64_t v = 0; v <= w; v++)
                cr_expect_eq(ops->accept(h.state, v, w), w - v <= ms, "ms=%d v=%lld w=%lld", ms,
                             (long long)v, (long long)w);
        harness_close(&h);
    }
}

Test(multi_explorer, bad_settings)
{
    const char *bad[] = {"explorers = 0;", "explorers = 65;", "num_explorer = 3;", "offset = 1;",
                         "method = 3;"};
    const char *want[] = {"out of range", "out of range", "did you mean 'explorers'?",
                          "no fixed offset", "expected a string"};
    for (int i = 0; i < 5; i++) {
        harness h;
        cr_expect_neq(harness_open(&h, "multi_explorer", TERN_KIND_SYNC, bad[i]), TERN_OK, "%s",
                      bad[i]);
        cr_expect(strstr(h.error, want[i]), "%s -> %s", bad[i], h.error);
        harness_close(&h);
    }
    harness h;
    cr_expect_eq(harness_open(&h, "multi_explorer", TERN_KIND_SYNC, "explorers = 64;"), TERN_OK,
                 "%s", h.error);
    harness_close(&h);
}

Test(multi_explorer, bad_arguments_fail_cleanly)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "");
    tern_sync_plan plan = {.size = sizeof plan};
    cr_expect_eq(ops->explorer_plan(h.state, 0, -1, &plan), TERN_EINVAL);
    cr_expect_lt(ops->trainer_publishes(h.state, -1), 0);
    cr_expect_lt(ops->accept(h.state, 5, 2), 0, "an experience from the future is an error");
    cr_expect_lt(ops->accept(h.state, -1, 2), 0, "a negative version is an error");
    harness_close(&h);
}
