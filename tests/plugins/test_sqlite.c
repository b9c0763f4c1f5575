/* test_sqlite.c: the `sqlite` buffer plugin through its ops table, started the
 * way a run starts it (harness.h): order, batching, durability across destroy
 * and reopen, exactly-once consumption (get marks records taken, commit
 * forgets them, recover hands back the uncommitted ones), many producers and
 * consumers, two instances on one file (as two processes), capacity,
 * timeouts, close, stats, the migration of a schema-1 file, files that are
 * not tern buffers, bad settings and arguments, and durability under SIGKILL
 * of a producer, of a consumer between get and commit and of a process
 * creating the file. Each test works in its own directory under
 * TERN_TEST_WORK_DIR, removed afterwards. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "harness.h"
#include "tern/buffer.h"

/* ---- the test's directory ------------------------------------------------- */

static char work[1024]; /* short enough that work/NAME always fits in PATH_MAX */

static void make_work(void)
{
    snprintf(work, sizeof work, "%s/sqlite-XXXXXX", TERN_TEST_WORK_DIR);
    if (!mkdtemp(work)) {
        perror(work);
        abort();
    }
}

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(p);
    return 0;
}

static void remove_work(void)
{
    if (work[0])
        nftw(work, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    work[0] = '\0';
}

TestSuite(sqlite, .init = make_work, .fini = remove_work);

/* work/NAME into buf */
static const char *in_work(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", work, name);
    return buf;
}

/* Remove a database file and SQLite's companions. */
static void remove_db(const char *file)
{
    char p[PATH_MAX + 8];
    unlink(file);
    snprintf(p, sizeof p, "%s-wal", file);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", file);
    unlink(p);
    snprintf(p, sizeof p, "%s-journal", file);
    unlink(p);
}

/* ---- helpers ------------------------------------------------------------ */

static int try_open(harness *h, const char *file, const char *extra)
{
    char settings[PATH_MAX + 512];
    snprintf(settings, sizeof settings, "path = \"%s\"; %s", file, extra ? extra : "");
    return harness_open(h, "sqlite", TERN_KIND_BUFFER, settings);
}

static const tern_buffer_ops *open_sqlite(harness *h, const char *file, const char *extra)
{
    int rc = try_open(h, file, extra);
    cr_assert_eq(rc, TERN_OK, "harness_open(path = %s; %s): %s", file, extra ? extra : "",
                 h->error);
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

/* A fixed-seed generator: the kill tests are reproducible. */
static uint64_t rng = 0x7465726e5eedull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static tern_record_meta meta_of(uint64_t id)
{
    tern_record_meta m = {.size = sizeof m, .id = id, .version = (int64_t)id / 10,
                          .batch = (int64_t)id % 7};
    return m;
}

/* The payload of record `id`: a length in [1, max] and bytes that depend on
 * the id, so a mixed-up, truncated or corrupted record shows. */
#define SMALL 61
#define BIG 8192

static size_t payload_len(uint64_t id, size_t max)
{
    return 1 + (size_t)((id * 2654435761ull) % max);
}

static unsigned char payload_byte(uint64_t id, size_t i)
{
    uint64_t x = (id + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    return (unsigned char)(x >> 56);
}

static void payload_fill(uint64_t id, size_t max, unsigned char *buf)
{
    for (size_t i = 0; i < payload_len(id, max); i++)
        buf[i] = payload_byte(id, i);
}

static int payload_ok(const tern_record *r, size_t max)
{
    uint64_t id = r->meta.id;
    if (r->len != payload_len(id, max) || !r->data)
        return 0;
    const unsigned char *p = r->data;
    for (size_t i = 0; i < r->len; i++)
        if (p[i] != payload_byte(id, i))
            return 0;
    return 1;
}

static int put_id_max(const tern_buffer_ops *ops, void *st, uint64_t id, size_t max,
                      int64_t timeout_ms)
{
    unsigned char buf[BIG];
    payload_fill(id, max, buf);
    tern_record_meta m = meta_of(id);
    return ops->put(st, buf, payload_len(id, max), &m, timeout_ms);
}

static int put_id(const tern_buffer_ops *ops, void *st, uint64_t id, int64_t timeout_ms)
{
    return put_id_max(ops, st, id, SMALL, timeout_ms);
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
    cr_assert_eq(ops->stats(st, &s), TERN_OK, "stats: %s", tern_error_message());
    return s;
}

/* Commit the records r[0..n) (their meta.id), asserting it succeeds. */
static void commit_recs(const tern_buffer_ops *ops, void *st, const tern_record *r, size_t n)
{
    uint64_t ids[64];
    cr_assert_leq(n, 64);
    for (size_t i = 0; i < n; i++)
        ids[i] = r[i].meta.id;
    cr_assert_eq(ops->commit(st, ids, n), TERN_OK, "commit: %s", tern_error_message());
}

/* Get everything the buffer has waiting now (timeout 0 batches of up to 16)
 * and check it is exactly ids first, first+1, ..., first+count-1 in order
 * with intact payloads of at most `max` bytes; commit each batch when
 * `commit` says so (else the records stay in the file, taken). Returns count. */
static uint64_t drain_run(const tern_buffer_ops *ops, void *st, uint64_t first, size_t max,
                          const char *what, int commit)
{
    uint64_t next = first;
    tern_record r[16];
    for (;;) {
        init_records(r, 16);
        size_t got = 99;
        int rc = ops->get(st, r, 16, &got, 0);
        if (rc == TERN_ETIMEDOUT) {
            cr_assert_eq(got, 0);
            break;
        }
        cr_assert_eq(rc, TERN_OK, "%s: get: %s", what, tern_error_message());
        cr_assert_gt(got, 0);
        for (size_t i = 0; i < got; i++) {
            cr_assert_eq(r[i].meta.id, next,
                         "%s: record %llu where %llu was expected (lost, duplicated or out of "
                         "order)", what, (unsigned long long)r[i].meta.id,
                         (unsigned long long)next);
            cr_assert(payload_ok(&r[i], max), "%s: payload of record %llu is damaged (len %zu)",
                      what, (unsigned long long)next, r[i].len);
            next++;
        }
        if (commit)
            commit_recs(ops, st, r, got);
        ops->release(st, r, got);
    }
    return next - first;
}

/* drain_run, committing: what is drained leaves the file. */
static uint64_t drain_expect_run(const tern_buffer_ops *ops, void *st, uint64_t first, size_t max,
                                 const char *what)
{
    return drain_run(ops, st, first, max, what, 1);
}

/* recover() into ids[0..cap), asserting it succeeds; returns *n. */
static size_t recover_ids(const tern_buffer_ops *ops, void *st, uint64_t *ids, size_t cap)
{
    size_t n = 12345;
    cr_assert_eq(ops->recover(st, ids, cap, &n), TERN_OK, "recover: %s", tern_error_message());
    return n;
}

/* ---- the descriptor ------------------------------------------------------ */

Test(sqlite, descriptor_declares_a_thread_safe_buffer)
{
    harness h;
    char f[PATH_MAX];
    open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    const tern_plugin_descriptor *d = h.entry->plugin->desc;
    cr_assert_str_eq(d->name, "sqlite");
    cr_assert_str_eq(d->version, "1.1.0");
    cr_assert_eq(d->kind, TERN_KIND_BUFFER);
    cr_assert(d->caps & TERN_CAP_THREAD_SAFE);
    cr_assert_not(d->caps & TERN_CAP_REPLAY, "a FIFO hands each record out once");
    cr_assert_eq(d->abi_major, TERN_ABI_MAJOR);
    cr_assert_eq(d->abi_minor, TERN_ABI_MINOR, "built against ABI 1.%u, not the current 1.%u",
                 (unsigned)d->abi_minor, (unsigned)TERN_ABI_MINOR);
    /* ABI 1.6: commit and recover, inside the ops table's declared size */
    const tern_buffer_ops *ops = d->ops;
    cr_assert_geq(ops->size, offsetof(tern_buffer_ops, recover) + sizeof ops->recover,
                  "ops.size %zu does not cover commit and recover", ops->size);
    cr_assert(TERN_HAS(ops, commit) && ops->commit, "sqlite sets commit");
    cr_assert(TERN_HAS(ops, recover) && ops->recover, "sqlite sets recover");
    cr_assert_null(ops->advance, "sqlite has no notion of staleness");
    harness_close(&h);
}

/* ---- order, batching, release ------------------------------------------- */

Test(sqlite, hands_records_out_in_put_order_with_meta_and_payload)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    for (uint64_t id = 100; id < 105; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK, "%s", tern_error_message());
    tern_record r[8];
    init_records(r, 8);
    size_t got = 99;
    cr_assert_eq(ops->get(h.state, r, 8, &got, 0), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(got, 5);
    for (size_t i = 0; i < got; i++) {
        cr_assert_eq(r[i].meta.id, 100 + i, "record %zu has id %llu", i,
                     (unsigned long long)r[i].meta.id);
        cr_assert_eq(r[i].meta.version, (int64_t)(100 + i) / 10);
        cr_assert_eq(r[i].meta.batch, (int64_t)(100 + i) % 7);
        cr_assert_eq(r[i].meta.size, sizeof(tern_record_meta));
        cr_assert_eq(r[i].use_count, 0);
        cr_assert(payload_ok(&r[i], SMALL), "payload of record %zu differs from what was put", i);
    }
    ops->release(h.state, r, got);
    harness_close(&h);
}

Test(sqlite, get_hands_out_at_most_want_and_does_not_wait_for_more)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
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
        cr_assert_null(r[3].data, "get wrote past out[want - 1]");
        for (size_t i = 0; i < got; i++)
            cr_assert_eq(r[i].meta.id, next++);
        ops->release(h.state, r, got);
    }
    harness_close(&h);
}

Test(sqlite, release_gives_back_memory_and_tolerates_a_second_release)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops =
        open_sqlite(&h, in_work(f, sizeof f, "b.db"), "synchronous = \"normal\";");
    tern_record r[2];
    for (uint64_t id = 0; id < 300; id++) {
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK, "put %llu: %s",
                     (unsigned long long)id, tern_error_message());
        init_records(r, 2);
        size_t got;
        cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
        cr_assert_eq(got, 1);
        cr_assert_eq(r[0].meta.id, id);
        commit_recs(ops, h.state, r, 1);
        ops->release(h.state, r, 1);
        cr_assert_null(r[0].data, "release left data pointing at freed memory");
        ops->release(h.state, r, 1); /* harmless: the record is marked released */
    }
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.put, 300);
    cr_assert_eq(s.got, 300);
    harness_close(&h);
}

