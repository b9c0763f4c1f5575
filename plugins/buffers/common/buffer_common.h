/*
 * buffer_common.h: what the buffer plugins (fifo, priority, sqlite) share:
 * the intrusive list their records sit in, the lock and the two condition
 * variables on CLOCK_MONOTONIC (made, closed and destroyed alike), deadlines,
 * reading a choice setting, the checks of put/get/stats arguments and the
 * refusals of a put without memory or after close (one wording for every
 * buffer), keeping a caller's meta, and writing stats and records for callers
 * built against an older SDK. Header only (static inline): each plugin is its
 * own .so and links nothing shared.
 */
#ifndef TERN_PLUGINS_BUFFER_COMMON_H
#define TERN_PLUGINS_BUFFER_COMMON_H

#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tern/buffer.h"
#include "tern/host.h"

/* Deadlines are now + timeout_ms in a struct timespec; with a 64-bit time_t
 * no timeout_ms an int64_t can hold overflows it. */
_Static_assert(sizeof(time_t) >= 8, "buffers need a 64-bit time_t for their deadlines");

/* ---- lists ------------------------------------------------------------------- */

/* Doubly linked list links; the first member of a node, so a link is its
 * node and a malloc'd node is freed through its link. */
typedef struct qlink {
    struct qlink *prev, *next;
} qlink;

static inline void list_init(qlink *s) { s->prev = s->next = s; }
static inline int list_empty(const qlink *s) { return s->next == s; }

static inline void list_push_back(qlink *s, qlink *l)
{
    l->prev = s->prev;
    l->next = s;
    s->prev->next = l;
    s->prev = l;
}

static inline void list_unlink(qlink *l)
{
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->prev = l->next = l;
}

/* Unlink and return the first link (the list is not empty). */
static inline qlink *list_pop_front(qlink *s)
{
    qlink *l = s->next;
    list_unlink(l);
    return l;
}

/* Free every node of the list (each one malloc'd, its link first). */
static inline void list_free_all(qlink *s)
{
    while (!list_empty(s))
        free(list_pop_front(s));
}

/* ---- a record's copy ------------------------------------------------------------ */

/* One record held by fifo, or handed out by sqlite: links, meta, bytes. */
typedef struct buffer_node {
    qlink l;
    tern_record_meta meta; /* meta.size: the bytes of the caller's meta kept */
    size_t len;
    /* aligned like malloc'd memory, so consumers may read the bytes in place */
    alignas(max_align_t) unsigned char data[];
} buffer_node;

/* Copy the part of `meta` both sides know into *dst; dst->size says how much
 * (members past it were not given: readers check TERN_HAS). */
static inline void buffer_keep_meta(tern_record_meta *dst, const tern_record_meta *meta)
{
    size_t keep = meta->size < sizeof *dst ? meta->size : sizeof *dst;
    memset(dst, 0, sizeof *dst);
    memcpy(dst, meta, keep);
    dst->size = keep;
}

/* A node holding copies of meta and the bytes, or NULL when out of memory. */
static inline buffer_node *buffer_node_new(const void *data, size_t len,
                                           const tern_record_meta *meta)
{
    buffer_node *n = malloc(sizeof *n + len);
    if (!n)
        return NULL;
    buffer_keep_meta(&n->meta, meta);
    n->len = len;
    if (len)
        memcpy(n->data, data, len);
    list_init(&n->l);
    return n;
}

/* Fill one caller record, writing only the members the caller has. */
static inline void buffer_fill_record(tern_record *r, const tern_record_meta *meta,
                                      const unsigned char *data, size_t len, uint32_t uses)
{
    r->meta = *meta;
    r->data = data;
    r->len = len;
    if (TERN_HAS(r, use_count))
        r->use_count = uses;
}

/* release() of a buffer whose handed-out records are buffer_nodes on a list
 * guarded by `lock`: free them (outside the lock). A record released twice,
 * or never handed out, has data NULL and is skipped. */
