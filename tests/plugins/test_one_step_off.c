/* test_one_step_off.c: the `one_step_off` sync plugin follows the fixed
 * schedule of docs/architecture.md §4 with offset O >= 1 exactly. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tern/sync.h"

static const tern_sync_ops *start(harness *h, const char *settings)
{
    int rc = harness_open(h, "one_step_off", TERN_KIND_SYNC, settings);
    cr_assert_eq(rc, TERN_OK, "%s: %s", settings, h->error);
    return harness_ops(h);
}

static int64_t version_of(const tern_sync_ops *ops, void *state, int64_t batch)
{
    tern_sync_plan plan = {.size = sizeof plan};
    cr_assert_eq(ops->explorer_plan(state, 0, batch, &plan), TERN_OK);
    cr_assert_eq(plan.mode, TERN_SYNC_WAIT_FOR_VERSION, "a fixed schedule always waits");
    return plan.version;
}

static tern_sync_info describe(const tern_sync_ops *ops, void *state)
{
    tern_sync_info info = {.size = sizeof info};
    cr_assert_eq(ops->describe(state, &info), TERN_OK);
    return info;
}

Test(one_step_off, interval_1_offset_4_matches_seed_000_right)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "interval = 1; offset = 4;");
    /* batches 0-4 with the initial weights, then batch k with version k - 4 */
    const int64_t want[] = {0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6};
    for (int64_t k = 0; k < 11; k++)
        cr_expect_eq(version_of(ops, h.state, k), want[k], "batch %lld", (long long)k);
    for (int64_t t = 0; t < 10; t++)
        cr_expect_eq(ops->trainer_publishes(h.state, t), 1, "I = 1 publishes every step");
    tern_sync_info info = describe(ops, h.state);
    cr_expect_eq(info.max_staleness, 4);
    harness_close(&h);
}

Test(one_step_off, defaults_are_one_step_off)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "");
    cr_expect_eq(version_of(ops, h.state, 0), 0);
    for (int64_t k = 1; k < 20; k++)
        cr_expect_eq(version_of(ops, h.state, k), k - 1, "batch %lld", (long long)k);
    tern_sync_info info = describe(ops, h.state);
    cr_expect_eq(info.explorers, 1);
    cr_expect_str_eq(info.transport, "memory");
    cr_expect_eq(info.max_staleness, 1);
    harness_close(&h);
}

Test(one_step_off, interval_and_offset_together)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "interval = 3; offset = 2;");
    /* v(k) = 3 * max(0, floor((k - 2) / 3)) */
    const int64_t want[] = {0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9};
    for (int64_t k = 0; k < 12; k++)
        cr_expect_eq(version_of(ops, h.state, k), want[k], "batch %lld", (long long)k);
    for (int64_t t = 0; t < 12; t++)
        cr_expect_eq(ops->trainer_publishes(h.state, t), t % 3 == 2, "step %lld", (long long)t);
    cr_expect_eq(describe(ops, h.state).max_staleness, 4);
    harness_close(&h);
}

/* For every interval and offset, a simulated trainer trains batch t at step t
 * and publishes per trainer_publishes: the version a batch waits for has
 * been published by the time the schedule needs it (the explorer may be at
 * most O batches ahead of the trainer), staleness t - v(t) is in
 * [O, O + I - 1] once t >= O, and accept() takes every batch of the schedule. */
Test(one_step_off, schedule_holds_for_every_interval_and_offset)
{
    for (int I = 1; I <= 6; I++) {
        for (int O = 1; O <= 6; O++) {
            harness h;
            char settings[64];
            snprintf(settings, sizeof settings, "interval = %d; offset = %d;", I, O);
            const tern_sync_ops *ops = start(&h, settings);
            int64_t bound = O + I - 1;
            cr_expect_eq(describe(ops, h.state).max_staleness, bound, "%s", settings);
            /* published[t]: newest version published before step t starts */
            int64_t published[80];
            published[0] = 0;
            for (int64_t t = 0; t + 1 < 80; t++) {
                int p = ops->trainer_publishes(h.state, t);
                cr_assert_geq(p, 0);
                published[t + 1] = p ? t + 1 : published[t];
            }
            for (int64_t t = 0; t < 80; t++) {
                int64_t v = version_of(ops, h.state, t);
                /* batch t may be generated while step t - O runs, i.e. once
                 * steps 0..t-O-1 are done */
                int64_t ready = t - O < 0 ? 0 : published[t - O];
                cr_expect_leq(v, ready, "%s: batch %lld needs version %lld, published %lld",
                              settings, (long long)t, (long long)v, (long long)ready);
                cr_expect_eq(v % I, 0, "%s: only published versions are used", settings);
                if (t >= O)
                    cr_expect(t - v >= O && t - v <= bound, "%s: t=%lld v=%lld", settings,
                              (long long)t, (long long)v);
                else
                    cr_expect_eq(v, 0, "%s: t=%lld before the offset", settings, (long long)t);
                cr_expect_eq(ops->accept(h.state, v, t), 1, "%s: t=%lld", settings,
                             (long long)t);
            }
            cr_expect_eq(ops->accept(h.state, 0, bound + 1), 0, "%s: older than the bound",
                         settings);
            harness_close(&h);
        }
    }
}