Test(sqlite, destroy_frees_records_handed_out_and_not_released)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    for (uint64_t id = 0; id < 6; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    tern_record r[2];
    init_records(r, 2);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
    cr_assert_eq(got, 2);
    /* no release: destroy (in harness_close) must free these (ASan checks) */
    harness_close(&h);
}

Test(sqlite, empty_record_round_trips)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    tern_record_meta m = meta_of(7);
    cr_assert_eq(ops->put(h.state, NULL, 0, &m, 0), TERN_OK, "%s", tern_error_message());
    tern_record r[1];
    init_records(r, 1);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(got, 1);
    cr_assert_eq(r[0].len, 0);
    cr_assert_not_null(r[0].data, "an empty record still has a (released later) data pointer");
    cr_assert_eq(r[0].meta.id, 7);
    ops->release(h.state, r, 1);
    harness_close(&h);
}

Test(sqlite, large_record_round_trips)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    size_t len = 3u << 20;
    unsigned char *buf = malloc(len);
    cr_assert_not_null(buf);
    for (size_t i = 0; i < len; i++)
        buf[i] = payload_byte(42, i);
    tern_record_meta m = meta_of(42);
    cr_assert_eq(ops->put(h.state, buf, len, &m, 0), TERN_OK, "%s", tern_error_message());
    tern_record r[1];
    init_records(r, 1);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(r[0].len, len);
    cr_assert_eq(memcmp(r[0].data, buf, len), 0, "a 3 MiB record came back different");
    ops->release(h.state, r, 1);
    free(buf);
    harness_close(&h);
}

Test(sqlite, put_copies_the_bytes)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
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

Test(sqlite, meta_from_an_older_caller_keeps_only_what_it_gave)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    /* a caller built when tern_record_meta ended after `version` */
    tern_record_meta m = meta_of(5);
    m.size = offsetof(tern_record_meta, batch);
    m.batch = 1234; /* not the caller's: must not be read */
    cr_assert_eq(ops->put(h.state, "x", 1, &m, 0), TERN_OK, "%s", tern_error_message());
    /* and one that ended after `id` */
    tern_record_meta m2 = meta_of(6);
    m2.size = offsetof(tern_record_meta, version);
    m2.version = 77;
    cr_assert_eq(ops->put(h.state, "y", 1, &m2, 0), TERN_OK, "%s", tern_error_message());
    tern_record r[2];
    init_records(r, 2);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
    cr_assert_eq(got, 2);
    cr_assert_eq(r[0].meta.size, offsetof(tern_record_meta, batch));
    cr_assert_eq(r[0].meta.id, 5);
    cr_assert_eq(r[0].meta.version, m.version);
    cr_assert_eq(r[0].meta.batch, 0);
    cr_assert_eq(r[1].meta.size, offsetof(tern_record_meta, version));
    cr_assert_eq(r[1].meta.id, 6);
    cr_assert_eq(r[1].meta.version, 0);
    cr_assert_eq(r[1].meta.batch, 0);
    ops->release(h.state, r, 2);
    harness_close(&h);
}

/* ---- durability across destroy and reopen ---------------------------------- */

Test(sqlite, records_survive_destroy_and_reopen_in_order)
{
    harness h;
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    const tern_buffer_ops *ops = open_sqlite(&h, f, "");
    for (uint64_t id = 0; id < 10; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK, "%s", tern_error_message());
    harness_close(&h);

    ops = open_sqlite(&h, f, "");
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 10, "the reopened file holds %llu records, not 10",
                 (unsigned long long)s.held);
    cr_assert_eq(s.put, 0, "put counts this instance's puts");
    /* new puts go after the old ones */
    for (uint64_t id = 10; id < 15; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(drain_expect_run(ops, h.state, 0, SMALL, "after reopen"), 15);
    harness_close(&h);

    ops = open_sqlite(&h, f, "");
    cr_assert_eq(stats_of(ops, h.state).held, 0, "consumed records came back after reopen");
    harness_close(&h);
}

Test(sqlite, committed_records_do_not_come_back_after_reopen)
{
    harness h;
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    const tern_buffer_ops *ops = open_sqlite(&h, f, "");
    for (uint64_t id = 0; id < 6; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    tern_record r[4];
    init_records(r, 4);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 4, &got, 0), TERN_OK);
    cr_assert_eq(got, 4);
    commit_recs(ops, h.state, r, got);
    harness_close(&h); /* destroy without release: committed all the same */

    ops = open_sqlite(&h, f, "");
    cr_assert_eq(stats_of(ops, h.state).held, 2);
    uint64_t ids[8];
    cr_assert_eq(recover_ids(ops, h.state, ids, 8), 2, "committed records were recovered");
    cr_assert_eq(drain_expect_run(ops, h.state, 4, SMALL, "after reopen"), 2);
    harness_close(&h);
}

/* ---- exactly once: taken, commit, recover ------------------------------------ */

/* A record got and not committed stays in the file, taken: after destroy and
 * reopen get does not hand it out again, until recover() hands it back in
 * its original place among the others. */
