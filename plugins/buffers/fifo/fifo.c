/*
 * fifo.c: the `fifo` buffer plugin: a bounded, blocking, first-in first-out
 * queue of records for many producers and many consumers (see docs/buffers.md).
 *
 * Each record lives in one malloc'd node holding its links, its metadata and
 * a copy of its bytes. A node sits in one of two lists: the queue (waiting to
 * be handed out, at most `capacity` of them) or the handed-out list (given to
 * a consumer by get() and not yet released). Keeping the second list lets
 * destroy() free records a consumer never gave back.
 *
 * One mutex guards both lists and the counters; `not_empty` wakes getters,
 * `not_full` wakes putters waiting for room. Timed waits use CLOCK_MONOTONIC so
 * that a change of the wall clock neither shortens nor stretches a timeout.
 */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tern/buffer.h>
#include <tern/plugin.h>

#include "../common/buffer_common.h"

static const tern_host *host;

typedef enum full_policy { FULL_BLOCK, FULL_DROP_OLDEST } full_policy;

typedef buffer_node node;

typedef struct fifo {
    tern_ctx *ctx;
    uint64_t capacity;
    full_policy when_full;

    pthread_mutex_t lock;
    pthread_cond_t not_empty; /* a record was queued, or the buffer closed */
    pthread_cond_t not_full;  /* room was made, or the buffer closed */
    qlink queue;              /* sentinel: head = queue.next, tail = queue.prev */
    qlink out;                /* sentinel of the handed-out list */
    uint64_t held;            /* nodes in `queue` */
    int closed;

    uint64_t n_put, n_got, n_dropped;
} fifo;

/* ---- waiting ------------------------------------------------------------ */

/* Wait once on `cv` (lock held) as the caller's timeout allows. Returns 0 after
 * a wakeup (maybe spurious: the caller re-checks its condition) and ETIMEDOUT
 * once the deadline has passed, at once for timeout_ms == 0. */
static int wait_once(fifo *f, pthread_cond_t *cv, int64_t timeout_ms, const struct timespec *dl)
{
    if (timeout_ms == 0)
        return ETIMEDOUT;
    if (timeout_ms < 0)
        return pthread_cond_wait(cv, &f->lock);
    return pthread_cond_timedwait(cv, &f->lock, dl) == ETIMEDOUT ? ETIMEDOUT : 0;
}

/* ---- create / destroy -------------------------------------------------- */

static int read_settings(tern_ctx *ctx, fifo *f)
{
    int64_t capacity;
    const char *when_full;
    /* the core checked and defaulted both before create(); a failure here left
     * its own message, which names the key */
    int rc = host->get_int(ctx, "capacity", &capacity);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "when_full", &when_full);
    if (rc != TERN_OK)
        return rc;
    if (capacity < 1)
        return host->setting_error(ctx, "capacity", "%lld is too small; use 1 or more",
                                   (long long)capacity);
    int policy = 0; /* the index in "block|drop_oldest": FULL_BLOCK, FULL_DROP_OLDEST */
    rc = buffer_setting_choice(host, ctx, "when_full", when_full, "block|drop_oldest", &policy);
    if (rc != TERN_OK)
        return rc;
    f->when_full = (full_policy)policy;
    f->capacity = (uint64_t)capacity;
    return TERN_OK;
}

static int fifo_create(tern_ctx *ctx, void **state)
{
    fifo *f = calloc(1, sizeof *f);
    if (!f)
        return host->fail(ctx, TERN_ENOMEM, "fifo: out of memory creating the buffer");
    f->ctx = ctx;
    int rc = read_settings(ctx, f);
    if (rc == TERN_OK)
        rc = buffer_init_sync(host, ctx, "fifo", &f->lock, &f->not_empty, &f->not_full);
    if (rc != TERN_OK) {
        free(f);
        return rc;
    }
    list_init(&f->queue);
    list_init(&f->out);
    *state = f;
    return TERN_OK;
}

