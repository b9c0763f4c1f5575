/* test_fifo.c: the `fifo` buffer plugin through its ops table, started the way
 * a run starts it (harness.h): order, batching, release, many producers and
 * consumers, timeouts, the full-buffer policies, close, stats, bad settings. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/errmsg.h"
#include "harness.h"
#include "tern/buffer.h"

/* ---- helpers ------------------------------------------------------------ */

static const tern_buffer_ops *open_fifo(harness *h, const char *settings)
{
    int rc = harness_open(h, "fifo", TERN_KIND_BUFFER, settings);
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

static tern_record_meta meta_of(uint64_t id)
{
    tern_record_meta m = {.size = sizeof m, .id = id, .version = (int64_t)id / 10,
                          .batch = (int64_t)id % 7};
    return m;
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

static int put_id(const tern_buffer_ops *ops, void *st, uint64_t id, int64_t timeout_ms)
{
    unsigned char buf[64];
    payload_fill(id, buf);
    tern_record_meta m = meta_of(id);
    return ops->put(st, buf, payload_len(id), &m, timeout_ms);
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

/* ---- the descriptor ------------------------------------------------------ */

Test(fifo, descriptor_declares_a_thread_safe_buffer)
{
    harness h;
    open_fifo(&h, "");
    const tern_plugin_descriptor *d = h.entry->plugin->desc;
    cr_assert_str_eq(d->name, "fifo");
    cr_assert_str_eq(d->version, "1.0.0");
    cr_assert_eq(d->kind, TERN_KIND_BUFFER);
    cr_assert(d->caps & TERN_CAP_THREAD_SAFE);
    cr_assert_eq(d->abi_major, TERN_ABI_MAJOR);
    harness_close(&h);
}

/* ---- order, batching, release ------------------------------------------- */

Test(fifo, hands_records_out_in_put_order)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 8;");
    for (uint64_t id = 100; id < 105; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK, "%s", tern_error_message());
    tern_record r[8];
    init_records(r, 8);
    size_t got = 99;
    cr_assert_eq(ops->get(h.state, r, 8, &got, 0), TERN_OK);
    cr_assert_eq(got, 5);
    for (size_t i = 0; i < got; i++) {
        cr_assert_eq(r[i].meta.id, 100 + i, "record %zu has id %llu", i,
                     (unsigned long long)r[i].meta.id);
        cr_assert_eq(r[i].meta.version, (int64_t)(100 + i) / 10);
        cr_assert_eq(r[i].meta.batch, (int64_t)(100 + i) % 7);
        cr_assert_eq(r[i].meta.size, sizeof(tern_record_meta));
        cr_assert_eq(r[i].use_count, 0);
        cr_assert(payload_ok(&r[i]), "payload of record %zu differs from what was put", i);
    }
    ops->release(h.state, r, got);
    harness_close(&h);
}

Test(fifo, get_hands_out_at_most_want_and_does_not_wait_for_more)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 16;");
    for (uint64_t id = 0; id < 7; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    tern_record r[4];
    size_t got;
    uint64_t next = 0;
    size_t batches[] = {3, 3, 1}; /* want 3, 3, then 3 with only 1 left */
    for (size_t b = 0; b < 3; b++) {
        init_records(r, 4);
        double t0 = now_ms();
        cr_assert_eq(ops->get(h.state, r, 3, &got, 5000), TERN_OK);
        cr_assert_lt(now_ms() - t0, 2000, "get waited for a full batch instead of returning");
        cr_assert_eq(got, batches[b]);
        cr_assert_eq(r[3].size, sizeof r[3], "get wrote past out[want - 1]");
        cr_assert_null(r[3].data, "get wrote past out[want - 1]");
        for (size_t i = 0; i < got; i++)
            cr_assert_eq(r[i].meta.id, next++);
        ops->release(h.state, r, got);
    }
    harness_close(&h);
}

Test(fifo, release_gives_back_memory_and_tolerates_a_second_release)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 2;");
    /* far more records than capacity go through: leaks would show under ASan */
    tern_record r[2];
    for (uint64_t id = 0; id < 1000; id++) {
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK, "put %llu: %s",
                     (unsigned long long)id, tern_error_message());
        init_records(r, 2);
        size_t got;
        cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
        cr_assert_eq(got, 1);
        cr_assert_eq(r[0].meta.id, id);
        ops->release(h.state, r, 1);
        cr_assert_null(r[0].data, "release left data pointing at freed memory");
        ops->release(h.state, r, 1); /* harmless: the record is marked released */
    }
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.put, 1000);
    cr_assert_eq(s.got, 1000);
    harness_close(&h);
}

