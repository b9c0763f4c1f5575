/* test_priority.c: the `priority` replay buffer plugin through its ops table,
 * started the way a run starts it (harness.h): linear_decay order and decay,
 * max_uses, cool-downs, eviction when full, staleness and advance(), uniform
 * replay and its seed, many producers and consumers, timeouts, close, stats,
 * bad settings and bad arguments. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/errmsg.h"
#include "harness.h"
#include "tern/buffer.h"

/* ---- helpers ------------------------------------------------------------ */

static const tern_buffer_ops *open_prio(harness *h, const char *settings)
{
    int rc = harness_open(h, "priority", TERN_KIND_BUFFER, settings);
    cr_assert_eq(rc, TERN_OK, "harness_open(\"%s\"): %s", settings, h->error);
    return harness_ops(h);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The payload of record `id`: a length and bytes that depend on the id, so a
 * mixed-up or corrupted record shows. */
static size_t payload_len(uint64_t id) { return 1 + (size_t)(id % 61); }

static void payload_fill(uint64_t id, unsigned char *buf)
{
    for (size_t i = 0; i < payload_len(id); i++)
        buf[i] = (unsigned char)(id * 31 + i * 7);
}

static int payload_ok(const tern_record *r)
{
    unsigned char want[64];
    uint64_t id = r->meta.id;
    payload_fill(id, want);
    return r->len == payload_len(id) && memcmp(r->data, want, r->len) == 0;
}

/* Put record `id` made at weight version `version`. */
static int put_v(const tern_buffer_ops *ops, void *st, uint64_t id, int64_t version,
                 int64_t timeout_ms)
{
    unsigned char buf[64];
    payload_fill(id, buf);
    tern_record_meta m = {.size = sizeof m, .id = id, .version = version,
                          .batch = (int64_t)id % 7};
    return ops->put(st, buf, payload_len(id), &m, timeout_ms);
}

static void put_ok(const tern_buffer_ops *ops, void *st, uint64_t id, int64_t version)
{
    int rc = put_v(ops, st, id, version, 0);
    cr_assert_eq(rc, TERN_OK, "put %llu (version %lld): %d %s", (unsigned long long)id,
                 (long long)version, rc, tern_error_message());
}

static void init_records(tern_record *r, size_t n)
{
    memset(r, 0, n * sizeof *r);
    for (size_t i = 0; i < n; i++)
        r[i].size = sizeof *r;
}

static tern_buffer_stats stats_of(const tern_buffer_ops *ops, void *st)
{
    tern_buffer_stats s = {.size = sizeof s};
    cr_assert_eq(ops->stats(st, &s), TERN_OK);
    return s;
}

/* get(want, timeout 0) that must hand out exactly `expect` ids in this order. */
static void expect_get(const tern_buffer_ops *ops, void *st, size_t want, const uint64_t *expect,
                       size_t n_expect, tern_record *r)
{
    init_records(r, want);
    size_t got = 99;
    int rc = ops->get(st, r, want, &got, 0);
    cr_assert_eq(rc, TERN_OK, "get: %d %s", rc, tern_error_message());
    cr_assert_eq(got, n_expect, "get handed out %zu records, want %zu", got, n_expect);
    for (size_t i = 0; i < got; i++) {
        cr_assert_eq(r[i].meta.id, expect[i], "record %zu is id %llu, want %llu", i,
                     (unsigned long long)r[i].meta.id, (unsigned long long)expect[i]);
        cr_assert(payload_ok(&r[i]), "payload of record %llu differs from what was put",
                  (unsigned long long)r[i].meta.id);
    }
}

/* The count observed for metric `name` in the step written now (-1: none). */
static long metric_count(const char *text, const char *name)
{
    char key[128];
    snprintf(key, sizeof key, "\"%s.count\":", name);
    const char *p = text ? strstr(text, key) : NULL;
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static char *metrics_text(tern_metrics *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    cr_assert_eq(tern_metrics_write_step(m, f, 1), TERN_OK);
    fclose(f);
    return text;
}

/* ---- the descriptor ------------------------------------------------------ */

Test(priority, descriptor_declares_a_thread_safe_replay_buffer)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "");
    const tern_plugin_descriptor *d = h.entry->plugin->desc;
    cr_assert_str_eq(d->name, "priority");
    cr_assert_eq(d->kind, TERN_KIND_BUFFER);
    cr_assert(d->caps & TERN_CAP_THREAD_SAFE, "caps lack TERN_CAP_THREAD_SAFE");
    cr_assert(d->caps & TERN_CAP_REPLAY, "caps lack TERN_CAP_REPLAY");
    cr_assert_eq(d->abi_major, TERN_ABI_MAJOR);
    cr_assert_geq(d->abi_minor, 2, "advance needs ABI minor 2");
    cr_assert(TERN_HAS(ops, advance), "ops table too small for advance");
    cr_assert_not_null(ops->advance, "advance is NULL");
    harness_close(&h);
}

Test(priority, defaults_are_capacity_1024_one_use_no_staleness_limit)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "");
    cr_assert_eq(stats_of(ops, h.state).capacity, 1024);
    put_ok(ops, h.state, 1, 0);
    put_ok(ops, h.state, 2, 1000000); /* max_staleness off: record 1 is not stale */
    tern_record r[4];
    uint64_t want[] = {2, 1}; /* linear_decay: newest version first */
    expect_get(ops, h.state, 4, want, 2, r);
    ops->release(h.state, r, 2);
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 0, "max_uses 1: a released record is freed");
    cr_assert_eq(s.skipped, 0);
    size_t got = 9;
    init_records(r, 1);
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_ETIMEDOUT);
    cr_assert_eq(got, 0);
    harness_close(&h);
}

/* ---- linear_decay order -------------------------------------------------- */

Test(priority, linear_decay_hands_out_highest_version_first_ties_in_put_order)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 16;");
    int64_t versions[] = {3, 7, 3, 9, 7, 1}; /* ids 1..6 */
    for (uint64_t id = 1; id <= 6; id++)
        put_ok(ops, h.state, id, versions[id - 1]);
    tern_record r[8];
    uint64_t want[] = {4, 2, 5, 1, 3, 6};
    expect_get(ops, h.state, 8, want, 6, r);
    for (size_t i = 0; i < 6; i++) {
        cr_assert_eq(r[i].meta.version, versions[r[i].meta.id - 1]);
        cr_assert_eq(r[i].meta.batch, (int64_t)r[i].meta.id % 7);
        cr_assert_eq(r[i].meta.size, sizeof(tern_record_meta));
        cr_assert_eq(r[i].use_count, 0);
    }
    ops->release(h.state, r, 6);

    /* one at a time gives the same order */
    for (uint64_t id = 11; id <= 16; id++)
        put_ok(ops, h.state, id, versions[id - 11]);
    uint64_t one_by_one[] = {14, 12, 15, 11, 13, 16};
    for (size_t i = 0; i < 6; i++) {
        expect_get(ops, h.state, 1, &one_by_one[i], 1, r);
        ops->release(h.state, r, 1);
    }
    harness_close(&h);
}