static inline void buffer_release_nodes(pthread_mutex_t *lock, tern_record *recs, size_t n)
{
    if (!recs || n == 0)
        return; /* nothing to give back; release cannot report an error */
    qlink gone;
    list_init(&gone);
    pthread_mutex_lock(lock);
    for (size_t i = 0; i < n; i++) {
        if (!recs[i].data)
            continue;
        /* data points into the node get() filled it from (the buffer's own
         * memory, const only to the consumer): step back to the node */
        buffer_node *x =
            (buffer_node *)(void *)((unsigned char *)recs[i].data - offsetof(buffer_node, data));
        list_unlink(&x->l);
        list_push_back(&gone, &x->l);
        recs[i].data = NULL;
        recs[i].len = 0;
    }
    pthread_mutex_unlock(lock);
    list_free_all(&gone);
}

/* ---- waiting ------------------------------------------------------------------- */

/* A mutex and two condition variables waiting on CLOCK_MONOTONIC (so a change
 * of the wall clock neither shortens nor stretches a timeout) for the buffer
 * `name`. TERN_OK, or TERN_ENOMEM after host->fail with nothing left
 * initialised. */
static inline int buffer_init_sync(const tern_host *host, tern_ctx *ctx, const char *name,
                                   pthread_mutex_t *lock, pthread_cond_t *a, pthread_cond_t *b)
{
    pthread_condattr_t ca;
    int have_lock = 0, have_a = 0, have_b = 0;
    if (pthread_condattr_init(&ca) == 0) {
        int ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0;
        have_a = ok && pthread_cond_init(a, &ca) == 0;
        have_b = have_a && pthread_cond_init(b, &ca) == 0;
        have_lock = have_b && pthread_mutex_init(lock, NULL) == 0;
        pthread_condattr_destroy(&ca);
    }
    if (have_lock)
        return TERN_OK;
    if (have_b)
        pthread_cond_destroy(b);
    if (have_a)
        pthread_cond_destroy(a);
    return host->fail(ctx, TERN_ENOMEM,
                      "%s: cannot create the buffer's mutex or condition variables "
                      "(out of memory or thread resources)", name);
}

/* Undo buffer_init_sync(). */
static inline void buffer_destroy_sync(pthread_mutex_t *lock, pthread_cond_t *a,
                                       pthread_cond_t *b)
{
    pthread_cond_destroy(b);
    pthread_cond_destroy(a);
    pthread_mutex_destroy(lock);
}

/* close(): set *closed under the lock and wake every waiter on a and b, so
 * that each sees it. */
static inline void buffer_close(pthread_mutex_t *lock, int *closed, pthread_cond_t *a,
                                pthread_cond_t *b)
{
    pthread_mutex_lock(lock);
    *closed = 1;
    pthread_cond_broadcast(a);
    pthread_cond_broadcast(b);
    pthread_mutex_unlock(lock);
}

/* t + ms (ms >= 0). */
static inline struct timespec buffer_ts_after(struct timespec t, int64_t ms)
{
    t.tv_sec += (time_t)(ms / 1000);
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* The absolute CLOCK_MONOTONIC time `timeout_ms` from now; {0, 0}, never
 * waited for, when timeout_ms <= 0 (no wait, or no limit). */
static inline struct timespec buffer_deadline_after(int64_t timeout_ms)
{
    struct timespec t = {0, 0};
    if (timeout_ms <= 0)
        return t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return buffer_ts_after(t, timeout_ms);
}

/* ---- settings ------------------------------------------------------------------- */

/* The index of `value` among `choices` ("a|b|..."): TERN_OK with *index set,
 * or host->setting_error naming `key`. The core checks choices before
 * create(): a second guard. */
static inline int buffer_setting_choice(const tern_host *host, tern_ctx *ctx, const char *key,
                                        const char *value, const char *choices, int *index)
{
    size_t n = strlen(value);
    int k = 0;
    for (const char *c = choices;; k++) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && memcmp(c, value, n) == 0) {
            *index = k;
            return TERN_OK;
        }
        if (!bar)
            break;
        c = bar + 1;
    }
    return host->setting_error(ctx, key, "'%s' is not one of %s", value, choices);
}

/* ---- argument checks (one wording for every buffer) ----------------------------- */

/* put's arguments; `max_len` is the longest record the buffer can hold.
 * TERN_OK, or TERN_EINVAL after host->fail naming `name`. */