Test(fifo, destroy_frees_records_held_and_not_released)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 8;");
    for (uint64_t id = 0; id < 6; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    tern_record r[2];
    init_records(r, 2);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
    cr_assert_eq(got, 2);
    /* no release: destroy (in harness_close) must free these and the 4 held */
    harness_close(&h);
}

Test(fifo, empty_record_round_trips)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "");
    tern_record_meta m = meta_of(7);
    cr_assert_eq(ops->put(h.state, NULL, 0, &m, 0), TERN_OK, "%s", tern_error_message());
    tern_record r[1];
    init_records(r, 1);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
    cr_assert_eq(got, 1);
    cr_assert_eq(r[0].len, 0);
    cr_assert_eq(r[0].meta.id, 7);
    ops->release(h.state, r, 1);
    harness_close(&h);
}

Test(fifo, put_copies_the_bytes)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "");
    char buf[] = "original";
    tern_record_meta m = meta_of(1);
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
    harness_close(&h);
}

Test(fifo, meta_from_an_older_caller_keeps_only_what_it_gave)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "");
    /* a caller built when tern_record_meta ended after `version` */
    tern_record_meta m = meta_of(5);
    m.size = offsetof(tern_record_meta, batch);
    m.batch = 1234; /* not the caller's: must not be read */
    cr_assert_eq(ops->put(h.state, "x", 1, &m, 0), TERN_OK, "%s", tern_error_message());
    tern_record r[1];
    init_records(r, 1);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
    cr_assert_eq(r[0].meta.size, offsetof(tern_record_meta, batch));
    cr_assert_eq(r[0].meta.id, 5);
    cr_assert_eq(r[0].meta.version, m.version);
    cr_assert_eq(r[0].meta.batch, 0);
    ops->release(h.state, r, 1);
    harness_close(&h);
}

/* ---- bad arguments ------------------------------------------------------- */

Test(fifo, bad_arguments_fail_with_einval_and_a_message)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 4;");
    tern_record_meta m = meta_of(1);
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

    cr_assert_eq(put_id(ops, h.state, 1, 0), TERN_OK);
    tern_record r[2];
    init_records(r, 2);
    size_t got = 77;
    tern_error_clear();
    cr_assert_eq(ops->get(h.state, r, 0, &got, 0), TERN_EINVAL);
    cr_assert_eq(got, 0);
    cr_assert(strstr(tern_error_message(), "want"), "message: %s", tern_error_message());
    tern_error_clear();
    cr_assert_eq(ops->get(h.state, NULL, 2, &got, 0), TERN_EINVAL);
    cr_assert_neq(tern_error_message()[0], '\0');
    tern_error_clear();
    cr_assert_eq(ops->get(h.state, r, 2, NULL, 0), TERN_EINVAL);
    cr_assert_neq(tern_error_message()[0], '\0');
    r[1].size = 0; /* caller forgot to set it */
    tern_error_clear();
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "out[1].size"), "message: %s", tern_error_message());
    tern_error_clear();
    cr_assert_eq(ops->stats(h.state, NULL), TERN_EINVAL);
    cr_assert_neq(tern_error_message()[0], '\0');

    /* none of the refused calls lost the record */
    init_records(r, 2);
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
    cr_assert_eq(got, 1);
    cr_assert_eq(r[0].meta.id, 1);
    ops->release(h.state, r, got);
    cr_assert_eq(stats_of(ops, h.state).put, 1);
    harness_close(&h);
}

/* ---- many producers, many consumers --------------------------------------- */

#define PRODUCERS 4
#define PER_PRODUCER 2000
#define CONSUMERS 2
#define TOTAL (PRODUCERS * PER_PRODUCER)

typedef struct mt {
    const tern_buffer_ops *ops;
    void *st;
} mt;

typedef struct producer {
    mt *m;
    uint64_t first;
    int failures;
    int last_rc;
} producer;

typedef struct consumer {
    mt *m;
    unsigned seen[TOTAL]; /* times each id was delivered to this consumer */
    int64_t last[PRODUCERS]; /* last index seen per producer: FIFO keeps them rising */
    int out_of_order, corrupt, final_rc;
    size_t batches;
} consumer;