/* Record 1 (version 10) is handed out and released once while record 2
 * (version 9) waits; the next get must hand out `first`, then `second`. */
static void reuse_case(const char *settings, int put_fresh_first, uint64_t first, uint64_t second)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, settings);
    if (put_fresh_first) {
        put_ok(ops, h.state, 1, 10);
        put_ok(ops, h.state, 2, 9);
    } else {
        put_ok(ops, h.state, 2, 9);
        put_ok(ops, h.state, 1, 10);
    }
    tern_record r[2];
    uint64_t one = 1;
    expect_get(ops, h.state, 1, &one, 1, r);
    ops->release(h.state, r, 1);
    uint64_t want[] = {first, second};
    expect_get(ops, h.state, 2, want, 2, r);
    for (size_t i = 0; i < 2; i++)
        cr_assert_eq(r[i].use_count, r[i].meta.id == 1 ? 1u : 0u, "%s: use_count of %llu is %u",
                     settings, (unsigned long long)r[i].meta.id, r[i].use_count);
    ops->release(h.state, r, 2);
    harness_close(&h);
}

Test(priority, decay_moves_a_reused_record_behind_fresher_ones_as_the_formula_says)
{
    /* priority of record 1 after one use: 10 - decay; record 2: 9 */
    reuse_case("max_uses = 2; decay = 1.5;", 1, 2, 1); /* 8.5 < 9: falls behind */
    reuse_case("max_uses = 2; decay = 0.5;", 1, 1, 2); /* 9.5 > 9: stays ahead */
    reuse_case("max_uses = 2; decay = 0;", 1, 1, 2);   /* no decay */
    reuse_case("max_uses = 2; decay = 1;", 1, 1, 2);   /* 9 = 9: put earlier first */
    reuse_case("max_uses = 2; decay = 1;", 0, 2, 1);   /* 9 = 9: record 2 put earlier */
}

Test(priority, decay_accumulates_per_use)
{
    /* record 1 (version 10) against record 2 (version 9), decay 0.4: its
     * priority goes 10, 9.6, 9.2, 8.8, so it is handed out three times in a row
     * and then record 2 comes first */
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_uses = 5; decay = 0.4;");
    put_ok(ops, h.state, 1, 10);
    put_ok(ops, h.state, 2, 9);
    tern_record r[1];
    uint64_t want[] = {1, 1, 1, 2};
    for (size_t i = 0; i < 4; i++) {
        expect_get(ops, h.state, 1, &want[i], 1, r);
        cr_assert_eq(r[0].use_count, want[i] == 1 ? i : 0);
        ops->release(h.state, r, 1);
    }
    harness_close(&h);
}

/* ---- max_uses ------------------------------------------------------------ */

Test(priority, max_uses_hands_each_record_out_exactly_that_many_times)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 8; max_uses = 3; decay = 0;");
    for (uint64_t id = 0; id < 5; id++)
        put_ok(ops, h.state, id, 0);
    unsigned seen[5] = {0};
    unsigned uses_seen[5] = {0}; /* bit k: use_count k was reported */
    tern_record r[8];
    size_t got, total = 0;
    for (int round = 0; round < 100; round++) {
        init_records(r, 8);
        int rc = ops->get(h.state, r, 8, &got, 0);
        if (rc == TERN_ETIMEDOUT)
            break;
        cr_assert_eq(rc, TERN_OK, "get: %s", tern_error_message());
        for (size_t i = 0; i < got; i++) {
            uint64_t id = r[i].meta.id;
            cr_assert_lt(id, 5);
            cr_assert(payload_ok(&r[i]));
            for (size_t j = 0; j < i; j++)
                cr_assert_neq(r[j].meta.id, id, "record %llu twice in one get",
                              (unsigned long long)id);
            cr_assert_eq(r[i].use_count, seen[id], "record %llu: use_count %u, handed out %u "
                         "times before", (unsigned long long)id, r[i].use_count, seen[id]);
            uses_seen[id] |= 1u << r[i].use_count;
            seen[id]++;
        }
        total += got;
        ops->release(h.state, r, got);
    }
    for (size_t id = 0; id < 5; id++) {
        cr_assert_eq(seen[id], 3, "record %zu handed out %u times", id, seen[id]);
        cr_assert_eq(uses_seen[id], 0x7, "record %zu: use_counts seen %#x", id, uses_seen[id]);
    }
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(total, 15);
    cr_assert_eq(s.got, 15);
    cr_assert_eq(s.put, 5);
    cr_assert_eq(s.held, 0, "records are freed after their last use");
    harness_close(&h);
}

Test(priority, release_tolerates_a_second_release_and_frees_memory)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 2; max_uses = 2;");
    /* far more records than capacity go through: leaks would show under ASan */
    tern_record r[2];
    size_t got;
    for (uint64_t id = 0; id < 500; id++) {
        put_ok(ops, h.state, id, (int64_t)id);
        for (unsigned use = 0; use < 2; use++) {
            init_records(r, 2);
            cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
            cr_assert_eq(got, 1);
            cr_assert_eq(r[0].meta.id, id);
            cr_assert_eq(r[0].use_count, use);
            ops->release(h.state, r, 1);
            cr_assert_null(r[0].data, "release left data pointing at the record");
            ops->release(h.state, r, 1); /* harmless: the record is marked released */
        }
    }
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.put, 500);
    cr_assert_eq(s.got, 1000);
    cr_assert_eq(s.dropped, 0);
    harness_close(&h);
}

/* ---- reuse_cooldown_ms --------------------------------------------------- */