static inline int buffer_check_put_args(const tern_host *host, tern_ctx *ctx, const char *name,
                                        const void *data, size_t len,
                                        const tern_record_meta *meta, size_t max_len)
{
    if (!data && len > 0)
        return host->fail(ctx, TERN_EINVAL,
                          "%s: put got data = NULL with len = %zu; pass the record's bytes, "
                          "or len = 0 for an empty record", name, len);
    if (!meta)
        return host->fail(ctx, TERN_EINVAL,
                          "%s: put got meta = NULL; pass a tern_record_meta with .size = "
                          "sizeof(tern_record_meta)", name);
    if (!TERN_HAS(meta, id))
        return host->fail(ctx, TERN_EINVAL,
                          "%s: put got meta->size = %zu, too small to hold the record id; "
                          "set meta.size = sizeof(tern_record_meta)", name, meta->size);
    if (len > max_len)
        return host->fail(ctx, TERN_EINVAL, "%s: put got len = %zu, more than memory can "
                          "hold; pass the record's real length", name, len);
    return TERN_OK;
}

/* get's arguments, after *got = 0 (when got is given): TERN_OK, or
 * TERN_EINVAL after host->fail naming `name`. */
static inline int buffer_check_get_args(const tern_host *host, tern_ctx *ctx, const char *name,
                                        const tern_record *out, size_t want, size_t *got)
{
    if (!got)
        return host->fail(ctx, TERN_EINVAL, "%s: get got got = NULL; pass a size_t to "
                          "receive the number of records handed out", name);
    *got = 0;
    if (want == 0)
        return host->fail(ctx, TERN_EINVAL, "%s: get got want = 0; ask for at least 1 "
                          "record", name);
    if (!out)
        return host->fail(ctx, TERN_EINVAL, "%s: get got out = NULL with want = %zu; pass "
                          "an array of `want` tern_record", name, want);
    for (size_t i = 0; i < want; i++)
        if (!TERN_HAS(&out[i], len))
            return host->fail(ctx, TERN_EINVAL,
                              "%s: get got out[%zu].size = %zu, too small for a record; set "
                              "every out[i].size = sizeof(tern_record) before get()",
                              name, i, out[i].size);
    return TERN_OK;
}

/* put found no memory to copy record `id` of `len` bytes: TERN_ENOMEM after
 * host->fail naming `name`. */
static inline int buffer_fail_copy(const tern_host *host, tern_ctx *ctx, const char *name,
                                   size_t len, unsigned long long id)
{
    return host->fail(ctx, TERN_ENOMEM, "%s: out of memory copying a record of %zu bytes (id "
                      "%llu); lower capacity or the size of records", name, len, id);
}

/* put of record `id` after close(): TERN_ECLOSED after host->fail naming
 * `name`. */
static inline int buffer_fail_put_closed(const tern_host *host, tern_ctx *ctx, const char *name,
                                         unsigned long long id)
{
    return host->fail(ctx, TERN_ECLOSED, "%s: put of record %llu after the buffer was closed; "
                      "stop producing once close() has been called", name, id);
}

/* stats' argument: TERN_OK, or TERN_EINVAL after host->fail naming `name`. */
static inline int buffer_check_stats_out(const tern_host *host, tern_ctx *ctx, const char *name,
                                         const tern_buffer_stats *out)
{
    if (!out)
        return host->fail(ctx, TERN_EINVAL, "%s: stats got out = NULL; pass a "
                          "tern_buffer_stats with .size = sizeof(tern_buffer_stats)", name);
    return TERN_OK;
}

/* Copy the counters in `v` into *out, only the members the caller's struct
 * holds (it may predate a member). */
static inline void buffer_write_stats(tern_buffer_stats *out, const tern_buffer_stats *v)
{
    if (TERN_HAS(out, held))
        out->held = v->held;
    if (TERN_HAS(out, capacity))
        out->capacity = v->capacity;
    if (TERN_HAS(out, put))
        out->put = v->put;
    if (TERN_HAS(out, got))
        out->got = v->got;
    if (TERN_HAS(out, dropped))
        out->dropped = v->dropped;
    if (TERN_HAS(out, skipped))
        out->skipped = v->skipped;
}

#endif /* TERN_PLUGINS_BUFFER_COMMON_H */
