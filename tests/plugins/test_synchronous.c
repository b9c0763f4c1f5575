/* test_synchronous.c: the `synchronous` sync plugin follows the fixed
 * schedule of docs/architecture.md §4 with offset 0 exactly. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness.h"
#include "tern/sync.h"

static const tern_sync_ops *start(harness *h, const char *settings)
{
    int rc = harness_open(h, "synchronous", TERN_KIND_SYNC, settings);
    cr_assert_eq(rc, TERN_OK, "%s", h->error);
    return harness_ops(h);
}

static int64_t version_of(const tern_sync_ops *ops, void *state, int64_t batch)
{
    tern_sync_plan plan = {.size = sizeof plan};
    cr_assert_eq(ops->explorer_plan(state, 0, batch, &plan), TERN_OK);
    cr_assert_eq(plan.mode, TERN_SYNC_WAIT_FOR_VERSION, "a fixed schedule always waits");
    return plan.version;
}

Test(synchronous, interval_4_matches_seed_000_left)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "interval = 4;");
    /* batches 0-3 with the initial weights, 4-7 with version 4 */
    const int64_t want[] = {0, 0, 0, 0, 4, 4, 4, 4, 8};
    for (int64_t k = 0; k < 9; k++)
        cr_expect_eq(version_of(ops, h.state, k), want[k], "batch %lld", (long long)k);
    /* publish after steps 3 and 7 only */
    for (int64_t t = 0; t < 12; t++)
        cr_expect_eq(ops->trainer_publishes(h.state, t), (t == 3 || t == 7 || t == 11),
                     "step %lld", (long long)t);
    harness_close(&h);
}

Test(synchronous, interval_1_is_on_policy)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "");
    for (int64_t k = 0; k < 20; k++) {
        cr_expect_eq(version_of(ops, h.state, k), k);
        cr_expect_eq(ops->trainer_publishes(h.state, k), 1);
    }
    tern_sync_info info = {.size = sizeof info};
    cr_assert_eq(ops->describe(h.state, &info), TERN_OK);
    cr_expect_eq(info.explorers, 1);
    cr_expect_str_eq(info.transport, "memory");
    cr_expect_eq(info.max_staleness, 0);
    harness_close(&h);
}

/* For every interval, the version a batch is generated with is one the
 * trainer has published by then, and staleness t - v(t) is in [0, I - 1]. */
Test(synchronous, staleness_bound_holds_for_every_interval)
{
    for (int interval = 1; interval <= 9; interval++) {
        harness h;
        char settings[64];
        snprintf(settings, sizeof settings, "interval = %d;", interval);
        const tern_sync_ops *ops = start(&h, settings);
        int64_t published = 0; /* newest version published before step t */
        for (int64_t t = 0; t < 50; t++) {
            int64_t v = version_of(ops, h.state, t);
            cr_expect_leq(v, published, "I=%d batch %lld needs unpublished %lld", interval,
                          (long long)t, (long long)v);
            cr_expect(t - v >= 0 && t - v <= interval - 1, "I=%d t=%lld v=%lld", interval,
                      (long long)t, (long long)v);
            cr_expect_eq(ops->accept(h.state, v, t), 1);
            if (ops->trainer_publishes(h.state, t))
                published = t + 1;
        }
        cr_expect_eq(ops->accept(h.state, 0, interval), 0, "older than the bound is refused");
        harness_close(&h);
    }
}

Test(synchronous, refuses_offset_with_pointer_to_one_step_off)
{
    harness h;
    cr_assert_neq(harness_open(&h, "synchronous", TERN_KIND_SYNC, "offset = 2;"), TERN_OK);
    cr_expect(strstr(h.error, "offset") && strstr(h.error, "one_step_off"), "%s", h.error);
    harness_close(&h);
}