Test(priority, released_record_rests_for_the_cool_down, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_uses = 2; reuse_cooldown_ms = 300;");
    put_ok(ops, h.state, 1, 0);
    tern_record r[1];
    uint64_t one = 1;
    expect_get(ops, h.state, 1, &one, 1, r);
    ops->release(h.state, r, 1);
    double released = now_ms();
    size_t got = 9;
    init_records(r, 1);
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_ETIMEDOUT,
                 "a record was handed out again right after its release");
    cr_assert_eq(got, 0);
    cr_assert_eq(ops->get(h.state, r, 1, &got, 50), TERN_ETIMEDOUT,
                 "a get shorter than the cool-down found the record");
    cr_assert_eq(stats_of(ops, h.state).held, 1, "a cooling record is held");

    /* a get whose timeout outlasts the cool-down returns when it ends */
    init_records(r, 1);
    int rc = ops->get(h.state, r, 1, &got, 5000);
    double dt = now_ms() - released;
    cr_assert_eq(rc, TERN_OK, "get: %s", tern_error_message());
    cr_assert_eq(got, 1);
    cr_assert_eq(r[0].meta.id, 1);
    cr_assert_eq(r[0].use_count, 1);
    cr_assert_geq(dt, 290, "handed out again %.1f ms after release, cool-down is 300", dt);
    cr_assert_lt(dt, 2500, "handed out %.1f ms after release: the get overslept", dt);
    ops->release(h.state, r, 1);
    cr_assert_eq(stats_of(ops, h.state).held, 0);
    harness_close(&h);
}

typedef struct call {
    const tern_buffer_ops *ops;
    void *st;
    uint64_t id;
    int64_t version;
    int64_t timeout_ms;
    int rc;
    size_t got;
    tern_record rec;
    double done_ms;
} call;

static void *call_put(void *arg)
{
    call *c = arg;
    c->rc = put_v(c->ops, c->st, c->id, c->version, c->timeout_ms);
    c->done_ms = now_ms();
    return NULL;
}

static void *call_get(void *arg)
{
    call *c = arg;
    init_records(&c->rec, 1);
    c->got = 99;
    c->rc = c->ops->get(c->st, &c->rec, 1, &c->got, c->timeout_ms);
    c->done_ms = now_ms();
    return NULL;
}

Test(priority, blocked_get_picks_up_a_record_when_its_cool_down_ends, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_uses = 2; reuse_cooldown_ms = 200;");
    put_ok(ops, h.state, 7, 0);
    tern_record r[1];
    uint64_t seven = 7;
    expect_get(ops, h.state, 1, &seven, 1, r);
    /* a getter blocks (no limit) while the only record is handed out */
    call c = {.ops = ops, .st = h.state, .timeout_ms = -1, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_get, &c), 0);
    sleep_ms(50);
    double released = now_ms();
    ops->release(h.state, r, 1); /* starts the cool-down: the getter must wake at its end */
    pthread_join(t, NULL);
    double dt = c.done_ms - released;
    cr_assert_eq(c.rc, TERN_OK);
    cr_assert_eq(c.got, 1);
    cr_assert_eq(c.rec.meta.id, 7);
    cr_assert_eq(c.rec.use_count, 1);
    cr_assert_geq(dt, 190, "handed out %.1f ms after release, cool-down is 200", dt);
    cr_assert_lt(dt, 2500, "handed out %.1f ms after release: the getter overslept", dt);
    ops->release(h.state, &c.rec, 1);
    harness_close(&h);
}

Test(priority, a_fresh_record_is_handed_out_while_another_cools)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_uses = 2; reuse_cooldown_ms = 100000;");
    put_ok(ops, h.state, 1, 5);
    tern_record r[2];
    uint64_t one = 1, two = 2;
    expect_get(ops, h.state, 2, &one, 1, r);
    ops->release(h.state, r, 1);
    put_ok(ops, h.state, 2, 0); /* lower priority, but eligible */
    expect_get(ops, h.state, 2, &two, 1, r);
    ops->release(h.state, r, 1);
    cr_assert_eq(stats_of(ops, h.state).held, 2);
    harness_close(&h); /* destroy frees the cooling records */
}

/* ---- full buffer --------------------------------------------------------- */

Test(priority, full_buffer_evicts_the_lowest_priority)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 3;");
    put_ok(ops, h.state, 1, 5);
    put_ok(ops, h.state, 2, 3);
    put_ok(ops, h.state, 3, 7);
    put_ok(ops, h.state, 4, 4); /* evicts record 2 (version 3) */
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 3);
    cr_assert_eq(s.dropped, 1);
    put_ok(ops, h.state, 5, 1); /* lower than everything: the new record is dropped */
    s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 3);
    cr_assert_eq(s.dropped, 2);
    put_ok(ops, h.state, 6, 4); /* ties record 4 but was put later: dropped */
    s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 3);
    cr_assert_eq(s.put, 6, "every put that returned TERN_OK counts");
    cr_assert_eq(s.dropped, 3);
    cr_assert_eq(s.capacity, 3);
    char *text = metrics_text(h.metrics);
    long n = metric_count(text, "slot.dropped");
    free(text);
    cr_assert_eq(n, 3, "metric slot.dropped observed %ld times, want 3", n);
    tern_record r[8];
    uint64_t want[] = {3, 1, 4};
    expect_get(ops, h.state, 8, want, 3, r);
    ops->release(h.state, r, 3);
    harness_close(&h);
}

Test(priority, eviction_takes_cooling_records_but_never_handed_out_ones)
{
    harness h;
    const tern_buffer_ops *ops =
        open_prio(&h, "capacity = 2; max_uses = 2; decay = 0; reuse_cooldown_ms = 100000;");
    put_ok(ops, h.state, 1, 1);
    tern_record a[1], b[1], c[1];
    uint64_t one = 1, two = 2, three = 3;
    expect_get(ops, h.state, 1, &one, 1, a);
    ops->release(h.state, a, 1); /* record 1 cools (priority 1) */
    put_ok(ops, h.state, 2, 0);
    expect_get(ops, h.state, 1, &two, 1, b); /* record 2 (priority 0) is handed out */
    put_ok(ops, h.state, 3, 5); /* full: record 1, cooling, is the only evictable one */
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 2);
    cr_assert_eq(s.dropped, 1);
    expect_get(ops, h.state, 1, &three, 1, c);
    /* everything is handed out now: nothing to evict */
    cr_assert_eq(put_v(ops, h.state, 4, 100, 0), TERN_ETIMEDOUT);
    ops->release(h.state, b, 1);
    ops->release(h.state, c, 1);
    harness_close(&h);
}