Test(sqlite, records_got_and_not_committed_stay_taken_until_recovered)
{
    harness h;
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    const tern_buffer_ops *ops = open_sqlite(&h, f, "");
    for (uint64_t id = 0; id < 6; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    tern_record r[8];
    init_records(r, 8);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
    cr_assert_eq(got, 2);
    cr_assert_eq(r[0].meta.id, 0);
    cr_assert_eq(r[1].meta.id, 1);
    ops->release(h.state, r, got); /* released, never committed */
    cr_assert_eq(stats_of(ops, h.state).held, 6, "a taken record is still held");
    harness_close(&h);

    ops = open_sqlite(&h, f, "");
    cr_assert_eq(stats_of(ops, h.state).held, 6, "taken records left the file on reopen");
    /* only the waiting records are handed out; take them too, uncommitted */
    cr_assert_eq(drain_run(ops, h.state, 2, SMALL, "after reopen", 0), 4);
    init_records(r, 8);
    cr_assert_eq(ops->get(h.state, r, 8, &got, 0), TERN_ETIMEDOUT,
                 "a taken record was handed out again");
    cr_assert_eq(stats_of(ops, h.state).held, 6);
    harness_close(&h);

    ops = open_sqlite(&h, f, "");
    init_records(r, 8);
    cr_assert_eq(ops->get(h.state, r, 8, &got, 0), TERN_ETIMEDOUT);
    uint64_t ids[8];
    cr_assert_eq(recover_ids(ops, h.state, ids, 8), 6);
    for (uint64_t i = 0; i < 6; i++)
        cr_assert_eq(ids[i], i, "recover listed %llu at %llu", (unsigned long long)ids[i],
                     (unsigned long long)i);
    cr_assert_eq(drain_expect_run(ops, h.state, 0, SMALL, "after recover"), 6);
    cr_assert_eq(stats_of(ops, h.state).held, 0);
    harness_close(&h);
}

/* Recovered records go back to their places: before records never handed
 * out, and around the ones committed meanwhile. */
Test(sqlite, recovered_records_keep_their_place_in_the_order)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    for (uint64_t id = 0; id < 8; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    tern_record a[2], b[3];
    init_records(a, 2);
    init_records(b, 3);
    size_t got;
    cr_assert_eq(ops->get(h.state, a, 2, &got, 0), TERN_OK); /* 0, 1 */
    cr_assert_eq(ops->get(h.state, b, 3, &got, 0), TERN_OK); /* 2, 3, 4 */
    uint64_t done[] = {1, 3};
    cr_assert_eq(ops->commit(h.state, done, 2), TERN_OK, "%s", tern_error_message());
    ops->release(h.state, a, 2);
    ops->release(h.state, b, 3);
    uint64_t ids[8];
    cr_assert_eq(recover_ids(ops, h.state, ids, 8), 6);
    uint64_t expect[] = {0, 2, 4, 5, 6, 7};
    tern_record r[8];
    init_records(r, 8);
    cr_assert_eq(ops->get(h.state, r, 8, &got, 0), TERN_OK);
    cr_assert_eq(got, 6);
    for (size_t i = 0; i < 6; i++) {
        cr_assert_eq(ids[i], expect[i]);
        cr_assert_eq(r[i].meta.id, expect[i], "hand-out %zu is record %llu, not %llu", i,
                     (unsigned long long)r[i].meta.id, (unsigned long long)expect[i]);
        cr_assert(payload_ok(&r[i], SMALL));
    }
    ops->release(h.state, r, got);
    harness_close(&h);
}

/* commit forgets exactly the named records, handed out or still waiting;
 * unknown ids are ignored, a repeated commit is harmless, and it lasts. */
Test(sqlite, commit_forgets_exactly_the_named_records)
{
    harness h;
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    const tern_buffer_ops *ops = open_sqlite(&h, f, "");
    for (uint64_t id = 0; id < 10; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    tern_record r[3];
    init_records(r, 3);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 3, &got, 0), TERN_OK); /* 0, 1, 2 taken */
    ops->release(h.state, r, got);
    uint64_t ids[] = {1, 5, 999, 7}; /* handed out, waiting, unknown, waiting */
    cr_assert_eq(ops->commit(h.state, ids, 4), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(stats_of(ops, h.state).held, 7);
    cr_assert_eq(ops->commit(h.state, ids, 4), TERN_OK, "a repeated commit: %s",
                 tern_error_message());
    cr_assert_eq(stats_of(ops, h.state).held, 7);
    cr_assert_eq(ops->commit(h.state, ids, 0), TERN_OK, "an empty commit");
    cr_assert_eq(ops->commit(h.state, NULL, 0), TERN_OK, "an empty commit without ids");
    tern_error_clear();
    cr_assert_eq(ops->commit(h.state, NULL, 2), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "NULL"), "message: %s", tern_error_message());
    cr_assert_eq(stats_of(ops, h.state).held, 7);
    harness_close(&h);

    ops = open_sqlite(&h, f, "");
    cr_assert_eq(stats_of(ops, h.state).held, 7, "commits did not last across reopen");
    uint64_t back[10];
    cr_assert_eq(recover_ids(ops, h.state, back, 10), 7);
    uint64_t expect[] = {0, 2, 3, 4, 6, 8, 9};
    for (size_t i = 0; i < 7; i++)
        cr_assert_eq(back[i], expect[i], "recover listed %llu at %zu, not %llu",
                     (unsigned long long)back[i], i, (unsigned long long)expect[i]);
    uint64_t all[10];
    for (uint64_t i = 0; i < 10; i++)
        all[i] = i;
    cr_assert_eq(ops->commit(h.state, all, 10), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(stats_of(ops, h.state).held, 0);
    init_records(r, 3);
    cr_assert_eq(ops->get(h.state, r, 3, &got, 0), TERN_ETIMEDOUT);
    harness_close(&h);
}

/* recover's list: every held id in hand-out order, *n the count even when
 * larger than cap, nothing written past cap; a second call hands nothing
 * more back and lists the same ids. */
Test(sqlite, recover_lists_the_held_ids_in_order)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    size_t n = 77;
    cr_assert_eq(ops->recover(h.state, NULL, 0, &n), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(n, 0, "an empty file holds no ids");
    for (uint64_t id = 10; id < 16; id++)
        cr_assert_eq(put_id(ops, h.state, id, 0), TERN_OK);
    tern_record r[6];
    init_records(r, 6);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK); /* 10, 11 taken */
    ops->release(h.state, r, got);

    uint64_t ids[8];
    for (size_t i = 0; i < 8; i++)
        ids[i] = 0xdead;
    cr_assert_eq(recover_ids(ops, h.state, ids, 3), 6, "*n must count every held record");
    cr_assert_eq(ids[0], 10);
    cr_assert_eq(ids[1], 11);
    cr_assert_eq(ids[2], 12);
    cr_assert_eq(ids[3], 0xdead, "recover wrote past cap");
    cr_assert_eq(recover_ids(ops, h.state, ids, 8), 6, "the second call, with room");
    for (size_t i = 0; i < 6; i++)
        cr_assert_eq(ids[i], 10 + i);
    cr_assert_eq(ids[6], 0xdead, "recover wrote past the count");
    n = 77;
    cr_assert_eq(ops->recover(h.state, NULL, 0, &n), TERN_OK);
    cr_assert_eq(n, 6, "cap 0 counts only");
    cr_assert_eq(stats_of(ops, h.state).held, 6, "recover changed what the file holds");

    tern_error_clear();
    cr_assert_eq(ops->recover(h.state, ids, 8, NULL), TERN_EINVAL);
    cr_assert_neq(tern_error_message()[0], '\0');
    tern_error_clear();
    cr_assert_eq(ops->recover(h.state, NULL, 4, &n), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "NULL"), "message: %s", tern_error_message());

    /* each record once, in order: the second recover handed nothing twice */
    cr_assert_eq(drain_expect_run(ops, h.state, 10, SMALL, "after two recovers"), 6);
    harness_close(&h);
}

/* Two instances (processes) on one file: a record taken by one is never
 * handed out by the other, until a recover. */
Test(sqlite, a_record_taken_by_one_instance_is_never_handed_out_by_another)
{
    harness ha, hb;
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    const tern_buffer_ops *ops = open_sqlite(&ha, f, "");
    open_sqlite(&hb, f, "");
    for (uint64_t id = 0; id < 5; id++)
        cr_assert_eq(put_id(ops, ha.state, id, 0), TERN_OK);
    tern_record r[8];
    init_records(r, 8);
    size_t got;
    cr_assert_eq(ops->get(ha.state, r, 2, &got, 0), TERN_OK); /* a takes 0, 1 */
    cr_assert_eq(got, 2);
    ops->release(ha.state, r, got);
    init_records(r, 8);
    cr_assert_eq(ops->get(hb.state, r, 8, &got, 0), TERN_OK); /* b: only 2, 3, 4 */
    cr_assert_eq(got, 3);
    for (size_t i = 0; i < got; i++)
        cr_assert_eq(r[i].meta.id, 2 + i, "instance b got record %llu",
                     (unsigned long long)r[i].meta.id);
    ops->release(hb.state, r, got);
    init_records(r, 8);
    cr_assert_eq(ops->get(hb.state, r, 8, &got, 0), TERN_ETIMEDOUT);
    init_records(r, 8);
    cr_assert_eq(ops->get(ha.state, r, 8, &got, 0), TERN_ETIMEDOUT,
                 "instance a got a record instance b had taken");
    cr_assert_eq(stats_of(ops, ha.state).held, 5);
    cr_assert_eq(stats_of(ops, hb.state).held, 5);
    /* b commits its records; a (the one consumer left) recovers its own */
    uint64_t mine[] = {2, 3, 4};
    cr_assert_eq(ops->commit(hb.state, mine, 3), TERN_OK, "%s", tern_error_message());
    harness_close(&hb);
    uint64_t ids[8];
    cr_assert_eq(recover_ids(ops, ha.state, ids, 8), 2);
    cr_assert_eq(drain_expect_run(ops, ha.state, 0, SMALL, "after recover"), 2);
    harness_close(&ha);
}

/* capacity counts the records waiting to be handed out: a get makes room
 * at once (the taken records stay in the file, counted in held, until
 * committed), so a consumer that commits late never blocks producers with
 * records it already has. */