static void *produce(void *arg)
{
    producer *p = arg;
    for (uint64_t i = 0; i < PER_PRODUCER; i++) {
        /* finite waits: a lost wakeup fails the test instead of hanging it */
        int rc = put_id(p->m->ops, p->m->st, p->first + i, 10000);
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
    for (int k = 0; k < PRODUCERS; k++)
        c->last[k] = -1;
    tern_record r[8];
    for (;;) {
        init_records(r, 8);
        size_t got = 0;
        int rc = c->m->ops->get(c->m->st, r, 8, &got, 10000);
        if (rc != TERN_OK) {
            c->final_rc = rc;
            return NULL;
        }
        c->batches++;
        for (size_t i = 0; i < got; i++) {
            uint64_t id = r[i].meta.id;
            if (id >= TOTAL || !payload_ok(&r[i])) {
                c->corrupt++;
                continue;
            }
            c->seen[id]++;
            size_t prod = id / PER_PRODUCER;
            int64_t idx = (int64_t)(id % PER_PRODUCER);
            if (idx <= c->last[prod])
                c->out_of_order++;
            c->last[prod] = idx;
        }
        c->m->ops->release(c->m->st, r, got);
    }
}

Test(fifo, many_producers_and_consumers_deliver_each_record_exactly_once, .timeout = 60)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 16; when_full = \"block\";");
    mt m = {ops, h.state};
    producer prod[PRODUCERS];
    consumer *cons = calloc(CONSUMERS, sizeof *cons);
    cr_assert_not_null(cons);
    pthread_t pt[PRODUCERS], ct[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) {
        cons[i].m = &m;
        cr_assert_eq(pthread_create(&ct[i], NULL, consume, &cons[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        prod[i] = (producer){.m = &m, .first = (uint64_t)i * PER_PRODUCER};
        cr_assert_eq(pthread_create(&pt[i], NULL, produce, &prod[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    ops->close(h.state); /* consumers drain what is left, then see TERN_ECLOSED */
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
        cr_assert_eq(cons[i].out_of_order, 0,
                     "consumer %d saw a producer's records out of order %d times", i,
                     cons[i].out_of_order);
    }
    for (size_t id = 0; id < TOTAL; id++) {
        unsigned n = 0;
        for (int i = 0; i < CONSUMERS; i++)
            n += cons[i].seen[id];
        cr_assert_eq(n, 1, "record %zu delivered %u times", id, n);
    }
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.put, TOTAL);
    cr_assert_eq(s.got, TOTAL);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.dropped, 0);
    free(cons);
    harness_close(&h);
}

/* ---- timeouts ------------------------------------------------------------ */

Test(fifo, get_on_empty_times_out_after_about_the_timeout)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 4;");
    tern_record r[1];
    init_records(r, 1);
    size_t got = 5;
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

Test(fifo, put_on_full_with_block_times_out)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 2; when_full = \"block\";");
    cr_assert_eq(put_id(ops, h.state, 1, 0), TERN_OK);
    cr_assert_eq(put_id(ops, h.state, 2, 0), TERN_OK);
    double t0 = now_ms();
    cr_assert_eq(put_id(ops, h.state, 3, 0), TERN_ETIMEDOUT);
    cr_assert_lt(now_ms() - t0, 1000, "timeout 0 must not wait");
    cr_assert(strstr(tern_error_message(), "capacity"), "message: %s", tern_error_message());

    t0 = now_ms();
    cr_assert_eq(put_id(ops, h.state, 3, 50), TERN_ETIMEDOUT);
    double dt = now_ms() - t0;
    cr_assert_geq(dt, 40, "returned after %.1f ms, before the 50 ms timeout", dt);
    cr_assert_lt(dt, 2000, "returned after %.1f ms for a 50 ms timeout", dt);

    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 2);
    cr_assert_eq(s.put, 2, "a timed-out put must not count as accepted");
    cr_assert_eq(s.dropped, 0);
    harness_close(&h);
}

typedef struct call {
    const tern_buffer_ops *ops;
    void *st;
    uint64_t id;
    int64_t timeout_ms;
    int rc;
    size_t got;
    tern_record rec;
} call;

static void *call_put(void *arg)
{
    call *c = arg;
    c->rc = put_id(c->ops, c->st, c->id, c->timeout_ms);
    return NULL;
}

static void *call_get(void *arg)
{
    call *c = arg;
    init_records(&c->rec, 1);
    c->got = 99;
    c->rc = c->ops->get(c->st, &c->rec, 1, &c->got, c->timeout_ms);
    return NULL;
}