Test(priority, put_blocks_while_everything_is_handed_out, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 2;");
    put_ok(ops, h.state, 1, 0);
    put_ok(ops, h.state, 2, 0);
    tern_record r[2];
    uint64_t want[] = {1, 2};
    expect_get(ops, h.state, 2, want, 2, r);
    cr_assert_eq(stats_of(ops, h.state).held, 2, "handed-out records count against capacity");

    double t0 = now_ms();
    tern_error_clear();
    cr_assert_eq(put_v(ops, h.state, 3, 9, 0), TERN_ETIMEDOUT);
    cr_assert_lt(now_ms() - t0, 1000, "timeout 0 must not wait");
    cr_assert(strstr(tern_error_message(), "capacity"), "message: %s", tern_error_message());
    t0 = now_ms();
    cr_assert_eq(put_v(ops, h.state, 3, 9, 50), TERN_ETIMEDOUT);
    double dt = now_ms() - t0;
    cr_assert_geq(dt, 40, "returned after %.1f ms, before the 50 ms timeout", dt);
    cr_assert_lt(dt, 2000, "returned after %.1f ms for a 50 ms timeout", dt);
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.put, 2, "a timed-out put must not count as accepted");
    cr_assert_eq(s.dropped, 0);

    call c = {.ops = ops, .st = h.state, .id = 3, .version = 9, .timeout_ms = 5000,
              .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_put, &c), 0);
    sleep_ms(50);
    double released = now_ms();
    ops->release(h.state, r, 1); /* record 1's last use: frees a slot */
    pthread_join(t, NULL);
    cr_assert_eq(c.rc, TERN_OK, "the waiting put returned %d", c.rc);
    cr_assert_lt(c.done_ms - released, 2000, "the release did not wake the waiting put");
    uint64_t three = 3;
    expect_get(ops, h.state, 1, &three, 1, r);
    ops->release(h.state, r, 1);
    ops->release(h.state, &r[1], 1);
    s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.put, 3);
    harness_close(&h);
}

Test(priority, blocked_put_evicts_a_record_released_with_uses_left, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 1; max_uses = 3;");
    put_ok(ops, h.state, 1, 0);
    tern_record r[1];
    uint64_t one = 1, two = 2;
    expect_get(ops, h.state, 1, &one, 1, r);
    call c = {.ops = ops, .st = h.state, .id = 2, .version = 1, .timeout_ms = 5000,
              .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_put, &c), 0);
    sleep_ms(50);
    double released = now_ms();
    ops->release(h.state, r, 1); /* requeued: evictable, and lower than the new record */
    pthread_join(t, NULL);
    cr_assert_eq(c.rc, TERN_OK, "the waiting put returned %d", c.rc);
    cr_assert_lt(c.done_ms - released, 2000, "the release did not wake the waiting put");
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 1);
    cr_assert_eq(s.dropped, 1);
    expect_get(ops, h.state, 1, &two, 1, r);
    ops->release(h.state, r, 1);
    harness_close(&h);
}

/* ---- max_staleness and advance -------------------------------------------- */

Test(priority, stale_records_are_skipped_as_newer_ones_arrive)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 16; max_staleness = 2;");
    for (uint64_t id = 0; id < 4; id++)
        put_ok(ops, h.state, id, (int64_t)id); /* current = 3: version 0 < 3 - 2 is stale */
    tern_record r[8];
    uint64_t want[] = {3, 2, 1};
    expect_get(ops, h.state, 8, want, 3, r);
    ops->release(h.state, r, 3);
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.skipped, 1);
    cr_assert_eq(s.held, 0, "a skipped record is freed");
    cr_assert_eq(s.got, 3, "a skipped record is not handed out");

    put_ok(ops, h.state, 10, 4);
    put_ok(ops, h.state, 11, 5);
    put_ok(ops, h.state, 12, 7); /* current = 7: versions below 5 are stale */
    uint64_t want2[] = {12, 11};
    expect_get(ops, h.state, 8, want2, 2, r);
    ops->release(h.state, r, 2);
    s = stats_of(ops, h.state);
    cr_assert_eq(s.skipped, 2);
    cr_assert_eq(s.held, 0);
    char *text = metrics_text(h.metrics);
    long n = metric_count(text, "slot.skipped");
    free(text);
    cr_assert_eq(n, 2, "metric slot.skipped observed %ld times, want 2", n);
    harness_close(&h);
}

Test(priority, advance_makes_records_stale_and_never_goes_back)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_uses = 2; max_staleness = 1;");
    put_ok(ops, h.state, 1, 5);
    put_ok(ops, h.state, 2, 4);
    ops->advance(h.state, 6); /* versions below 5 are stale */
    tern_record r[4];
    uint64_t one = 1;
    expect_get(ops, h.state, 4, &one, 1, r);
    cr_assert_eq(stats_of(ops, h.state).skipped, 1);
    ops->release(h.state, r, 1); /* record 1 (version 5) is requeued, still fresh */

    ops->advance(h.state, 3); /* lower: current stays 6 */
    put_ok(ops, h.state, 3, 5);
    uint64_t both[] = {3, 1}; /* 3 ranks above 1 (used once, decay 0.1) */
    expect_get(ops, h.state, 4, both, 2, r);
    ops->release(h.state, r, 2);

    /* record 1 is used up; record 3 waits with a use left */
    ops->advance(h.state, 100); /* versions below 99 are stale: record 3 is */
    put_ok(ops, h.state, 4, 99);
    uint64_t four = 4;
    expect_get(ops, h.state, 4, &four, 1, r);
    cr_assert_eq(stats_of(ops, h.state).skipped, 2, "record 3 turned stale while waiting");
    ops->release(h.state, r, 1); /* record 4 waits with a use left */
    ops->advance(h.state, 101);  /* and turns stale too */
    size_t got = 9;
    init_records(r, 4);
    cr_assert_eq(ops->get(h.state, r, 4, &got, 0), TERN_ETIMEDOUT);
    cr_assert_eq(got, 0);
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.skipped, 3);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.got, 4);
    harness_close(&h);
}

Test(priority, a_get_that_finds_only_stale_records_keeps_waiting, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_staleness = 0;");
    put_ok(ops, h.state, 1, 3);
    ops->advance(h.state, 4);
    call c = {.ops = ops, .st = h.state, .timeout_ms = 5000, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_get, &c), 0);
    sleep_ms(50);
    put_ok(ops, h.state, 2, 4);
    pthread_join(t, NULL);
    cr_assert_eq(c.rc, TERN_OK);
    cr_assert_eq(c.got, 1);
    cr_assert_eq(c.rec.meta.id, 2);
    ops->release(h.state, &c.rec, 1);
    cr_assert_eq(stats_of(ops, h.state).skipped, 1);
    harness_close(&h);
}