Test(one_step_off, offset_0_is_refused_with_pointer_to_synchronous)
{
    harness h;
    cr_assert_eq(harness_open(&h, "one_step_off", TERN_KIND_SYNC, "offset = 0;"), TERN_ECONFIG);
    cr_expect(strstr(h.error, "offset") && strstr(h.error, "plugin = \"synchronous\""), "%s",
              h.error);
    harness_close(&h);
}

Test(one_step_off, max_staleness_rules)
{
    /* bound O + I - 1 = 2 + 3 - 1 = 4 */
    const char *ok[] = {"max_staleness = -1;", "max_staleness = 4;", "max_staleness = 99;"};
    for (int i = 0; i < 3; i++) {
        harness h;
        char settings[96];
        snprintf(settings, sizeof settings, "interval = 3; offset = 2; %s", ok[i]);
        const tern_sync_ops *ops = start(&h, settings);
        cr_expect_eq(describe(ops, h.state).max_staleness, 4, "%s", settings);
        cr_expect_eq(ops->accept(h.state, 0, 4), 1, "%s", settings);
        cr_expect_eq(ops->accept(h.state, 0, 5), 0, "%s: above the bound changes nothing",
                     settings);
        harness_close(&h);
    }
    /* below the offset: every batch would be skipped */
    for (int ms = 0; ms < 2; ms++) {
        harness h;
        char settings[96];
        snprintf(settings, sizeof settings, "interval = 3; offset = 2; max_staleness = %d;", ms);
        cr_expect_eq(harness_open(&h, "one_step_off", TERN_KIND_SYNC, settings), TERN_ECONFIG);
        cr_expect(strstr(h.error, "max_staleness") && strstr(h.error, "every one of them") &&
                      strstr(h.error, "skipped"),
                  "%s -> %s", settings, h.error);
        harness_close(&h);
    }
    /* between offset and bound: some batches of every interval */
    for (int ms = 2; ms < 4; ms++) {
        harness h;
        char settings[96];
        snprintf(settings, sizeof settings, "interval = 3; offset = 2; max_staleness = %d;", ms);
        cr_expect_eq(harness_open(&h, "one_step_off", TERN_KIND_SYNC, settings), TERN_ECONFIG);
        char want[64];
        snprintf(want, sizeof want, "(%d of each 3)", 4 - ms);
        cr_expect(strstr(h.error, "max_staleness") && strstr(h.error, want) &&
                      strstr(h.error, "skipped"),
                  "%s -> %s", settings, h.error);
        harness_close(&h);
    }
}

Test(one_step_off, method_checkpoint_and_bad_settings)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "method = \"checkpoint\";");
    cr_expect_str_eq(describe(ops, h.state).transport, "checkpoint");
    harness_close(&h);
    /* a transport plugin's name passes: the core checks it names one (run_checks.c) */
    ops = start(&h, "method = \"nccl\";");
    cr_expect_str_eq(describe(ops, h.state).transport, "nccl");
    harness_close(&h);
    const char *bad[] = {"interval = 0;", "method = 3;", "offset = -1;", "ofset = 2;",
                         "max_staleness = -5;"};
    const char *want[] = {"out of range", "expected a string", "out of range",
                          "did you mean 'offset'?", "out of range"};
    for (int i = 0; i < 5; i++) {
        cr_expect_neq(harness_open(&h, "one_step_off", TERN_KIND_SYNC, bad[i]), TERN_OK, "%s",
                      bad[i]);
        cr_expect(strstr(h.error, want[i]), "%s -> %s", bad[i], h.error);
        harness_close(&h);
    }
}

Test(one_step_off, bad_arguments_fail_cleanly)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "");
    tern_sync_plan plan = {.size = sizeof plan};
    cr_expect_eq(ops->explorer_plan(h.state, 0, -1, &plan), TERN_EINVAL);
    cr_expect_eq(ops->explorer_plan(h.state, 1, 0, &plan), TERN_EINVAL);
    cr_expect_lt(ops->trainer_publishes(h.state, -3), 0);
    cr_expect_lt(ops->accept(h.state, 5, 2), 0, "an experience from the future is an error");
    cr_expect_lt(ops->accept(h.state, -1, 2), 0, "a negative version is an error");
    harness_close(&h);
}