Test(sqlite, capacity_counts_waiting_records_and_a_get_makes_room)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "capacity = 2;");
    cr_assert_eq(put_id(ops, h.state, 1, 0), TERN_OK);
    cr_assert_eq(put_id(ops, h.state, 2, 0), TERN_OK);
    cr_assert_eq(put_id(ops, h.state, 3, 0), TERN_ETIMEDOUT, "a full file took a put");
    cr_assert(strstr(tern_error_message(), "capacity"), "message: %s", tern_error_message());
    tern_record r[2];
    init_records(r, 2);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 2, &got, 0), TERN_OK);
    cr_assert_eq(got, 2);
    cr_assert_eq(put_id(ops, h.state, 3, 0), TERN_OK, "the get made no room: %s",
                 tern_error_message());
    cr_assert_eq(put_id(ops, h.state, 4, 0), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(put_id(ops, h.state, 5, 0), TERN_ETIMEDOUT, "two waiting: full again");
    cr_assert_eq(stats_of(ops, h.state).held, 4, "held counts the taken records too");
    commit_recs(ops, h.state, r, 2);
    ops->release(h.state, r, got);
    cr_assert_eq(stats_of(ops, h.state).held, 2);
    cr_assert_eq(put_id(ops, h.state, 5, 0), TERN_ETIMEDOUT, "a commit of taken records "
                 "makes no room: they were not counted");
    cr_assert_eq(drain_expect_run(ops, h.state, 3, SMALL, "after the commits"), 2);
    harness_close(&h);
}

/* ---- bad arguments ------------------------------------------------------- */

Test(sqlite, bad_arguments_fail_with_einval_and_a_message)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
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

    /* none of the refused calls lost the record or stored one */
    cr_assert_eq(stats_of(ops, h.state).held, 1);
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
#define PER_PRODUCER 250
#define CONSUMERS 3
#define TOTAL (PRODUCERS * PER_PRODUCER)

typedef struct mt {
    const tern_buffer_ops *put_ops, *get_ops;
    void *put_st, *get_st; /* one instance, or two on the same file */
} mt;

typedef struct producer {
    mt *m;
    uint64_t first;
    int failures;
    int last_rc;
} producer;

typedef struct consumer {
    mt *m;
    unsigned seen[TOTAL];    /* times each id was delivered to this consumer */
    int64_t last[PRODUCERS]; /* last index seen per producer: FIFO keeps them rising */
    int out_of_order, corrupt, final_rc;
    int commit_failures, commit_rc; /* commits of received records that failed, the last */
    size_t received;
    size_t *total;           /* shared count of records received (two-instance test) */
    pthread_mutex_t *total_lock;
} consumer;

static void *produce(void *arg)
{
    producer *p = arg;
    for (uint64_t i = 0; i < PER_PRODUCER; i++) {
        int rc = put_id(p->m->put_ops, p->m->put_st, p->first + i, 10000);
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
        int rc = c->m->get_ops->get(c->m->get_st, r, 8, &got, 10000);
        if (rc != TERN_OK) {
            c->final_rc = rc;
            return NULL;
        }
        for (size_t i = 0; i < got; i++) {
            uint64_t id = r[i].meta.id;
            if (id >= TOTAL || !payload_ok(&r[i], SMALL)) {
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
        c->received += got;
        uint64_t ids[8];
        for (size_t i = 0; i < got; i++)
            ids[i] = r[i].meta.id;
        int crc = c->m->get_ops->commit(c->m->get_st, ids, got);
        if (crc != TERN_OK) {
            c->commit_failures++;
            c->commit_rc = crc;
        }
        c->m->get_ops->release(c->m->get_st, r, got);
        if (c->total) {
            pthread_mutex_lock(c->total_lock);
            *c->total += got;
            pthread_mutex_unlock(c->total_lock);
        }
    }
}

static void check_exactly_once(producer *prod, consumer *cons)
{
    for (int i = 0; i < PRODUCERS; i++)
        cr_assert_eq(prod[i].failures, 0, "producer %d: %d puts failed, last with %d (%s)", i,
                     prod[i].failures, prod[i].last_rc, tern_status_name(prod[i].last_rc));
    for (int i = 0; i < CONSUMERS; i++) {
        cr_assert_eq(cons[i].final_rc, TERN_ECLOSED, "consumer %d ended with %s", i,
                     tern_status_name(cons[i].final_rc));
        cr_assert_eq(cons[i].corrupt, 0, "consumer %d got %d corrupt records", i,
                     cons[i].corrupt);
        cr_assert_eq(cons[i].commit_failures, 0, "consumer %d: %d commits failed, last with %s",
                     i, cons[i].commit_failures, tern_status_name(cons[i].commit_rc));
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
}

Test(sqlite, many_producers_and_consumers_deliver_each_record_exactly_once, .timeout = 60)
{
    harness h;
    char f[PATH_MAX];
    /* "normal": with "full" every commit waits for the disk (seconds here) */
    const tern_buffer_ops *ops =
        open_sqlite(&h, in_work(f, sizeof f, "b.db"), "capacity = 16; synchronous = \"normal\";");
    mt m = {ops, ops, h.state, h.state};
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
    check_exactly_once(prod, cons);
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.put, TOTAL);
    cr_assert_eq(s.got, TOTAL);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.dropped, 0);
    free(cons);
    harness_close(&h);
}

/* Two instances on one file, as two processes would have: each its own
 * connection; one only puts, the other only gets (noticing the records by
 * polling the file, since no in-process wakeup crosses instances). */
Test(sqlite, two_instances_on_one_file_deliver_each_record_exactly_once, .timeout = 60)
{
    harness hp, hc;
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    const tern_buffer_ops *pops = open_sqlite(&hp, f, "synchronous = \"normal\";");
    const tern_buffer_ops *cops = open_sqlite(&hc, f, "synchronous = \"normal\";");
    mt m = {pops, cops, hp.state, hc.state};
    size_t total = 0;
    pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
    producer prod[PRODUCERS];
    consumer *cons = calloc(CONSUMERS, sizeof *cons);
    cr_assert_not_null(cons);
    pthread_t pt[PRODUCERS], ct[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) {
        cons[i].m = &m;
        cons[i].total = &total;
        cons[i].total_lock = &total_lock;
        cr_assert_eq(pthread_create(&ct[i], NULL, consume, &cons[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        prod[i] = (producer){.m = &m, .first = (uint64_t)i * PER_PRODUCER};
        cr_assert_eq(pthread_create(&pt[i], NULL, produce, &prod[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    /* the producing instance's close does not reach the consuming one: wait
     * until everything arrived, then close the consumer's instance */
    double t0 = now_ms();
    for (;;) {
        pthread_mutex_lock(&total_lock);
        size_t n = total;
        pthread_mutex_unlock(&total_lock);
        if (n >= TOTAL || now_ms() - t0 > 20000)
            break;
        sleep_ms(5);
    }
    cops->close(hc.state);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(ct[i], NULL);
    check_exactly_once(prod, cons);
    cr_assert_eq(stats_of(pops, hp.state).put, TOTAL);
    cr_assert_eq(stats_of(pops, hp.state).got, 0);
    cr_assert_eq(stats_of(cops, hc.state).got, TOTAL);
    cr_assert_eq(stats_of(pops, hp.state).held, 0);
    free(cons);
    harness_close(&hc);
    harness_close(&hp);
}

/* ---- timeouts and capacity ----------------------------------------------- */

Test(sqlite, get_on_empty_times_out_after_about_the_timeout)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
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

Test(sqlite, put_on_full_times_out_and_is_not_stored)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "capacity = 2;");
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
    cr_assert_eq(s.capacity, 2);
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
    char msg[512]; /* the call's error message (kept per thread) */
} call;

static void *call_put(void *arg)
{
    call *c = arg;
    c->rc = put_id(c->ops, c->st, c->id, c->timeout_ms);
    snprintf(c->msg, sizeof c->msg, "%s", tern_error_message());
    return NULL;
}

static void *call_get(void *arg)
{
    call *c = arg;
    init_records(&c->rec, 1);
    c->got = 99;
    c->rc = c->ops->get(c->st, &c->rec, 1, &c->got, c->timeout_ms);
    snprintf(c->msg, sizeof c->msg, "%s", tern_error_message());
    return NULL;
}

/* A get makes room (the record stays in the file, taken, until committed)
 * and wakes the blocked put at once. */
Test(sqlite, blocked_put_goes_through_once_a_get_makes_room, .timeout = 10)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "capacity = 1;");
    cr_assert_eq(put_id(ops, h.state, 1, 0), TERN_OK);
    call c = {.ops = ops, .st = h.state, .id = 2, .timeout_ms = 5000, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_put, &c), 0);
    sleep_ms(50);
    cr_assert_eq(stats_of(ops, h.state).put, 1, "the put did not wait for room");
    tern_record r[1];
    init_records(r, 1);
    size_t got;
    double t0 = now_ms();
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
    cr_assert_eq(r[0].meta.id, 1);
    pthread_join(t, NULL);
    cr_assert_lt(now_ms() - t0, 2000, "the get did not wake the blocked put");
    cr_assert_eq(c.rc, TERN_OK, "the waiting put returned %d: %s", c.rc, c.msg);
    commit_recs(ops, h.state, r, got);
    ops->release(h.state, r, got);
    init_records(r, 1);
    cr_assert_eq(ops->get(h.state, r, 1, &got, 0), TERN_OK);
    cr_assert_eq(r[0].meta.id, 2);
    ops->release(h.state, r, got);
    harness_close(&h);
}

/* Capacity counts the file's waiting records, whoever put them, and a get
 * by another instance (process) makes room that a blocked put notices by
 * polling. */
Test(sqlite, capacity_is_shared_by_instances_on_one_file, .timeout = 10)
{
    harness ha, hb;
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    const tern_buffer_ops *ops = open_sqlite(&ha, f, "capacity = 2;");
    open_sqlite(&hb, f, "capacity = 2;");
    cr_assert_eq(put_id(ops, ha.state, 1, 0), TERN_OK);
    cr_assert_eq(put_id(ops, hb.state, 2, 0), TERN_OK);
    cr_assert_eq(put_id(ops, ha.state, 3, 0), TERN_ETIMEDOUT, "a full file must refuse a put");
    call c = {.ops = ops, .st = ha.state, .id = 3, .timeout_ms = 5000, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_put, &c), 0);
    sleep_ms(60);
    tern_record r[1];
    init_records(r, 1);
    size_t got;
    cr_assert_eq(ops->get(hb.state, r, 1, &got, 0), TERN_OK);
    cr_assert_eq(r[0].meta.id, 1);
    double t0 = now_ms();
    commit_recs(ops, hb.state, r, got);
    ops->release(hb.state, r, got);
    pthread_join(t, NULL);
    cr_assert_eq(c.rc, TERN_OK, "the waiting put returned %d: %s", c.rc, c.msg);
    cr_assert_lt(now_ms() - t0, 2000, "the waiting put did not notice the room in time");
    cr_assert_eq(drain_expect_run(ops, hb.state, 2, SMALL, "instance b"), 2);
    harness_close(&hb);
    harness_close(&ha);
}

Test(sqlite, blocked_get_wakes_when_a_record_arrives, .timeout = 10)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
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
    cr_assert(payload_ok(&c.rec, SMALL));
    ops->release(h.state, &c.rec, 1);
    harness_close(&h);
}

Test(sqlite, blocked_get_sees_a_record_another_instance_put, .timeout = 10)
{
    harness ha, hb;
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    const tern_buffer_ops *ops = open_sqlite(&ha, f, "");
    open_sqlite(&hb, f, "");
    call c = {.ops = ops, .st = ha.state, .timeout_ms = 5000, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_get, &c), 0);
    sleep_ms(50);
    double t0 = now_ms();
    cr_assert_eq(put_id(ops, hb.state, 43, 0), TERN_OK);
    pthread_join(t, NULL);
    cr_assert_lt(now_ms() - t0, 2000, "the waiting get did not notice the other instance's put");
    cr_assert_eq(c.rc, TERN_OK, "the waiting get returned %d: %s", c.rc, c.msg);
    cr_assert_eq(c.rec.meta.id, 43);
    ops->release(ha.state, &c.rec, 1);
    harness_close(&hb);
    harness_close(&ha);
}