/* ---- uniform ------------------------------------------------------------- */

Test(priority, uniform_hands_out_every_record_within_its_reuse_limit)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "priority = \"uniform\"; max_uses = 3;");
    enum { N = 40 };
    for (uint64_t id = 0; id < N; id++)
        put_ok(ops, h.state, id, (int64_t)(N - id));
    unsigned seen[N] = {0};
    uint64_t first[N];
    size_t n_first = 0, total = 0;
    tern_record r[5];
    size_t got;
    for (;;) {
        init_records(r, 5);
        int rc = ops->get(h.state, r, 5, &got, 0);
        if (rc == TERN_ETIMEDOUT)
            break;
        cr_assert_eq(rc, TERN_OK);
        for (size_t i = 0; i < got; i++) {
            uint64_t id = r[i].meta.id;
            cr_assert_lt(id, N);
            cr_assert(payload_ok(&r[i]));
            cr_assert_eq(r[i].use_count, seen[id]);
            cr_assert_lt(seen[id], 3, "record %llu handed out more than max_uses",
                         (unsigned long long)id);
            seen[id]++;
            if (n_first < N)
                first[n_first++] = id;
        }
        total += got;
        ops->release(h.state, r, got);
        cr_assert_lt(total, 1000, "uniform keeps handing out");
    }
    for (size_t id = 0; id < N; id++)
        cr_assert_eq(seen[id], 3, "record %zu handed out %u times", id, seen[id]);
    /* versions fall with id: put order and linear_decay order are both 0, 1, ... */
    int fixed_order = 1;
    for (size_t i = 0; i < N; i++)
        fixed_order &= first[i] == i;
    cr_assert(!fixed_order, "uniform handed records out in put (= version) order");
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.got, 3 * N);
    cr_assert_eq(s.held, 0);
    harness_close(&h);
}

Test(priority, uniform_draws_each_record_about_equally_often)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "priority = \"uniform\"; max_uses = 1000000;");
    for (uint64_t id = 0; id < 8; id++)
        put_ok(ops, h.state, id, id == 0 ? 1000 : 0); /* versions play no part */
    unsigned count[8] = {0};
    tern_record r[1];
    size_t got;
    for (int i = 0; i < 8000; i++) {
        init_records(r, 1);
        cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
        count[r[0].meta.id]++;
        ops->release(h.state, r, 1);
    }
    for (size_t id = 0; id < 8; id++)
        cr_assert(count[id] > 800 && count[id] < 1200,
                  "record %zu drawn %u times in 8000, want about 1000", id, count[id]);
    harness_close(&h);
}

Test(priority, uniform_with_the_same_seed_gives_the_same_order)
{
    harness h1, h2;
    const char *settings = "priority = \"uniform\"; max_uses = 2;";
    const tern_buffer_ops *ops1 = open_prio(&h1, settings);
    const tern_buffer_ops *ops2 = open_prio(&h2, settings);
    enum { N = 30 };
    for (uint64_t id = 0; id < N; id++) {
        put_ok(ops1, h1.state, id, 0);
        put_ok(ops2, h2.state, id, 0);
    }
    /* interleaved: the instances share no generator state */
    tern_record r1[3], r2[3];
    size_t g1, g2, total = 0;
    uint64_t order[2 * N];
    for (;;) {
        init_records(r1, 3);
        init_records(r2, 3);
        int rc1 = ops1->get(h1.state, r1, 3, &g1, 0);
        int rc2 = ops2->get(h2.state, r2, 3, &g2, 0);
        cr_assert_eq(rc1, rc2);
        if (rc1 != TERN_OK)
            break;
        cr_assert_eq(g1, g2);
        for (size_t i = 0; i < g1; i++) {
            cr_assert_eq(r1[i].meta.id, r2[i].meta.id, "hand-out %zu differs: %llu vs %llu",
                         total + i, (unsigned long long)r1[i].meta.id,
                         (unsigned long long)r2[i].meta.id);
            order[total + i] = r1[i].meta.id;
        }
        total += g1;
        ops1->release(h1.state, r1, g1);
        ops2->release(h2.state, r2, g2);
    }
    cr_assert_eq(total, 2 * N);
    int sorted = 1;
    for (size_t i = 1; i < N; i++)
        sorted &= order[i] > order[i - 1];
    cr_assert(!sorted, "uniform handed the first round out in put order");
    harness_close(&h1);
    harness_close(&h2);
}

Test(priority, uniform_full_buffer_evicts_the_record_put_earliest)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "priority = \"uniform\"; capacity = 3;");
    put_ok(ops, h.state, 1, 9);
    put_ok(ops, h.state, 2, 0);
    put_ok(ops, h.state, 3, 5);
    put_ok(ops, h.state, 4, 0); /* evicts record 1, whatever its version */
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 3);
    cr_assert_eq(s.dropped, 1);
    tern_record r[8];
    size_t got;
    init_records(r, 8);
    cr_assert_eq(ops->get(h.state, r, 8, &got, 0), TERN_OK);
    cr_assert_eq(got, 3);
    unsigned mask = 0;
    for (size_t i = 0; i < got; i++)
        mask |= 1u << r[i].meta.id;
    cr_assert_eq(mask, (1u << 2) | (1u << 3) | (1u << 4), "records held: %#x", mask);
    ops->release(h.state, r, got);
    harness_close(&h);
}

/* ---- many producers, many consumers --------------------------------------- */

#define PRODUCERS 4
#define PER_PRODUCER 1000
#define CONSUMERS 2
#define TOTAL (PRODUCERS * PER_PRODUCER)

typedef struct mt {
    const tern_buffer_ops *ops;
    void *st;
    unsigned max_uses;
    atomic_uint seen[TOTAL]; /* deliveries of each id, all consumers */
} mt;

typedef struct producer {
    mt *m;
    uint64_t first;
    int failures;
    int last_rc;
} producer;

typedef struct consumer {
    mt *m;
    int corrupt, bad_use_count, too_many, final_rc;
} consumer;

static void *produce(void *arg)
{
    producer *p = arg;
    for (uint64_t i = 0; i < PER_PRODUCER; i++) {
        uint64_t id = p->first + i;
        /* finite waits: a lost wakeup fails the test instead of hanging it */
        int rc = put_v(p->m->ops, p->m->st, id, (int64_t)(i / 50), 10000);
        if (rc != TERN_OK) {
            p->failures++;
            p->last_rc = rc;
        }
    }
    return NULL;
}