Test(fifo, blocked_put_goes_through_once_a_get_makes_room, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 1;");
    cr_assert_eq(put_id(ops, h.state, 1, 0), TERN_OK);
    call c = {.ops = ops, .st = h.state, .id = 2, .timeout_ms = 5000, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_put, &c), 0);
    sleep_ms(50);
    tern_record r[1];
    init_records(r, 1);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
    cr_assert_eq(r[0].meta.id, 1);
    ops->release(h.state, r, got);
    pthread_join(t, NULL);
    cr_assert_eq(c.rc, TERN_OK, "the waiting put returned %d", c.rc);
    init_records(r, 1);
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
    cr_assert_eq(r[0].meta.id, 2);
    ops->release(h.state, r, got);
    harness_close(&h);
}

Test(fifo, blocked_get_wakes_when_a_record_arrives, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 4;");
    call c = {.ops = ops, .st = h.state, .timeout_ms = 5000, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_get, &c), 0);
    sleep_ms(50);
    double t0 = now_ms();
    cr_assert_eq(put_id(ops, h.state, 42, 0), TERN_OK);
    pthread_join(t, NULL);
    cr_assert_lt(now_ms() - t0, 2000, "the waiting get was not woken by the put");
    cr_assert_eq(c.rc, TERN_OK);
    cr_assert_eq(c.got, 1);
    cr_assert_eq(c.rec.meta.id, 42);
    cr_assert(payload_ok(&c.rec));
    ops->release(h.state, &c.rec, 1);
    harness_close(&h);
}

/* ---- drop_oldest ---------------------------------------------------------- */

static int metric_count_in(tern_metrics *m, const char *name, long *count)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -1;
    int rc = tern_metrics_write_step(m, f, 1);
    fclose(f);
    char key[128];
    snprintf(key, sizeof key, "\"%s.count\":", name);
    const char *p = rc == TERN_OK && text ? strstr(text, key) : NULL;
    *count = p ? strtol(p + strlen(key), NULL, 10) : -1;
    free(text);
    return 0;
}

Test(fifo, drop_oldest_never_blocks_and_keeps_the_newest_in_order)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 3; when_full = \"drop_oldest\";");
    for (uint64_t id = 0; id < 10; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK, "put %llu: %s",
                     (unsigned long long)id, tern_error_message());
    double t0 = now_ms();
    cr_assert_eq(put_id(ops, h.state, 10, 5000), TERN_OK);
    cr_assert_lt(now_ms() - t0, 1000, "a drop_oldest put waited on a full buffer");

    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 3);
    cr_assert_eq(s.capacity, 3);
    cr_assert_eq(s.put, 11);
    cr_assert_eq(s.dropped, 8);
    long n = 0;
    cr_assert_eq(metric_count_in(h.metrics, "slot.dropped", &n), 0);
    cr_assert_eq(n, 8, "metric slot.dropped observed %ld times, want 8", n);

    tern_record r[5];
    init_records(r, 5);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 5, &got, 0), TERN_OK);
    cr_assert_eq(got, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(r[i].meta.id, 8 + i);
        cr_assert(payload_ok(&r[i]));
    }
    ops->release(h.state, r, got);
    harness_close(&h);
}

/* ---- close ----------------------------------------------------------------- */

Test(fifo, close_wakes_a_blocked_get, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 4;");
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

Test(fifo, close_wakes_a_blocked_put_and_refuses_later_puts, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 1;");
    cr_assert_eq(put_id(ops, h.state, 1, 0), TERN_OK);
    call c = {.ops = ops, .st = h.state, .id = 2, .timeout_ms = -1, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_put, &c), 0);
    sleep_ms(50); /* let it block */
    ops->close(h.state);
    pthread_join(t, NULL);
    cr_assert_eq(c.rc, TERN_ECLOSED);
    cr_assert_eq(put_id(ops, h.state, 3, 0), TERN_ECLOSED);
    cr_assert(strstr(tern_error_message(), "closed"), "message: %s", tern_error_message());
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.put, 1);
    cr_assert_eq(s.held, 1);
    harness_close(&h);
}

Test(fifo, close_refuses_puts_with_drop_oldest_too)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 1; when_full = \"drop_oldest\";");
    ops->close(h.state);
    cr_assert_eq(put_id(ops, h.state, 1, 0), TERN_ECLOSED);
    harness_close(&h);
}