/* ---- close ----------------------------------------------------------------- */

Test(sqlite, close_wakes_a_blocked_get, .timeout = 10)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    call c = {.ops = ops, .st = h.state, .timeout_ms = -1, .rc = 12345};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, call_get, &c), 0);
    sleep_ms(50); /* let it block */
    double t0 = now_ms();
    ops->close(h.state);
    pthread_join(t, NULL);
    cr_assert_lt(now_ms() - t0, 1000, "close did not wake the waiting get");
    cr_assert_eq(c.rc, TERN_ECLOSED);
    cr_assert_eq(c.got, 0);
    harness_close(&h);
}

Test(sqlite, close_wakes_a_blocked_put_and_refuses_later_puts, .timeout = 10)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "capacity = 1;");
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

Test(sqlite, get_after_close_drains_then_reports_closed, .timeout = 10)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
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
    cr_assert(strstr(tern_error_message(), "closed"), "message: %s", tern_error_message());
    harness_close(&h);
}

/* ---- stats --------------------------------------------------------------- */

Test(sqlite, stats_count_puts_gets_and_held)
{
    harness h;
    char f[PATH_MAX];
    const tern_buffer_ops *ops = open_sqlite(&h, in_work(f, sizeof f, "b.db"), "");
    tern_buffer_stats s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.capacity, 0, "default capacity is 0: unbounded");
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
    cr_assert_eq(s.held, 4, "held counts records handed out and not committed");
    cr_assert_eq(s.put, 4);
    cr_assert_eq(s.got, 3);
    commit_recs(ops, h.state, r, got);
    s = stats_of(ops, h.state);
    cr_assert_eq(s.held, 1, "held counts records until committed");
    cr_assert_eq(s.got, 3);
    ops->release(h.state, r, got);

    tern_buffer_stats old;
    memset(&old, 0xab, sizeof old);
    old.size = offsetof(tern_buffer_stats, put); /* a caller that knows held, capacity */
    cr_assert_eq(ops->stats(h.state, &old), TERN_OK);
    cr_assert_eq(old.held, 1);
    uint64_t untouched;
    memset(&untouched, 0xab, sizeof untouched);
    cr_assert_eq(old.put, untouched, "stats wrote past the caller's size");
    cr_assert_eq(old.skipped, untouched, "stats wrote past the caller's size");
    harness_close(&h);
}

/* ---- files that are not tern buffers ------------------------------------------ */

static void write_file(const char *file, const void *bytes, size_t len)
{
    FILE *fp = fopen(file, "wb");
    cr_assert_not_null(fp, "%s: %s", file, strerror(errno));
    cr_assert_eq(fwrite(bytes, 1, len, fp), len);
    cr_assert_eq(fclose(fp), 0);
}

/* Read up to `size` bytes of a file; returns the count (-1 if absent). */
static long read_file(const char *file, void *buf, size_t size)
{
    FILE *fp = fopen(file, "rb");
    if (!fp)
        return -1;
    size_t n = fread(buf, 1, size, fp);
    fclose(fp);
    return (long)n;
}

static int exists(const char *file)
{
    struct stat sb;
    return stat(file, &sb) == 0;
}

/* Run SQL on `file` with SQLite directly (another program's database). */
static void sql_on(const char *file, const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(file, &db), SQLITE_OK, "open %s", file);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
    sqlite3_free(msg);
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
}

static void assert_open_refused(const char *file, const char *expect, const char *expect2)
{
    harness h;
    int rc = try_open(&h, file, "");
    cr_assert_neq(rc, TERN_OK, "'%s' was accepted", file);
    cr_assert_null(h.state);
    cr_assert(strstr(h.error, expect), "message \"%s\" lacks \"%s\"", h.error, expect);
    if (expect2)
        cr_assert(strstr(h.error, expect2), "message \"%s\" lacks \"%s\"", h.error, expect2);
    harness_close(&h);
}

Test(sqlite, a_file_that_is_not_sqlite_is_refused_and_left_unchanged)
{
    char f[PATH_MAX], text[4096], back[8192];
    in_work(f, sizeof f, "notes.txt");
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = "this is not a database, only text\n"[i % 34];
    write_file(f, text, sizeof text);
    assert_open_refused(f, f, "not a SQLite database");
    cr_assert_eq(read_file(f, back, sizeof back), (long)sizeof text);
    cr_assert_eq(memcmp(back, text, sizeof text), 0, "the refused file was changed");

    in_work(f, sizeof f, "short.txt"); /* shorter than an SQLite header */
    write_file(f, "hello\n", 6);
    assert_open_refused(f, f, "not a SQLite database");
    cr_assert_eq(read_file(f, back, sizeof back), 6, "the refused file was changed");
}

Test(sqlite, a_sqlite_database_of_another_program_is_refused_and_left_unchanged)
{
    char f[PATH_MAX], wal[PATH_MAX + 8];
    unsigned char hdr[100];
    in_work(f, sizeof f, "other.db");
    sql_on(f, "PRAGMA application_id = 42; CREATE TABLE t(x); INSERT INTO t VALUES (1);");
    assert_open_refused(f, f, "is a SQLite database but not a tern buffer");
    cr_assert_eq(read_file(f, hdr, sizeof hdr), 100);
    cr_assert_eq(hdr[18], 1, "the refused file was switched to WAL mode");
    snprintf(wal, sizeof wal, "%s-wal", f);
    cr_assert_not(exists(wal), "the refused file got a WAL");

    /* no application_id, but tables of its own: not ours either */
    in_work(f, sizeof f, "plain.db");
    sql_on(f, "CREATE TABLE t(x);");
    assert_open_refused(f, f, "not a tern buffer");
}