static void *consume(void *arg)
{
    consumer *c = arg;
    tern_record r[8];
    for (;;) {
        init_records(r, 8);
        size_t got = 0;
        int rc = c->m->ops->get(c->m->st, r, 8, &got, 10000);
        if (rc != TERN_OK) {
            c->final_rc = rc;
            return NULL;
        }
        for (size_t i = 0; i < got; i++) {
            uint64_t id = r[i].meta.id;
            if (id >= TOTAL || !payload_ok(&r[i])) {
                c->corrupt++;
                continue;
            }
            /* the previous use was counted before its release, so before this get */
            unsigned before = atomic_fetch_add(&c->m->seen[id], 1);
            if (r[i].use_count != before)
                c->bad_use_count++;
            if (before >= c->m->max_uses)
                c->too_many++;
        }
        c->m->ops->release(c->m->st, r, got);
    }
}

/* Run PRODUCERS x PER_PRODUCER puts against CONSUMERS consumers, close once
 * the producers are done and let the consumers drain. */
static mt *run_many(harness *h, const char *settings, unsigned max_uses)
{
    const tern_buffer_ops *ops = open_prio(h, settings);
    mt *m = calloc(1, sizeof *m);
    cr_assert_not_null(m);
    m->ops = ops;
    m->st = h->state;
    m->max_uses = max_uses;
    producer prod[PRODUCERS];
    consumer cons[CONSUMERS];
    pthread_t pt[PRODUCERS], ct[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) {
        cons[i] = (consumer){.m = m};
        cr_assert_eq(pthread_create(&ct[i], NULL, consume, &cons[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        prod[i] = (producer){.m = m, .first = (uint64_t)i * PER_PRODUCER};
        cr_assert_eq(pthread_create(&pt[i], NULL, produce, &prod[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    ops->close(h->state); /* consumers drain what is eligible, then see TERN_ECLOSED */
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(ct[i], NULL);
    for (int i = 0; i < PRODUCERS; i++)
        cr_assert_eq(prod[i].failures, 0, "producer %d: %d puts failed, last with %d", i,
                     prod[i].failures, prod[i].last_rc);
    for (int i = 0; i < CONSUMERS; i++) {
        cr_assert_eq(cons[i].final_rc, TERN_ECLOSED, "consumer %d ended with %d", i,
                     cons[i].final_rc);
        cr_assert_eq(cons[i].corrupt, 0, "consumer %d got %d corrupt records", i,
                     cons[i].corrupt);
        cr_assert_eq(cons[i].bad_use_count, 0, "consumer %d saw %d wrong use_counts", i,
                     cons[i].bad_use_count);
        cr_assert_eq(cons[i].too_many, 0, "consumer %d saw %d records past max_uses", i,
                     cons[i].too_many);
    }
    return m;
}

Test(priority, many_producers_and_consumers_deliver_each_record_max_uses_times, .timeout = 60)
{
    harness h;
    mt *m = run_many(&h, "capacity = 8192; max_uses = 2;", 2);
    for (size_t id = 0; id < TOTAL; id++) {
        unsigned n = atomic_load(&m->seen[id]);
        cr_assert_eq(n, 2, "record %zu delivered %u times", id, n);
    }
    tern_buffer_stats s = stats_of(m->ops, h.state);
    cr_assert_eq(s.put, TOTAL);
    cr_assert_eq(s.got, 2 * TOTAL);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.dropped, 0);
    cr_assert_eq(s.skipped, 0);
    free(m);
    harness_close(&h);
}

Test(priority, many_producers_and_consumers_with_eviction_and_cool_down, .timeout = 60)
{
    harness h;
    mt *m = run_many(&h, "capacity = 16; max_uses = 3; decay = 0.5; reuse_cooldown_ms = 1;", 3);
    tern_buffer_stats s = stats_of(m->ops, h.state);
    uint64_t full = 0, deliveries = 0;
    for (size_t id = 0; id < TOTAL; id++) {
        unsigned n = atomic_load(&m->seen[id]);
        cr_assert_leq(n, 3, "record %zu delivered %u times", id, n);
        full += n == 3;
        deliveries += n;
    }
    /* every record was used up, dropped, or is still held (cooling at close) */
    cr_assert_eq(full + s.dropped + s.held, TOTAL, "used up %llu + dropped %llu + held %llu",
                 (unsigned long long)full, (unsigned long long)s.dropped,
                 (unsigned long long)s.held);
    cr_assert_eq(s.put, TOTAL);
    cr_assert_eq(s.got, deliveries);
    cr_assert_eq(s.skipped, 0);
    free(m);
    harness_close(&h);
}

/* ---- timeouts and close ---------------------------------------------------- */

Test(priority, get_on_empty_times_out_after_about_the_timeout)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 4;");
    tern_record r[1];
    init_records(r, 1);
    size_t got = 5;
    tern_error_clear();
    double t0 = now_ms();
    int rc = ops->get(h.state, r, 1, &got, 50);
    double dt = now_ms() - t0;
    cr_assert_eq(rc, TERN_ETIMEDOUT);
    cr_assert_eq(got, 0);
    cr_assert_geq(dt, 40, "returned after %.1f ms, before the 50 ms timeout", dt);
    cr_assert_lt(dt, 2000, "returned after %.1f ms for a 50 ms timeout", dt);
    cr_assert_neq(tern_error_message()[0], '\0', "a timeout leaves a message");
    t0 = now_ms();
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_ETIMEDOUT);
    cr_assert_lt(now_ms() - t0, 1000, "timeout 0 must not wait");
    harness_close(&h);
}

Test(priority, blocked_get_wakes_when_a_record_arrives, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "");
    call c = {.ops = ops, .st = h.state, .timeout_ms = 5000, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_get, &c), 0);
    sleep_ms(50);
    double t0 = now_ms();
    put_ok(ops, h.state, 42, 1);
    pthread_join(t, NULL);
    cr_assert_lt(c.done_ms - t0, 2000, "the waiting get was not woken by the put");
    cr_assert_eq(c.rc, TERN_OK);
    cr_assert_eq(c.got, 1);
    cr_assert_eq(c.rec.meta.id, 42);
    cr_assert(payload_ok(&c.rec));
    ops->release(h.state, &c.rec, 1);
    harness_close(&h);
}

Test(priority, close_wakes_a_blocked_get, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "");
    call c = {.ops = ops, .st = h.state, .timeout_ms = -1, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_get, &c), 0);
    sleep_ms(50); /* let it block */
    ops->close(h.state);
    pthread_join(t, NULL);
    cr_assert_eq(c.rc, TERN_ECLOSED);
    cr_assert_eq(c.got, 0);
    harness_close(&h);
}