static void fifo_destroy(void *state)
{
    fifo *f = state;
    if (!f)
        return;
    list_free_all(&f->queue);
    list_free_all(&f->out); /* records a consumer never released */
    buffer_destroy_sync(&f->lock, &f->not_empty, &f->not_full);
    free(f);
}

/* ---- put --------------------------------------------------------------- */

/* Make room for one record (lock held). Returns TERN_OK with *victim set to a
 * dropped node (or NULL), TERN_ECLOSED or TERN_ETIMEDOUT; fails nothing itself. */
static int make_room(fifo *f, int64_t timeout_ms, node **victim)
{
    *victim = NULL;
    if (f->when_full == FULL_DROP_OLDEST) {
        if (f->closed)
            return TERN_ECLOSED;
        if (f->held >= f->capacity) {
            *victim = (node *)list_pop_front(&f->queue);
            f->held--;
            f->n_dropped++;
        }
        return TERN_OK;
    }
    struct timespec dl = buffer_deadline_after(timeout_ms);
    int expired = 0;
    while (!f->closed && f->held >= f->capacity) {
        if (expired)
            return TERN_ETIMEDOUT;
        expired = wait_once(f, &f->not_full, timeout_ms, &dl) == ETIMEDOUT;
    }
    return f->closed ? TERN_ECLOSED : TERN_OK;
}

static int fifo_put(void *state, const void *data, size_t len, const tern_record_meta *meta,
                    int64_t timeout_ms)
{
    fifo *f = state;
    int rc = buffer_check_put_args(host, f->ctx, "fifo", data, len, meta,
                                   SIZE_MAX - sizeof(node));
    if (rc != TERN_OK)
        return rc;
    /* copy before locking: the copy of a large record should not stall others */
    node *n = buffer_node_new(data, len, meta);
    if (!n)
        return buffer_fail_copy(host, f->ctx, "fifo", len, (unsigned long long)meta->id);
    node *victim;
    pthread_mutex_lock(&f->lock);
    rc = make_room(f, timeout_ms, &victim);
    if (rc == TERN_OK) {
        list_push_back(&f->queue, &n->l);
        f->held++;
        f->n_put++;
        pthread_cond_signal(&f->not_empty);
        /* pass the wakeup on: another putter may fit too (a get freed several) */
        if (f->held < f->capacity)
            pthread_cond_signal(&f->not_full);
    }
    pthread_mutex_unlock(&f->lock);
    if (victim) {
        free(victim);
        host->metric(f->ctx, "dropped", 1);
    }
    if (rc == TERN_OK)
        return TERN_OK;
    free(n);
    if (rc == TERN_ECLOSED)
        return buffer_fail_put_closed(host, f->ctx, "fifo", (unsigned long long)meta->id);
    return host->fail(f->ctx, TERN_ETIMEDOUT,
                      "fifo: put of record %llu timed out after %lld ms with the buffer full "
                      "(%llu records); consumers are slower than producers: raise capacity or "
                      "the timeout, or set when_full = \"drop_oldest\"",
                      (unsigned long long)meta->id, (long long)timeout_ms,
                      (unsigned long long)f->capacity);
}

/* ---- get / release ----------------------------------------------------- */

/* Wait (lock held) until a record is queued, the buffer closes or the
 * timeout expires: TERN_OK (records queued, maybe closed too), TERN_ECLOSED
 * (closed and drained) or TERN_ETIMEDOUT. */
static int wait_for_record(fifo *f, int64_t timeout_ms)
{
    struct timespec dl = buffer_deadline_after(timeout_ms);
    int expired = 0;
    while (!f->closed && f->held == 0) {
        if (expired)
            return TERN_ETIMEDOUT;
        expired = wait_once(f, &f->not_empty, timeout_ms, &dl) == ETIMEDOUT;
    }
    return f->held ? TERN_OK : TERN_ECLOSED;
}