Test(sqlite, a_buffer_written_by_a_newer_tern_is_refused)
{
    harness h;
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    const tern_buffer_ops *ops = open_sqlite(&h, f, "");
    cr_assert_eq(put_id(ops, h.state, 1, 0), TERN_OK);
    harness_close(&h);
    sql_on(f, "PRAGMA user_version = 99;");
    assert_open_refused(f, "newer", "schema 99");
    assert_open_refused(f, f, "reads schema 2");
}

Test(sqlite, a_tern_buffer_without_its_table_is_reported_damaged)
{
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    sql_on(f, "PRAGMA application_id = 1952805486; PRAGMA user_version = 1; CREATE TABLE x(y);");
    assert_open_refused(f, f, "damaged");
}

/* The integer `sql` answers on `file`, read with SQLite directly. */
static int64_t int_on(const char *file, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_open(file, &db), SQLITE_OK, "open %s", file);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
    return v;
}

/* The log lines of opening `file` (into buf), with the instance left open. */
static const tern_buffer_ops *open_logged(harness *h, const char *file, char *buf, size_t size)
{
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    tern_log_set_stream(log);
    int rc = try_open(h, file, "");
    tern_log_set_stream(NULL);
    rewind(log);
    size_t n = fread(buf, 1, size - 1, log);
    buf[n] = '\0';
    fclose(log);
    cr_assert_eq(rc, TERN_OK, "open %s: %s", file, h->error);
    return harness_ops(h);
}

/* A file of the previous release (schema 1: no `taken`, records deleted by
 * get) as that release left it: WAL mode, ids 0..7 put, 0..3 consumed, id 5
 * from a producer whose meta ended before `version`. */
static void write_schema1_file(const char *file)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(file, &db), SQLITE_OK, "open %s", file);
    char *msg = NULL;
    const char *schema =
        "PRAGMA journal_mode = WAL; PRAGMA application_id = 1952805486; "
        "PRAGMA user_version = 1; "
        "CREATE TABLE records(seq INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER NOT NULL, "
        "version INTEGER, batch INTEGER, put_unix_ns INTEGER NOT NULL, data BLOB NOT NULL);";
    cr_assert_eq(sqlite3_exec(db, schema, NULL, NULL, &msg), SQLITE_OK, "%s", msg ? msg : "?");
    sqlite3_stmt *ins = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "INSERT INTO records(id, version, batch, put_unix_ns, "
                                        "data) VALUES (?1, ?2, ?3, 1, ?4)",
                                    -1, &ins, NULL),
                 SQLITE_OK);
    for (uint64_t id = 0; id < 8; id++) {
        unsigned char buf[SMALL];
        payload_fill(id, SMALL, buf);
        tern_record_meta m = meta_of(id);
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)id);
        if (id == 5) {
            sqlite3_bind_null(ins, 2);
            sqlite3_bind_null(ins, 3);
        } else {
            sqlite3_bind_int64(ins, 2, m.version);
            sqlite3_bind_int64(ins, 3, m.batch);
        }
        sqlite3_bind_blob(ins, 4, buf, (int)payload_len(id, SMALL), SQLITE_TRANSIENT);
        cr_assert_eq(sqlite3_step(ins), SQLITE_DONE, "%s", sqlite3_errmsg(db));
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    /* what the schema-1 get did: delete the oldest records it handed out */
    cr_assert_eq(sqlite3_exec(db, "DELETE FROM records WHERE seq <= 4", NULL, NULL, &msg),
                 SQLITE_OK, "%s", msg ? msg : "?");
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
}

Test(sqlite, a_schema_1_file_is_migrated_in_place_keeping_its_records_in_order)
{
    harness h;
    char f[PATH_MAX], log[8192];
    in_work(f, sizeof f, "old.db");
    write_schema1_file(f);
    cr_assert_eq(int_on(f, "PRAGMA user_version"), 1);

    const tern_buffer_ops *ops = open_logged(&h, f, log, sizeof log);
    cr_assert(strstr(log, "migrated") && strstr(log, "from schema 1 to schema 2") &&
                  strstr(log, f),
              "the migration was not logged: \"%s\"", log);
    cr_assert_eq(int_on(f, "PRAGMA user_version"), 2);
    cr_assert_eq(int_on(f, "PRAGMA application_id"), 1952805486);
    cr_assert_eq(int_on(f, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                           "name IN ('records_id', 'records_waiting')"),
                 2, "the migration did not create the indexes");
    cr_assert_eq(int_on(f, "SELECT count(*) FROM records WHERE taken = 0"), 4,
                 "every record of a schema-1 file is waiting");
    cr_assert_eq(stats_of(ops, h.state).held, 4);
    /* a new record goes after the old ones (seq keeps counting) */
    cr_assert_eq(put_id(ops, h.state, 8, 0), TERN_OK, "%s", tern_error_message());
    tern_record r[8];
    init_records(r, 8);
    size_t got;
    cr_assert_eq(ops->get(h.state, r, 8, &got, 0), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(got, 5);
    for (size_t i = 0; i < got; i++) {
        uint64_t id = 4 + i;
        cr_assert_eq(r[i].meta.id, id, "hand-out %zu is record %llu", i,
                     (unsigned long long)r[i].meta.id);
        cr_assert(payload_ok(&r[i], SMALL), "payload of record %llu", (unsigned long long)id);
        if (id == 5) {
            cr_assert_eq(r[i].meta.size, offsetof(tern_record_meta, version));
            cr_assert_eq(r[i].meta.version, 0);
        } else {
            cr_assert_eq(r[i].meta.size, sizeof(tern_record_meta));
            cr_assert_eq(r[i].meta.version, (int64_t)id / 10);
            cr_assert_eq(r[i].meta.batch, (int64_t)id % 7);
        }
    }
    ops->release(h.state, r, got);
    harness_close(&h);

    /* reopened: schema 2 already, nothing migrated again; the taken records
     * stay taken */
    ops = open_logged(&h, f, log, sizeof log);
    cr_assert_null(strstr(log, "migrated"), "migrated twice: \"%s\"", log);
    cr_assert(strstr(log, "5 of them handed out"), "log: \"%s\"", log);
    cr_assert_eq(stats_of(ops, h.state).held, 5);
    uint64_t ids[8];
    cr_assert_eq(recover_ids(ops, h.state, ids, 8), 5);
    cr_assert_eq(drain_expect_run(ops, h.state, 4, SMALL, "after the migration"), 5);
    harness_close(&h);
}

/* A schema-1 file without its table is damaged, not migrated. */
Test(sqlite, a_schema_1_file_without_its_records_table_is_refused_unchanged)
{
    char f[PATH_MAX];
    in_work(f, sizeof f, "b.db");
    sql_on(f, "PRAGMA application_id = 1952805486; PRAGMA user_version = 1; "
              "CREATE TABLE records(seq INTEGER PRIMARY KEY, id INTEGER);");
    assert_open_refused(f, f, "schema 1");
    cr_assert_eq(int_on(f, "PRAGMA user_version"), 1, "a refused file was migrated");
}

Test(sqlite, a_path_in_a_missing_directory_is_refused)
{
    char f[PATH_MAX];
    in_work(f, sizeof f, "no/such/dir/b.db");
    assert_open_refused(f, f, "directory");
}

Test(sqlite, a_database_that_cannot_use_wal_is_refused)
{
    assert_open_refused(":memory:", "WAL", "memory");
}

/* ---- settings -------------------------------------------------------------- */

static void assert_rejected(const char *settings, const char *expect)
{
    harness h;
    int rc = harness_open(&h, "sqlite", TERN_KIND_BUFFER, settings);
    cr_assert_neq(rc, TERN_OK, "settings \"%s\" were accepted", settings);
    cr_assert_null(h.state, "create ran for bad settings \"%s\"", settings);
    cr_assert(strstr(h.error, expect), "settings \"%s\": message \"%s\" lacks \"%s\"", settings,
              h.error, expect);
    harness_close(&h);
}

Test(sqlite, bad_settings_are_rejected)
{
    /* outside a run nobody fills in the run directory's file */
    assert_rejected("capacity = 4;", "slot.path is not set: `tern run` puts it in the run "
                                     "directory; outside a run, set slot.path");
    assert_rejected("path = \"x.db\"; capacity = -1;", "out of range");
    assert_rejected("path = \"x.db\"; capacity = 2000000000;", "out of range");
    assert_rejected("path = \"x.db\"; synchronous = \"off\";", "full|normal");
    assert_rejected("path = \"x.db\"; busy_timeout_ms = -5;", "out of range");
    assert_rejected("path = \"x.db\"; capacity = 4.5;", "capacity: expected an integer");
    assert_rejected("path = \"x.db\"; capcity = 4;", "did you mean 'capacity'");
    assert_rejected("path = \"\";", "empty");
}

/* ---- durability under SIGKILL -------------------------------------------- */

/* Children report over a pipe, 8 bytes per message (atomic in a pipe): the
 * ids of acknowledged puts, or of records received, and these markers. */
#define MSG_STARTING (UINT64_MAX - 1) /* about to open the buffer */
#define MSG_OPEN UINT64_MAX           /* the buffer is open */
#define MSG_COMMITTED (UINT64_MAX - 2) /* commit() of every record reported returned */

static void send_msg(int fd, uint64_t v)
{
    if (write(fd, &v, sizeof v) != (ssize_t)sizeof v)
        _exit(5);
}

/* One message into *v, waiting at most ms: 1, 0 at end of file, -1 on timeout. */
static int read_msg(int fd, uint64_t *v, int ms)
{
    unsigned char *p = (unsigned char *)v;
    size_t have = 0;
    while (have < sizeof *v) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = read(fd, p + have, sizeof *v - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return have ? -1 : 0;
        have += (size_t)n;
    }
    return 1;
}

typedef void (*child_fn)(const char *file, int fd);

/* Fork a child running fn (which never returns); the child has its own
 * instance, opened after the fork. Returns the pid; *fd is the read end. */
static pid_t spawn(child_fn fn, const char *file, int *fd)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* die with the test (a failed assertion ends it before the kill) */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(7);
        close(p[0]);
        fn(file, p[1]);
        _exit(0);
    }
    close(p[1]);
    *fd = p[0];
    return pid;
}