Test(priority, close_wakes_a_blocked_put_and_refuses_later_puts, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 1;");
    put_ok(ops, h.state, 1, 0);
    tern_record r[1];
    uint64_t one = 1;
    expect_get(ops, h.state, 1, &one, 1, r); /* handed out: the next put must wait */
    call c = {.ops = ops, .st = h.state, .id = 2, .timeout_ms = -1, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_put, &c), 0);
    sleep_ms(50); /* let it block */
    ops->close(h.state);
    pthread_join(t, NULL);
    cr_assert_eq(c.rc, TERN_ECLOSED);
    tern_error_clear();
    cr_assert_eq(put_v(ops, h.state, 3, 0, 0), TERN_ECLOSED);
    cr_assert(strstr(tern_error_message(), "closed"), "message: %s", tern_error_message());
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.put, 1);
    cr_assert_eq(s.held, 1);
    ops->release(h.state, r, 1);
    harness_close(&h);
}

Test(priority, get_after_close_drains_eligible_records_without_waiting_for_cooling, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_uses = 2; reuse_cooldown_ms = 100000;");
    put_ok(ops, h.state, 1, 3);
    put_ok(ops, h.state, 2, 2);
    put_ok(ops, h.state, 3, 1);
    tern_record r[4];
    uint64_t one = 1, rest[] = {2, 3};
    expect_get(ops, h.state, 1, &one, 1, r);
    ops->release(h.state, r, 1); /* record 1 cools for 100 s */
    ops->close(h.state);
    ops->close(h.state); /* closing twice is harmless */
    init_records(r, 4);
    size_t got;
    double t0 = now_ms();
    cr_assert_eq(ops->get(h.state, r, 4, &got, 5000), TERN_OK);
    cr_assert_eq(got, 2);
    cr_assert_eq(r[0].meta.id, rest[0]);
    cr_assert_eq(r[1].meta.id, rest[1]);
    ops->release(h.state, r, got); /* they cool too */
    init_records(r, 4);
    got = 99;
    cr_assert_eq(ops->get(h.state, r, 4, &got, 5000), TERN_ECLOSED);
    cr_assert_lt(now_ms() - t0, 1000, "get on a closed buffer waited for cooling records");
    cr_assert_eq(got, 0);
    cr_assert_eq(stats_of(ops, h.state).held, 3);
    harness_close(&h);
}

Test(priority, after_close_records_released_with_uses_left_are_handed_out_again)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_uses = 2; reuse_cooldown_ms = 20;");
    put_ok(ops, h.state, 1, 0);
    ops->close(h.state);
    tern_record r[1];
    uint64_t one = 1;
    expect_get(ops, h.state, 1, &one, 1, r);
    ops->release(h.state, r, 1);
    sleep_ms(60); /* the cool-down has ended: the record is eligible again */
    expect_get(ops, h.state, 1, &one, 1, r);
    cr_assert_eq(r[0].use_count, 1);
    ops->release(h.state, r, 1);
    size_t got = 9;
    init_records(r, 1);
    cr_assert_eq(ops->get(h.state, r, 1, &got, -1), TERN_ECLOSED);
    cr_assert_eq(got, 0);
    cr_assert_eq(stats_of(ops, h.state).held, 0);
    harness_close(&h);
}

/* ---- memory, metadata, stats --------------------------------------------- */

Test(priority, destroy_frees_records_in_every_state)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_uses = 3; reuse_cooldown_ms = 100000;");
    for (uint64_t id = 0; id < 6; id++)
        put_ok(ops, h.state, id, (int64_t)id);
    tern_record r[2];
    size_t got;
    init_records(r, 2);
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
    ops->release(h.state, r, 2); /* cooling */
    init_records(r, 2);
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK); /* handed out, never released */
    cr_assert_eq(stats_of(ops, h.state).held, 6);
    /* destroy (in harness_close) frees 2 waiting, 2 cooling, 2 handed out */
    harness_close(&h);
}

Test(priority, put_copies_the_bytes)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "");
    char buf[] = "original";
    tern_record_meta m = {.size = sizeof m, .id = 1, .version = 2};
    cr_assert_eq(ops->put(h.state, buf, sizeof buf, &m, 0), TERN_OK);
    memcpy(buf, "changed", sizeof "changed");
    m.id = 999;
    tern_record r[1];
    init_records(r, 1);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
    cr_assert_str_eq(r[0].data, "original");
    cr_assert_eq(r[0].meta.id, 1);
    ops->release(h.state, r, 1);
    cr_assert_eq(ops->put(h.state, NULL, 0, &m, 0), TERN_OK, "an empty record is fine");
    init_records(r, 1);
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
    cr_assert_eq(r[0].len, 0);
    ops->release(h.state, r, 1);
    harness_close(&h);
}

Test(priority, meta_from_an_older_caller_keeps_only_what_it_gave)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "");
    /* a caller built when tern_record_meta ended after `id` */
    tern_record_meta old = {.size = offsetof(tern_record_meta, version), .id = 5,
                            .version = 1000, .batch = 1234}; /* not the caller's */
    cr_assert_eq(ops->put(h.state, "x", 1, &old, 0), TERN_OK, "%s", tern_error_message());
    put_ok(ops, h.state, 6, 1); /* version 1 beats record 5's version 0 */
    tern_record r[2];
    size_t got;
    init_records(r, 2);
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
    cr_assert_eq(got, 2);
    cr_assert_eq(r[0].meta.id, 6);
    cr_assert_eq(r[1].meta.id, 5);
    cr_assert_eq(r[1].meta.size, offsetof(tern_record_meta, version));
    cr_assert_eq(r[1].meta.version, 0);
    cr_assert_eq(r[1].meta.batch, 0);
    ops->release(h.state, r, 2);
    harness_close(&h);
}