Test(synchronous, bad_settings_are_config_errors)
{
    const char *bad[] = {"interval = 0;", "method = 3;", "interval = 2.0;",
                         "sync_intervl = 2;"};
    const char *want[] = {"out of range", "expected a string", "expected an integer",
                          "did you mean 'interval'?"};
    for (int i = 0; i < 4; i++) {
        harness h;
        cr_expect_neq(harness_open(&h, "synchronous", TERN_KIND_SYNC, bad[i]), TERN_OK, "%s",
                      bad[i]);
        cr_expect(strstr(h.error, want[i]), "%s -> %s", bad[i], h.error);
        harness_close(&h);
    }
}

Test(synchronous, bad_arguments_fail_cleanly)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "");
    tern_sync_plan plan = {.size = sizeof plan};
    cr_expect_eq(ops->explorer_plan(h.state, 0, -1, &plan), TERN_EINVAL);
    cr_expect_eq(ops->explorer_plan(h.state, 1, 0, &plan), TERN_EINVAL);
    cr_expect_lt(ops->trainer_publishes(h.state, -3), 0);
    cr_expect_lt(ops->accept(h.state, 5, 2), 0, "an experience from the future is an error");
    harness_close(&h);
}

Test(synchronous, method_checkpoint_is_the_transport)
{
    harness h;
    const tern_sync_ops *ops = start(&h, "method = \"checkpoint\"; interval = 3;");
    tern_sync_info info = {.size = sizeof info};
    cr_assert_eq(ops->describe(h.state, &info), TERN_OK);
    cr_expect_str_eq(info.transport, "checkpoint");
    cr_expect_eq(info.explorers, 1);
    cr_expect_eq(info.max_staleness, 2);
    /* the schedule does not depend on the transport */
    const int64_t want[] = {0, 0, 0, 3, 3, 3, 6};
    for (int64_t k = 0; k < 7; k++)
        cr_expect_eq(version_of(ops, h.state, k), want[k], "batch %lld", (long long)k);
    harness_close(&h);
}

Test(synchronous, max_staleness_default_and_above_the_bound_change_nothing)
{
    const char *cases[] = {"interval = 4;", "interval = 4; max_staleness = -1;",
                           "interval = 4; max_staleness = 3;", "interval = 4; max_staleness = 50;"};
    for (int c = 0; c < 4; c++) {
        harness h;
        const tern_sync_ops *ops = start(&h, cases[c]);
        tern_sync_info info = {.size = sizeof info};
        cr_assert_eq(ops->describe(h.state, &info), TERN_OK);
        cr_expect_eq(info.max_staleness, 3, "%s: describe gives the bound I-1", cases[c]);
        for (int64_t w = 0; w < 12; w++)
            for (int64_t v = 0; v <= w; v++)
                cr_expect_eq(ops->accept(h.state, v, w), w - v <= 3, "%s: v=%lld w=%lld",
                             cases[c], (long long)v, (long long)w);
        harness_close(&h);
    }
}

Test(synchronous, max_staleness_below_the_bound_is_refused)
{
    for (int ms = 0; ms < 3; ms++) {
        harness h;
        char settings[80];
        snprintf(settings, sizeof settings, "interval = 4; max_staleness = %d;", ms);
        cr_expect_eq(harness_open(&h, "synchronous", TERN_KIND_SYNC, settings), TERN_ECONFIG,
                     "%s", settings);
        cr_expect(strstr(h.error, "max_staleness") && strstr(h.error, "skipped") &&
                      strstr(h.error, "= 3"),
                  "%s -> %s", settings, h.error);
        harness_close(&h);
    }
    harness h; /* with I = 1 the bound is 0, so 0 is fine */
    cr_expect_eq(harness_open(&h, "synchronous", TERN_KIND_SYNC, "max_staleness = 0;"), TERN_OK,
                 "%s", h.error);
    harness_close(&h);
    cr_expect_neq(harness_open(&h, "synchronous", TERN_KIND_SYNC, "max_staleness = -2;"),
                  TERN_OK);
    cr_expect(strstr(h.error, "out of range"), "%s", h.error);
    harness_close(&h);
}