static void kill_and_reap(pid_t pid, int round)
{
    kill(pid, SIGKILL);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
              "round %d: the child ended by itself (status 0x%x: exit %d) before the kill",
              round, status, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* Puts ids 0, 1, 2, ... with payloads up to BIG bytes, reporting each id once
 * put() returned TERN_OK; waits to be killed. */
static void producer_child(const char *file, int fd)
{
    send_msg(fd, MSG_STARTING);
    harness h;
    if (try_open(&h, file, "synchronous = \"normal\";") != TERN_OK)
        _exit(3);
    const tern_buffer_ops *ops = harness_ops(&h);
    send_msg(fd, MSG_OPEN);
    for (uint64_t id = 0; id < 50000; id++) { /* bounded: the kill comes long before */
        if (put_id_max(ops, h.state, id, BIG, 10000) != TERN_OK)
            _exit(4);
        send_msg(fd, id);
    }
    for (;;)
        pause();
}

typedef struct kill_totals {
    int rounds;
    uint64_t acked, min_acked, max_acked;
    int unreported; /* rounds where a committed put had not been reported yet */
    int before_open; /* rounds killed before the buffer was open */
    int file_made;   /* ... of which the file existed at the kill */
} kill_totals;

/* One round: start a producer on a new file, kill it `delay_ms` after the
 * marker `after` (MSG_STARTING or MSG_OPEN), reopen the file and check it. */
static void producer_round(int round, uint64_t after, long delay_ms, kill_totals *t)
{
    char f[PATH_MAX], name[32];
    snprintf(name, sizeof name, "p%d.db", round);
    in_work(f, sizeof f, name);
    int fd;
    pid_t pid = spawn(producer_child, f, &fd);
    uint64_t v = 0;
    int opened = 0;
    for (;;) {
        int r = read_msg(fd, &v, 30000);
        cr_assert_eq(r, 1, "round %d: the producer failed to start (no marker, %d)", round, r);
        if (v == MSG_OPEN)
            opened = 1;
        if (v == after)
            break;
    }
    sleep_ms(delay_ms);
    kill_and_reap(pid, round);
    int made = exists(f);
    uint64_t acked = 0;
    int r;
    while ((r = read_msg(fd, &v, 5000)) == 1) {
        if (v == MSG_OPEN) {
            opened = 1;
            continue;
        }
        cr_assert_eq(v, acked, "round %d: acknowledgement %llu out of order", round,
                     (unsigned long long)v);
        acked++;
    }
    cr_assert_eq(r, 0, "round %d: reading the acknowledgements failed", round);
    close(fd);

    harness h;
    const tern_buffer_ops *ops = open_sqlite(&h, f, "synchronous = \"normal\";");
    char what[64];
    snprintf(what, sizeof what, "round %d (%llu acknowledged)", round, (unsigned long long)acked);
    uint64_t found = drain_expect_run(ops, h.state, 0, BIG, what);
    cr_assert_geq(found, acked, "%s: only %llu records in the file: acknowledged puts were lost",
                  what, (unsigned long long)found);
    cr_assert_leq(found, acked + 1,
                  "%s: %llu records in the file, more than the acknowledged and the one in "
                  "flight", what, (unsigned long long)found);
    cr_assert_eq(stats_of(ops, h.state).held, 0);
    harness_close(&h);
    remove_db(f);

    t->rounds++;
    t->acked += acked;
    if (acked < t->min_acked || t->rounds == 1)
        t->min_acked = acked;
    if (acked > t->max_acked)
        t->max_acked = acked;
    t->unreported += found > acked;
    t->before_open += !opened;
    t->file_made += !opened && made;
}

#define PRODUCER_KILLS 30

Test(sqlite, acknowledged_puts_survive_sigkill_of_the_producer, .timeout = 120)
{
    kill_totals t = {0};
    for (int round = 0; round < PRODUCER_KILLS; round++)
        producer_round(round, MSG_OPEN, (long)(rnd() % 31), &t);
    fprintf(stderr, "sqlite SIGKILL of a producer: %d kills, %llu puts acknowledged in all "
            "(%llu..%llu per round), %d rounds with a committed put not yet reported\n",
            t.rounds, (unsigned long long)t.acked, (unsigned long long)t.min_acked,
            (unsigned long long)t.max_acked, t.unreported);
    cr_assert_gt(t.acked, PRODUCER_KILLS, "the kills came too early to test anything");
}

/* Kills while the child is still loading plugins or creating the file: the
 * file must open afterwards (nothing half made) with a valid, contiguous
 * prefix of records. The kills are spread around the end of the time a child
 * takes from MSG_STARTING to MSG_OPEN, measured first. */
Test(sqlite, a_file_being_created_survives_sigkill, .timeout = 120)
{
    /* the shortest of three opens (the first is slowed by a cold cache) */
    double open_ms = 1e9;
    for (int probe = 0; probe < 3; probe++) {
        char f[PATH_MAX], name[32];
        snprintf(name, sizeof name, "probe%d.db", probe);
        in_work(f, sizeof f, name);
        int fd;
        pid_t pid = spawn(producer_child, f, &fd);
        uint64_t v = 0;
        cr_assert_eq(read_msg(fd, &v, 30000), 1);
        cr_assert_eq(v, MSG_STARTING);
        double t0 = now_ms();
        cr_assert_eq(read_msg(fd, &v, 30000), 1);
        cr_assert_eq(v, MSG_OPEN, "the probe child failed to open the buffer");
        double ms = now_ms() - t0;
        open_ms = ms < open_ms ? ms : open_ms;
        kill_and_reap(pid, -1);
        close(fd);
    }
    /* the file is made at the end of the open (after the plugins are loaded):
     * kill between a third of `hi` and `hi`, starting a quarter past the open
     * time and shrinking whenever a kill came after the open (a loaded
     * machine), until 8 kills landed inside the open, 3 of them after the
     * file was made (at most 30 rounds) */
    long hi = (long)(open_ms * 1.25) + 1;
    kill_totals t = {0};
    for (int round = 0; round < 30 && (t.before_open < 8 || t.file_made < 3); round++) {
        int before = t.before_open;
        producer_round(round, MSG_STARTING, hi / 3 + (long)(rnd() % (uint64_t)(hi - hi / 3 + 1)),
                       &t);
        if (t.before_open == before && hi > 1)
            hi = hi * 3 / 4;
    }
    fprintf(stderr, "sqlite SIGKILL while opening: %d kills up to %ld ms after the start (a "
            "child's open takes %.1f ms), %d before the buffer was open (%d of them after "
            "the file was made), %llu puts acknowledged\n",
            t.rounds, (long)(open_ms * 1.25) + 1, open_ms, t.before_open, t.file_made,
            (unsigned long long)t.acked);
    cr_assert_gt(t.before_open, 0, "no kill landed while the child was opening the buffer");
}

#define CONSUMER_RECORDS 3000
#define CONSUMER_MAX 512
#define CONSUMER_KILLS 12
#define MAX_WANT 8

/* Gets batches of 1..MAX_WANT records, reporting each id received, then
 * commits the batch and reports MSG_COMMITTED; waits to be killed once no
 * record is left waiting. */
static void consumer_child(const char *file, int fd)
{
    harness h;
    if (try_open(&h, file, "synchronous = \"normal\";") != TERN_OK)
        _exit(3);
    const tern_buffer_ops *ops = harness_ops(&h);
    send_msg(fd, MSG_OPEN);
    tern_record r[MAX_WANT];
    for (size_t k = 0;; k++) {
        size_t want = 1 + k % MAX_WANT, got = 0;
        init_records(r, want);
        int rc = ops->get(h.state, r, want, &got, 0);
        if (rc == TERN_ETIMEDOUT)
            break;
        if (rc != TERN_OK)
            _exit(4);
        uint64_t ids[MAX_WANT];
        for (size_t i = 0; i < got; i++) {
            if (!payload_ok(&r[i], CONSUMER_MAX))
                _exit(6);
            send_msg(fd, r[i].meta.id);
            ids[i] = r[i].meta.id;
        }
        if (ops->commit(h.state, ids, got) != TERN_OK)
            _exit(8);
        send_msg(fd, MSG_COMMITTED);
        ops->release(h.state, r, got);
    }
    for (;;)
        pause();
}

static void copy_file(const char *from, const char *to)
{
    static unsigned char buf[1 << 16];
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    cr_assert(in && out, "copy %s to %s: %s", from, to, strerror(errno));
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        cr_assert_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    cr_assert_eq(fclose(out), 0);
}

/* A consumer killed anywhere between get and commit loses nothing: the file
 * still holds every record it did not commit (those it was handed and had
 * not committed stay there, taken, and recover() hands them back in their
 * places), and none it committed. Its commit of the last batch it reported
 * may or may not have landed; a batch it was handed but had not reported yet
 * is taken. */
Test(sqlite, a_consumer_killed_between_get_and_commit_loses_nothing, .timeout = 120)
{
    char tmpl[PATH_MAX], wal[PATH_MAX + 8];
    in_work(tmpl, sizeof tmpl, "template.db");
    harness h;
    const tern_buffer_ops *ops = open_sqlite(&h, tmpl, "synchronous = \"normal\";");
    for (uint64_t id = 0; id < CONSUMER_RECORDS; id++)
        cr_assert_eq(put_id_max(ops, h.state, id, CONSUMER_MAX, 0), TERN_OK, "%s",
                     tern_error_message());
    harness_close(&h); /* the last connection checkpoints and removes the WAL */
    snprintf(wal, sizeof wal, "%s-wal", tmpl);
    cr_assert_not(exists(wal), "the WAL outlived the last connection");

    static uint64_t ids[CONSUMER_RECORDS];
    uint64_t total_got = 0, total_back = 0;
    for (int round = 0; round < CONSUMER_KILLS; round++) {
        char f[PATH_MAX], name[32];
        snprintf(name, sizeof name, "c%d.db", round);
        in_work(f, sizeof f, name);
        copy_file(tmpl, f);
        int fd;
        pid_t pid = spawn(consumer_child, f, &fd);
        uint64_t v = 0;
        cr_assert_eq(read_msg(fd, &v, 30000), 1, "round %d: the consumer failed to start",
                     round);
        cr_assert_eq(v, MSG_OPEN);
        sleep_ms((long)(rnd() % 31));
        kill_and_reap(pid, round);
        uint64_t got = 0, committed = 0;
        int r;
        while ((r = read_msg(fd, &v, 5000)) == 1) {
            if (v == MSG_COMMITTED) {
                committed = got;
                continue;
            }
            cr_assert_eq(v, got, "round %d: record %llu received out of order", round,
                         (unsigned long long)v);
            got++;
        }
        cr_assert_eq(r, 0, "round %d: reading the consumer's reports failed", round);
        close(fd);

        /* taken: the records reported and not known committed, and at most
         * one batch handed out and not reported */
        int64_t taken = int_on(f, "SELECT count(*) FROM records WHERE taken = 1");
        ops = open_sqlite(&h, f, "synchronous = \"normal\";");
        uint64_t held = stats_of(ops, h.state).held;
        uint64_t gone = CONSUMER_RECORDS - held;
        cr_assert(gone == committed || gone == got,
                  "round %d: %llu records left the file; %llu were committed and %llu "
                  "received: a record was lost, or an uncommitted one forgotten", round,
                  (unsigned long long)gone, (unsigned long long)committed,
                  (unsigned long long)got);
        cr_assert_geq((uint64_t)taken, got - gone,
                      "round %d: %lld records taken, fewer than the %llu received and not "
                      "committed", round, (long long)taken, (unsigned long long)(got - gone));
        cr_assert_leq((uint64_t)taken, got - gone + MAX_WANT,
                      "round %d: %lld records taken: more than one batch beyond those "
                      "received", round, (long long)taken);
        /* nothing taken is handed out before the recovery */
        if (taken > 0) {
            tern_record rec[1];
            init_records(rec, 1);
            size_t n1 = 0;
            if (gone + (uint64_t)taken < CONSUMER_RECORDS) {
                cr_assert_eq(ops->get(h.state, rec, 1, &n1, 0), TERN_OK);
                cr_assert_eq(rec[0].meta.id, gone + (uint64_t)taken,
                             "round %d: record %llu handed out before the recovery", round,
                             (unsigned long long)rec[0].meta.id);
                ops->release(h.state, rec, n1);
            } else {
                cr_assert_eq(ops->get(h.state, rec, 1, &n1, 0), TERN_ETIMEDOUT);
            }
        }
        cr_assert_eq(recover_ids(ops, h.state, ids, CONSUMER_RECORDS), held);
        for (uint64_t i = 0; i < held; i++)
            cr_assert_eq(ids[i], gone + i, "round %d: recover listed %llu at %llu", round,
                         (unsigned long long)ids[i], (unsigned long long)i);
        char what[64];
        snprintf(what, sizeof what, "round %d (%llu received)", round, (unsigned long long)got);
        /* what is left is exactly the records after those committed, in order */
        cr_assert_eq(drain_expect_run(ops, h.state, gone, CONSUMER_MAX, what), held);
        cr_assert_eq(stats_of(ops, h.state).held, 0);
        harness_close(&h);
        remove_db(f);
        total_got += got;
        total_back += (uint64_t)taken;
    }
    fprintf(stderr, "sqlite SIGKILL of a consumer: %d kills, %llu records received in all, "
            "%llu handed out and not committed when killed, all recovered\n",
            CONSUMER_KILLS, (unsigned long long)total_got, (unsigned long long)total_back);
    cr_assert_gt(total_got, 0, "the kills came too early to test anything");
    cr_assert_lt(total_got, (uint64_t)CONSUMER_KILLS * CONSUMER_RECORDS,
                 "every consumer finished before its kill: the test proved nothing");
}

/* ---- processes opening one new file at once ------------------------------ */

#define OPENERS 4
#define OPEN_ROUNDS 30

/* Every rank of an MPI run opens the run's buffer file as it starts: OPENERS
 * processes, released together, open the same new file; each must find it
 * new or ours, never half made (the header's three values read in one
 * snapshot, not from two states of the file). */
Test(sqlite, processes_opening_one_new_file_at_once_all_succeed, .timeout = 120)
{
    for (int round = 0; round < OPEN_ROUNDS; round++) {
        char f[PATH_MAX], name[32];
        snprintf(name, sizeof name, "race%d.db", round);
        in_work(f, sizeof f, name);
        int go[2], report[2];
        cr_assert_eq(pipe(go), 0);
        cr_assert_eq(pipe(report), 0);
        pid_t pids[OPENERS];
        fflush(NULL);
        for (int c = 0; c < OPENERS; c++) {
            pids[c] = fork();
            cr_assert_neq(pids[c], -1, "fork: %s", strerror(errno));
            if (pids[c] == 0) {
                close(go[1]);
                close(report[0]);
                char b;
                if (read(go[0], &b, 1) != 1)
                    _exit(6);
                harness h;
                int rc = try_open(&h, f, "synchronous = \"normal\";");
                if (rc != TERN_OK) { /* the message, for the parent to show */
                    size_t n = strlen(h.error);
                    if (write(report[1], h.error, n < 511 ? n : 511) < 0)
                        _exit(5);
                }
                harness_close(&h);
                _exit(rc == TERN_OK ? 0 : 3);
            }
        }
        close(go[0]);
        close(report[1]);
        char release[OPENERS];
        memset(release, 'g', sizeof release);
        cr_assert_eq(write(go[1], release, sizeof release), (ssize_t)sizeof release);
        close(go[1]);
        int failed = 0;
        for (int c = 0; c < OPENERS; c++) {
            int status = 0;
            cr_assert_eq(waitpid(pids[c], &status, 0), pids[c]);
            failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        char why[600] = "";
        ssize_t n = read(report[0], why, sizeof why - 1);
        why[n > 0 ? n : 0] = '\0';
        close(report[0]);
        cr_assert_eq(failed, 0, "round %d: %d of %d processes failed to open the new file: %s",
                     round, failed, OPENERS, why);
        harness h;
        const tern_buffer_ops *ops = open_sqlite(&h, f, NULL);
        cr_assert_eq(stats_of(ops, h.state).held, 0);
        harness_close(&h);
        remove_db(f);
    }
}
