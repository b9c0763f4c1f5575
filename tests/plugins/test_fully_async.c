/* test_fully_async.c: the `fully_async` sync plugin: the explorer never
 * waits, the trainer publishes every I steps, max_staleness bounds what the
 * trainer accepts (docs/architecture.md §4, diagram (c)). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tern/sync.h"

static const tern_sync_ops *start(harness *h, const char *settings)
{
    int rc = harness_open(h, "fully_async", TERN_KIND_SYNC, settings);
    cr_assert_eq(rc, TERN_OK, "%s: %s", settings, h->error);
    return harness_ops(h);
}

static tern_sync_info describe(const tern_sync_ops *ops, void *state)
{
    tern_sync_info info = {.size = sizeof info};
    cr_assert_eq(ops->describe(state, &info), TERN_OK);
    return info;
}

Test(fully_async, plans_never_wait)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "interval = 3;");
    for (int64_t k = 0; k < 50; k++) {
        tern_sync_plan plan = {.size = sizeof plan, .mode = 0, .version = 7};
        cr_assert_eq(ops->explorer_plan(h.state, 0, k, &plan), TERN_OK);
        cr_expect_eq(plan.mode, TERN_SYNC_USE_NEWEST, "batch %lld", (long long)k);
    }
    harness_close(&h);
}

Test(fully_async, trainer_publishes_every_interval_steps)
{
    for (int I = 1; I <= 6; I++) {
        harness h;
        char settings[64];
        snprintf(settings, sizeof settings, "interval = %d;", I);
        const tern_sync_ops *ops = start(&h, settings);
        for (int64_t t = 0; t < 40; t++)
            cr_expect_eq(ops->trainer_publishes(h.state, t), (t + 1) % I == 0, "I=%d t=%lld", I,
                         (long long)t);
        harness_close(&h);
    }
}

Test(fully_async, defaults_and_describe)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "");
    tern_sync_info info = describe(ops, h.state);
    cr_expect_eq(info.explorers, 1);
    cr_expect_str_eq(info.transport, "checkpoint");
    cr_expect_eq(info.max_staleness, -1, "unbounded by default");
    for (int64_t t = 0; t < 10; t++)
        cr_expect_eq(ops->trainer_publishes(h.state, t), 1);
    /* unbounded: anything not from the future is accepted */
    cr_expect_eq(ops->accept(h.state, 0, 0), 1);
    cr_expect_eq(ops->accept(h.state, 0, 1000000), 1);
    harness_close(&h);

    ops = start(&h, "method = \"memory\"; max_staleness = 3;");
    info = describe(ops, h.state);
    cr_expect_str_eq(info.transport, "memory");
    cr_expect_eq(info.max_staleness, 3);
    harness_close(&h);
}

Test(fully_async, max_staleness_accept_rule)
{
    for (int ms = 0; ms <= 5; ms++) {
        harness h;
        char settings[64];
        snprintf(settings, sizeof settings, "max_staleness = %d;", ms);
        const tern_sync_ops *ops = start(&h, settings);
        for (int64_t w = 0; w < 15; w++)
            for (int64_t v = 0; v <= w; v++)
                cr_expect_eq(ops->accept(h.state, v, w), w - v <= ms, "ms=%d v=%lld w=%lld", ms,
                             (long long)v, (long long)w);
        harness_close(&h);
    }
}

Test(fully_async, offset_is_refused_with_pointers)
{
    harness h;
    cr_expect_eq(harness_open(&h, "fully_async", TERN_KIND_SYNC, "offset = 0;"), TERN_OK, "%s",
                 h.error);
    harness_close(&h);
    cr_assert_eq(harness_open(&h, "fully_async", TERN_KIND_SYNC, "offset = 2;"), TERN_ECONFIG);
    cr_expect(strstr(h.error, "offset") && strstr(h.error, "no fixed offset") &&
                  strstr(h.error, "max_staleness") && strstr(h.error, "one_step_off"),
              "%s", h.error);
    harness_close(&h);
}

Test(fully_async, bad_settings_and_arguments)
{
    const char *bad[] = {"interval = 0;", "method = 3;", "max_staleness = -2;",
                         "explorers = 2;"};
    const char *want[] = {"out of range", "expected a string", "out of range",
                          "unknown key 'explorers'"};
    for (int i = 0; i < 4; i++) {
        harness h;
        cr_expect_neq(harness_open(&h, "fully_async", TERN_KIND_SYNC, bad[i]), TERN_OK, "%s",
                      bad[i]);
        cr_expect(strstr(h.error, want[i]), "%s -> %s", bad[i], h.error);
        harness_close(&h);
    }
    harness h;
    const tern_sync_ops *ops = start(&h, "");
    tern_sync_plan plan = {.size = sizeof plan};
    cr_expect_eq(ops->explorer_plan(h.state, 0, -1, &plan), TERN_EINVAL);
    cr_expect_eq(ops->explorer_plan(h.state, 1, 0, &plan), TERN_EINVAL);
    cr_expect_lt(ops->trainer_publishes(h.state, -1), 0);
    cr_expect_lt(ops->accept(h.state, 5, 2), 0, "an experience from the future is an error");
    cr_expect_lt(ops->accept(h.state, -1, 2), 0, "a negative version is an error");
    harness_close(&h);
}