Test(fifo, get_after_close_drains_then_reports_closed, .timeout = 10)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 8;");
    for (uint64_t id = 0; id < 3; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    ops->close(h.state);
    ops->close(h.state); /* closing twice is harmless */
    tern_record r[2];
    size_t got;
    init_records(r, 2);
    cr_assert_eq(ops->get(h.state, r, 2, &got, -1), TERN_OK);
    cr_assert_eq(got, 2);
    cr_assert_eq(r[0].meta.id, 0);
    cr_assert_eq(r[1].meta.id, 1);
    ops->release(h.state, r, got);
    init_records(r, 2);
    cr_assert_eq(ops->get(h.state, r, 2, &got, -1), TERN_OK);
    cr_assert_eq(got, 1);
    cr_assert_eq(r[0].meta.id, 2);
    ops->release(h.state, r, got);
    init_records(r, 2);
    got = 99;
    double t0 = now_ms();
    cr_assert_eq(ops->get(h.state, r, 2, &got, 5000), TERN_ECLOSED);
    cr_assert_lt(now_ms() - t0, 1000, "get on a closed, empty buffer waited");
    cr_assert_eq(got, 0);
    harness_close(&h);
}

/* ---- stats --------------------------------------------------------------- */

Test(fifo, stats_count_puts_gets_and_held)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 4;");
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.capacity, 4);
    cr_assert_eq(s.put, 0);
    cr_assert_eq(s.got, 0);
    cr_assert_eq(s.dropped, 0);
    cr_assert_eq(s.skipped, 0);
    for (uint64_t id = 0; id < 4; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    tern_record r[3];
    init_records(r, 3);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 3, &got, 0), TERN_OK);
    s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 1, "held counts records not yet handed out");
    cr_assert_eq(s.put, 4);
    cr_assert_eq(s.got, 3);
    ops->release(h.state, r, got);
    s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 1);
    cr_assert_eq(s.got, 3);
    harness_close(&h);
}

Test(fifo, stats_write_only_the_members_the_caller_has)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "capacity = 4;");
    cr_assert_eq(put_id(ops, h.state, 1, 0), TERN_OK);
    tern_buffer_stats s;
    memset(&s, 0xab, sizeof s);
    s.size = offsetof(tern_buffer_stats, put); /* a caller that knows held, capacity */
    cr_assert_eq(ops->stats(h.state, &s), TERN_OK);
    cr_assert_eq(s.held, 1);
    cr_assert_eq(s.capacity, 4);
    uint64_t untouched;
    memset(&untouched, 0xab, sizeof untouched);
    cr_assert_eq(s.put, untouched, "stats wrote past the caller's size");
    cr_assert_eq(s.dropped, untouched, "stats wrote past the caller's size");
    harness_close(&h);
}

/* ---- settings -------------------------------------------------------------- */

Test(fifo, defaults_are_capacity_64_and_block)
{
    harness h;
    const tern_buffer_ops *ops = open_fifo(&h, "");
    cr_assert_eq(stats_of(ops, h.state).capacity, 64);
    for (uint64_t id = 0; id < 64; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    cr_assert_eq(put_id(ops, h.state, 64, 0), TERN_ETIMEDOUT, "default when_full is block");
    harness_close(&h);
}

static void assert_rejected(const char *settings, const char *expect)
{
    harness h;
    int rc = harness_open(&h, "fifo", TERN_KIND_BUFFER, settings);
    cr_assert_neq(rc, TERN_OK, "settings \"%s\" were accepted", settings);
    cr_assert_null(h.state, "create ran for bad settings \"%s\"", settings);
    cr_assert(strstr(h.error, expect), "settings \"%s\": message \"%s\" lacks \"%s\"", settings,
              h.error, expect);
    harness_close(&h);
}

Test(fifo, capacity_out_of_range_is_rejected)
{
    assert_rejected("capacity = 0;", "out of range");
    assert_rejected("capacity = 2000000000;", "out of range");
}

Test(fifo, unknown_when_full_is_rejected)
{
    assert_rejected("when_full = \"drop\";", "block|drop_oldest");
}

Test(fifo, float_capacity_is_rejected)
{
    assert_rejected("capacity = 4.5;", "capacity: expected an integer");
}

Test(fifo, misspelt_key_gets_a_suggestion)
{
    assert_rejected("capcity = 4;", "did you mean 'capacity'");
}