Test(priority, get_writes_use_count_only_for_callers_that_have_it)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "max_uses = 2;");
    put_ok(ops, h.state, 1, 0);
    tern_record r[2];
    memset(r, 0xab, sizeof r);
    r[0].size = offsetof(tern_record, use_count); /* a caller before use_count */
    r[1].size = offsetof(tern_record, use_count);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
    cr_assert_eq(got, 1);
    uint32_t untouched;
    memset(&untouched, 0xab, sizeof untouched);
    cr_assert_eq(r[0].use_count, untouched, "get wrote past the caller's size");
    cr_assert_eq(r[0].meta.id, 1);
    ops->release(h.state, r, 1);
    harness_close(&h);
}

Test(priority, stats_count_records_in_every_state)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 4; max_uses = 2;");
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.capacity, 4);
    cr_assert_eq(s.put, 0);
    cr_assert_eq(s.got, 0);
    cr_assert_eq(s.dropped, 0);
    cr_assert_eq(s.skipped, 0);
    for (uint64_t id = 0; id < 3; id++)
        put_ok(ops, h.state, id, 0);
    tern_record r[2];
    size_t got;
    init_records(r, 2);
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
    s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 3, "handed-out records are held");
    cr_assert_eq(s.got, 2);
    ops->release(h.state, r, got);
    s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 3, "released records with uses left are held");
    cr_assert_eq(s.put, 3);
    harness_close(&h);
}

Test(priority, stats_write_only_the_members_the_caller_has)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 4;");
    put_ok(ops, h.state, 1, 0);
    tern_buffer_stats s;
    memset(&s, 0xab, sizeof s);
    s.size = offsetof(tern_buffer_stats, put); /* a caller that knows held, capacity */
    cr_assert_eq(ops->stats(h.state, &s), TERN_OK);
    cr_assert_eq(s.held, 1);
    cr_assert_eq(s.capacity, 4);
    uint64_t untouched;
    memset(&untouched, 0xab, sizeof untouched);
    cr_assert_eq(s.put, untouched, "stats wrote past the caller's size");
    cr_assert_eq(s.skipped, untouched, "stats wrote past the caller's size");
    harness_close(&h);
}

/* ---- bad arguments ------------------------------------------------------- */

Test(priority, bad_arguments_fail_with_einval_and_a_message)
{
    harness h;
    const tern_buffer_ops *ops = open_prio(&h, "capacity = 4;");
    tern_record_meta m = {.size = sizeof m, .id = 1};
    tern_error_clear();
    cr_assert_eq(ops->put(h.state, NULL, 3, &m, 0), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "NULL"), "message: %s", tern_error_message());
    tern_error_clear();
    cr_assert_eq(ops->put(h.state, "abc", 3, NULL, 0), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "meta"), "message: %s", tern_error_message());
    tern_record_meta tiny = {.size = sizeof(size_t)};
    tern_error_clear();
    cr_assert_eq(ops->put(h.state, "abc", 3, &tiny, 0), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "meta.size"), "message: %s", tern_error_message());

    put_ok(ops, h.state, 1, 0);
    tern_record r[2];
    init_records(r, 2);
    size_t got = 77;
    tern_error_clear();
    cr_assert_eq(ops->get(h.state, r, 0, &got, 0), TERN_EINVAL);
    cr_assert_eq(got, 0);
    cr_assert(strstr(tern_error_message(), "want"), "message: %s", tern_error_message());
    tern_error_clear();
    cr_assert_eq(ops->get(h.state, NULL, 2, &got, 0), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "out"), "message: %s", tern_error_message());
    tern_error_clear();
    cr_assert_eq(ops->get(h.state, r, 2, NULL, 0), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "got"), "message: %s", tern_error_message());
    r[1].size = 0; /* caller forgot to set it */
    tern_error_clear();
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "out[1].size"), "message: %s", tern_error_message());
    tern_error_clear();
    cr_assert_eq(ops->stats(h.state, NULL), TERN_EINVAL);
    cr_assert_neq(tern_error_message()[0], '\0');
    ops->release(h.state, NULL, 3); /* nothing to do, no crash */

    /* none of the refused calls lost the record or counted anything */
    uint64_t one = 1;
    expect_get(ops, h.state, 2, &one, 1, r);
    ops->release(h.state, r, 1);
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.put, 1);
    cr_assert_eq(s.got, 1);
    harness_close(&h);
}

/* ---- bad settings -------------------------------------------------------- */

static void assert_rejected(const char *settings, const char *expect1, const char *expect2)
{
    harness h;
    int rc = harness_open(&h, "priority", TERN_KIND_BUFFER, settings);
    cr_assert_neq(rc, TERN_OK, "settings \"%s\" were accepted", settings);
    cr_assert_null(h.state, "create ran for bad settings \"%s\"", settings);
    cr_assert(strstr(h.error, expect1), "settings \"%s\": message \"%s\" lacks \"%s\"", settings,
              h.error, expect1);
    cr_assert(strstr(h.error, expect2), "settings \"%s\": message \"%s\" lacks \"%s\"", settings,
              h.error, expect2);
    harness_close(&h);
}

Test(priority, unknown_priority_name_is_rejected)
{
    assert_rejected("priority = \"lifo\";", "slot.priority", "linear_decay|uniform");
}

Test(priority, out_of_range_settings_are_rejected)
{
    assert_rejected("max_uses = 0;", "max_uses", "out of range");
    assert_rejected("reuse_cooldown_ms = -5;", "reuse_cooldown_ms", "out of range");
    assert_rejected("max_staleness = -2;", "max_staleness", "out of range");
    assert_rejected("decay = -0.5;", "decay", "out of range");
    assert_rejected("capacity = 0;", "capacity", "out of range");
    assert_rejected("capacity = 2000000000;", "capacity", "out of range");
}

Test(priority, wrong_types_and_misspelt_keys_are_rejected)
{
    assert_rejected("max_uses = 1.5;", "max_uses", "expected an integer");
    assert_rejected("decay = \"fast\";", "decay", "expected");
    assert_rejected("max_use = 2;", "did you mean", "max_uses");
    assert_rejected("cooldown_ms = 2;", "did you mean", "reuse_cooldown_ms");
}

Test(priority, valid_settings_are_accepted)
{
    harness h;
    open_prio(&h, "capacity = 1; priority = \"uniform\"; decay = 2; max_uses = 1000000; "
                  "reuse_cooldown_ms = 0; max_staleness = -1;");
    harness_close(&h);
    open_prio(&h, "capacity = 1000000000; priority = \"linear_decay\"; decay = 0; "
                  "max_uses = 1; reuse_cooldown_ms = 1000000000; max_staleness = 0;");
    harness_close(&h);
}