static int fifo_get(void *state, tern_record *out, size_t want, size_t *got, int64_t timeout_ms)
{
    fifo *f = state;
    int rc = buffer_check_get_args(host, f->ctx, "fifo", out, want, got);
    if (rc != TERN_OK)
        return rc;
    pthread_mutex_lock(&f->lock);
    rc = wait_for_record(f, timeout_ms);
    size_t n = 0;
    for (; rc == TERN_OK && n < want && f->held; n++) {
        node *x = (node *)list_pop_front(&f->queue);
        f->held--;
        list_push_back(&f->out, &x->l);
        buffer_fill_record(&out[n], &x->meta, x->data, x->len, 0); /* each once */
    }
    if (n) {
        f->n_got += n;
        /* n slots opened: wake up to n putters (one signal each is enough) */
        if (n == 1)
            pthread_cond_signal(&f->not_full);
        else
            pthread_cond_broadcast(&f->not_full);
        if (f->held)
            pthread_cond_signal(&f->not_empty); /* records left for another getter */
    }
    pthread_mutex_unlock(&f->lock);
    *got = n;
    if (rc == TERN_ECLOSED)
        return host->fail(f->ctx, TERN_ECLOSED,
                          "fifo: get on a closed buffer with no records left; stop consuming");
    if (rc == TERN_ETIMEDOUT)
        return host->fail(f->ctx, TERN_ETIMEDOUT,
                          "fifo: get found no record within %lld ms; producers are slower than "
                          "the timeout: raise it, or pass -1 to wait without limit",
                          (long long)timeout_ms);
    return TERN_OK;
}

static void fifo_release(void *state, tern_record *recs, size_t n)
{
    fifo *f = state;
    buffer_release_nodes(&f->lock, recs, n);
}

/* ---- close / stats ----------------------------------------------------- */

static void fifo_close(void *state)
{
    fifo *f = state;
    buffer_close(&f->lock, &f->closed, &f->not_empty, &f->not_full);
}

static int fifo_stats(void *state, tern_buffer_stats *out)
{
    fifo *f = state;
    int rc = buffer_check_stats_out(host, f->ctx, "fifo", out);
    if (rc != TERN_OK)
        return rc;
    pthread_mutex_lock(&f->lock);
    /* skipped 0: a FIFO has no notion of staleness */
    tern_buffer_stats v = {.held = f->held, .capacity = f->capacity, .put = f->n_put,
                           .got = f->n_got, .dropped = f->n_dropped};
    pthread_mutex_unlock(&f->lock);
    buffer_write_stats(out, &v);
    return TERN_OK;
}

/* ---- descriptor -------------------------------------------------------- */

static const tern_buffer_ops fifo_ops = {
    .size = sizeof fifo_ops,
    .create = fifo_create,
    .destroy = fifo_destroy,
    .put = fifo_put,
    .get = fifo_get,
    .release = fifo_release,
    .close = fifo_close,
    .stats = fifo_stats,
};

static const tern_setting_spec fifo_settings[] = {
    TERN_SETTING(.name = "capacity", .type = TERN_SETTING_INT, .def = "64", .min = 1, .max = 1e9,
                 .aka = "size|max_size|max_records|cap",
                 .doc = "most records held at once (records handed out by get do not count)"),
    TERN_SETTING(.name = "when_full", .type = TERN_SETTING_STRING, .def = "\"block\"",
                 .choices = "block|drop_oldest", .aka = "full|on_full|policy|full_policy",
                 .doc = "put on a full buffer: block = wait for room up to its timeout, "
                        "drop_oldest = discard the oldest held record"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor fifo_descriptor = {
    .size = sizeof fifo_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_BUFFER,
    .name = "fifo",
    .version = "1.0.0",
    .summary = "bounded blocking first-in first-out queue of records",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &fifo_ops,
    .settings = fifo_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &fifo_descriptor;
}
