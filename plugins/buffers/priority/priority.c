/*
 * priority.c: the `priority` buffer plugin: a bounded replay buffer for many
 * producers and many consumers that may hand each record out more than once,
 * in an order of its own (see docs/buffers.md).
 *
 * Settings (the `buffer` group):
 *   capacity           int, default 1024, 1 to 1e9: most records held at once.
 *                      Every record the buffer holds counts, whether waiting,
 *                      cooling or handed out and not yet released.
 *   priority           "linear_decay" (default) or "uniform": the hand-out order.
 *   decay              float, default 0.1, 0 to 1e6: linear_decay's cost of one use.
 *   max_uses           int, default 1, 1 to 1e6: times a record may be handed out.
 *   reuse_cooldown_ms  int, default 0, 0 to 1e9: rest after a release before a
 *                      record with uses left can be handed out again.
 *   max_staleness      int, default -1 (off), -1 to 1e9: versions a record may
 *                      lag behind the current one and still be handed out.
 *
 * States. Each record held is in exactly one state:
 *   waiting  eligible: the next get may hand it out;
 *   cooling  released with uses left, resting until its cool-down ends (only
 *            when reuse_cooldown_ms > 0), then waiting again;
 *   out      handed out by get and not yet released; never eligible, so no
 *            record is ever handed out twice at once (nor twice in one get).
 * A record's use count is the number of times it has been handed out and
 * released; get reports it as tern_record.use_count (times handed out before
 * this one: 0 on the first hand-out, max_uses - 1 on the last).
 *
 * Order. linear_decay (as Trinity-RFT's linear_decay priority function):
 *   priority = meta.version - decay * use_count   (in double precision)
 * Records rank by priority, higher first, and at equal priority by put order,
 * the record put earlier first (a record requeued after a release keeps its
 * original place in put order). get hands out waiting records in rank order.
 * So with decay = 0 the freshest weight version comes first; with decay > 0
 * each use costs `decay` versions of priority (decay = 0.1: a record used 10
 * times ranks like an unused record one version older; ties go by put order).
 * uniform (classic experience replay): each waiting record is equally likely,
 * drawn with a xoshiro256** generator seeded from host->rng_seed(ctx,
 * "priority"), so a run with the same run.seed and the same sequence of calls
 * hands records out in the same order. `decay` is unused.
 *
 * put copies the bytes and the caller's metadata (meta.size bytes of it; a
 * caller built before `version` existed puts version 0). When the buffer holds
 * `capacity` records, put makes room by discarding one evictable record:
 * evictable are the waiting and the cooling ones (not those handed out).
 *   linear_decay: the lowest-ranked record among the evictable ones and the
 *     new one is discarded (lowest priority; at equal priority the one put
 *     last). That may be the new record itself: then put stores nothing and
 *     still returns TERN_OK (a full buffer never keeps a record worse than all
 *     it holds; at equal priority the older record stays).
 *   uniform: the evictable record put earliest is discarded.
 * Either way the put counts in `put` (it returned TERN_OK), the discarded
 * record in `dropped`, and the metric `buffer.dropped` observes 1. When nothing is evictable (all
 * `capacity` records are handed out), put waits until room appears (a record
 * freed after its last use or skipped as stale, or one requeued by a release
 * that can then be evicted), up to its timeout (TERN_ETIMEDOUT, nothing
 * stored, not counted) or a close (TERN_ECLOSED).
 *
 * get waits until at least one record is waiting (a cool-down ending within
 * the timeout counts: the wait ends when it does), then hands out up to `want`
 * waiting records, best first, without waiting for more. Staleness is judged
 * at hand-out: with max_staleness >= 0, a record whose
 *   meta.version < current - max_staleness,
 *   current = max(newest meta.version ever put, highest version given to advance())
 * is freed instead of handed out, counts in `skipped` and the metric
 * `buffer.skipped`; get then goes on with the next record (and waits again if
 * none is left). advance(v) raises `current` to v (never lowers it).
 *
 * release gives records back: the use count grows by one; a record that has
 * been handed out max_uses times is freed, any other is requeued (cooling
 * first when reuse_cooldown_ms > 0) with its priority recomputed. Releasing a
 * record twice is harmless (release clears tern_record.data).
 *
 * close: from then on put returns TERN_ECLOSED (a waiting put too); every
 * waiting get wakes. get still hands out what is waiting, cool-downs that have
 * ended included, and when nothing is, returns TERN_ECLOSED with *got = 0 at
 * once: it does not wait for records still cooling or handed out. Records
 * released after the close are requeued as before, so a consumer that keeps
 * calling get drains every use left.
 *
 * Counters (stats): held = records held in any state; capacity; put = records
 * accepted (put returned TERN_OK, including a new record dropped at once);
 * got = hand-outs, repeats included; dropped = records discarded to make room;
 * skipped = records discarded as stale. Every record put ends up held, freed
 * after its last use, dropped or skipped.
 *
 * Data structures, all O(log n) or better per record moved:
 *   - each record is one malloc'd node holding its links, heap positions,
 *     metadata and a copy of its bytes;
 *   - `ready`, the waiting records: an indexed binary max-heap in rank order
 *     (linear_decay), or an unordered array for uniform's O(1) random pick;
 *   - `evictable`, the waiting and cooling records: an indexed binary min-heap
 *     in eviction order (lowest rank / earliest put on top); positions stored
 *     in the nodes let a record leave either heap from anywhere;
 *   - `cooling`: a list in release order, which is cool-down end order since
 *     every record rests the same time;
 *   - `out`: the handed-out list, so destroy frees records never released.
 * One mutex guards it all; `ready_cv` wakes getters (a record became
 * eligible, a cool-down began, close), `room_cv` wakes putters (room or an
 * evictable record appeared, close). Timed waits use CLOCK_MONOTONIC so a
 * change of the wall clock neither shortens nor stretches a timeout; a getter
 * sleeps until the earlier of its deadline and the first cool-down end.
 * Copies and frees of record bytes happen outside the lock.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tern/buffer.h>
#include <tern/plugin.h>
#include <tern/rng.h>

#include "../common/buffer_common.h"
#include "heap.h"

static const tern_host *host;

enum { ST_WAITING, ST_COOLING, ST_OUT };

typedef struct node {
    qlink l;         /* in `cooling` or `out`; a waiting node is in neither */
    size_t rpos;     /* index in `ready` (waiting), else HEAP_NONE */
    size_t epos;     /* index in `evictable` (waiting, cooling), else HEAP_NONE */
    uint64_t seq;    /* put order: 0, 1, 2, ... */
    uint64_t due_ns; /* cooling: when the cool-down ends (CLOCK_MONOTONIC) */
    double prio;     /* linear_decay: version - decay * uses */
    uint32_t uses;   /* times handed out and released */
    int state;       /* ST_* */
    tern_record_meta meta; /* meta.size: the bytes of the caller's meta we kept */
    size_t len;
    /* aligned like malloc'd memory, so consumers may read the bytes in place */
    alignas(max_align_t) unsigned char data[];
} node;

typedef struct prio {
    tern_ctx *ctx;
    /* settings */
    uint64_t capacity;
    int uniform;
    double decay;
    uint32_t max_uses;
    uint64_t cooldown_ns;
    int64_t max_staleness; /* < 0: off */

    pthread_mutex_t lock;
    pthread_cond_t ready_cv; /* a record became eligible, a cool-down began, or closed */
    pthread_cond_t room_cv;  /* room or an evictable record appeared, or closed */
    heap ready;              /* waiting nodes in hand-out order (uniform: a bag) */
    heap evictable;          /* waiting and cooling nodes, next victim on top */
    qlink cooling;           /* cooling nodes, earliest cool-down end first */
    qlink out;               /* handed-out nodes */
    uint64_t held;           /* nodes in any state */
    uint64_t next_seq;
    int64_t current; /* max(newest version put, advance()); valid once have_current */
    int have_current;
    int closed;
    tern_rng rng; /* uniform's draws */

    uint64_t n_put, n_got, n_dropped, n_skipped;
} prio;

/* ---- order --------------------------------------------------------------- */

/* linear_decay rank: x before y (higher priority, then put earlier). */
static int ranks_above(const node *x, const node *y)
{
    return x->prio > y->prio || (x->prio == y->prio && x->seq < y->seq);
}

static int ready_above_linear(const void *x, const void *y) { return ranks_above(x, y); }
static int evict_above_linear(const void *x, const void *y) { return ranks_above(y, x); }

static int evict_above_uniform(const void *x, const void *y)
{
    return ((const node *)x)->seq < ((const node *)y)->seq;
}

static double priority_of(const prio *p, const node *x)
{
    return (double)x->meta.version - p->decay * (double)x->uses;
}

/* A uniform index in [0, n), n > 0, without modulo bias. */
static size_t draw_index(prio *p, size_t n)
{
    uint64_t range = (uint64_t)n;
    uint64_t floor = (uint64_t)(-range) % range; /* 2^64 mod n: values below it are biased */
    uint64_t r;
    do
        r = tern_rng_u64(&p->rng);
    while (r < floor);
    return (size_t)(r % range);
}

/* True when max_staleness is on and x lags more than it behind `current`. */
static int is_stale(const prio *p, const node *x)
{
    if (p->max_staleness < 0 || !p->have_current || x->meta.version >= p->current)
        return 0;
    /* current > version: their difference fits a uint64_t exactly */
    uint64_t lag = (uint64_t)p->current - (uint64_t)x->meta.version;
    return lag > (uint64_t)p->max_staleness;
}

static void raise_current(prio *p, int64_t version)
{
    if (!p->have_current || version > p->current) {
        p->current = version;
        p->have_current = 1;
    }
}

/* ---- waiting ------------------------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The deadline `timeout_ms` (> 0) from `now`, or UINT64_MAX (none) when it
 * lies beyond what a uint64_t of nanoseconds holds (centuries away). */
static uint64_t deadline_ns(uint64_t now, int64_t timeout_ms)
{
    if ((uint64_t)timeout_ms > (UINT64_MAX - 1 - now) / 1000000u)
        return UINT64_MAX;
    return now + (uint64_t)timeout_ms * 1000000u;
}

/* Wait once on `cv` (lock held) until woken or `until` (UINT64_MAX: no limit).
 * The caller re-checks its condition and its deadline after every return. */
static void wait_until(prio *p, pthread_cond_t *cv, uint64_t until)
{
    if (until == UINT64_MAX) {
        pthread_cond_wait(cv, &p->lock);
        return;
    }
    struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
    pthread_cond_timedwait(cv, &p->lock, &ts);
}

/* ---- create / destroy -------------------------------------------------- */

static int read_settings(tern_ctx *ctx, prio *p)
{
    int64_t capacity, max_uses, cooldown_ms, max_staleness = -1;
    double decay;
    const char *order;
    /* the core checked and defaulted these before create(); a failure here
     * left its own message, which names the key */
    int rc = host->get_int(ctx, "capacity", &capacity);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "priority", &order);
    if (rc == TERN_OK)
        rc = host->get_float(ctx, "decay", &decay);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "max_uses", &max_uses);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "reuse_cooldown_ms", &cooldown_ms);
    if (rc == TERN_OK) {
        rc = host->get_int(ctx, "max_staleness", &max_staleness);
        if (rc == TERN_ENOTFOUND) {
            max_staleness = -1; /* optional: absent means off */
            rc = TERN_OK;
        }
    }
    if (rc != TERN_OK)
        return rc;
    if (capacity < 1 || capacity > 1000000000)
        return host->setting_error(ctx, "capacity", "%lld is out of range; use 1 to 1000000000",
                                   (long long)capacity);
    /* the index in "linear_decay|uniform" is p->uniform */
    rc = buffer_setting_choice(host, ctx, "priority", order, "linear_decay|uniform", &p->uniform);
    if (rc != TERN_OK)
        return rc;
    if (!(decay >= 0 && decay <= 1e6))
        return host->setting_error(ctx, "decay", "%g is out of range; use 0 to 1000000", decay);
    if (max_uses < 1 || max_uses > 1000000)
        return host->setting_error(ctx, "max_uses", "%lld is out of range; use 1 to 1000000",
                                   (long long)max_uses);
    if (cooldown_ms < 0 || cooldown_ms > 1000000000)
        return host->setting_error(ctx, "reuse_cooldown_ms",
                                   "%lld is out of range; use 0 to 1000000000",
                                   (long long)cooldown_ms);
    if (max_staleness < -1 || max_staleness > 1000000000)
        return host->setting_error(ctx, "max_staleness",
                                   "%lld is out of range; use -1 (off) or 0 to 1000000000",
                                   (long long)max_staleness);
    p->capacity = (uint64_t)capacity;
    p->decay = decay;
    p->max_uses = (uint32_t)max_uses;
    p->cooldown_ns = (uint64_t)cooldown_ms * 1000000u;
    p->max_staleness = max_staleness;
    return TERN_OK;
}

static int prio_create(tern_ctx *ctx, void **state)
{
    prio *p = calloc(1, sizeof *p);
    if (!p)
        return host->fail(ctx, TERN_ENOMEM, "priority: out of memory creating the buffer");
    p->ctx = ctx;
    int rc = read_settings(ctx, p);
    if (rc == TERN_OK)
        rc = buffer_init_sync(host, ctx, "priority", &p->lock, &p->ready_cv, &p->room_cv);
    if (rc != TERN_OK) {
        free(p);
        return rc;
    }
    heap_init(&p->ready, offsetof(node, rpos), p->uniform ? NULL : ready_above_linear);
    heap_init(&p->evictable, offsetof(node, epos),
              p->uniform ? evict_above_uniform : evict_above_linear);
    list_init(&p->cooling);
    list_init(&p->out);
    tern_rng_seed(&p->rng, host->rng_seed(ctx, "priority"));
    *state = p;
    return TERN_OK;
}

static void prio_destroy(void *state)
{
    prio *p = state;
    if (!p)
        return;
    /* waiting and cooling nodes are all in `evictable`, handed-out ones in `out` */
    for (size_t i = 0; i < p->evictable.n; i++)
        free(heap_at(&p->evictable, i));
    list_free_all(&p->out); /* records a consumer never released */
    heap_free(&p->evictable);
    heap_free(&p->ready);
    buffer_destroy_sync(&p->lock, &p->ready_cv, &p->room_cv);
    free(p);
}

/* ---- put --------------------------------------------------------------- */

/* A node holding copies of meta (the part both sides know) and the bytes. */
static node *node_new(const void *data, size_t len, const tern_record_meta *meta)
{
    node *n = malloc(sizeof *n + len);
    if (!n)
        return NULL;
    memset(n, 0, sizeof *n);
    buffer_keep_meta(&n->meta, meta);
    n->len = len;
    if (len)
        memcpy(n->data, data, len);
    list_init(&n->l);
    n->rpos = n->epos = HEAP_NONE;
    n->state = ST_WAITING;
    return n;
}

/* Take a waiting or cooling node out of every structure (lock held). */
static void unlink_evictable(prio *p, node *x)
{
    heap_remove(&p->evictable, x);
    if (x->state == ST_WAITING)
        heap_remove(&p->ready, x);
    else
        list_unlink(&x->l); /* cooling */
    p->held--;
}

/* Wait (lock held) until the buffer has room or an evictable record, closes,
 * or the timeout expires: TERN_OK, TERN_ECLOSED or TERN_ETIMEDOUT. */
static int wait_for_room(prio *p, int64_t timeout_ms)
{
    uint64_t dl = timeout_ms > 0 ? deadline_ns(now_ns(), timeout_ms) : UINT64_MAX;
    for (;;) {
        if (p->closed)
            return TERN_ECLOSED;
        if (p->held < p->capacity || p->evictable.n > 0)
            return TERN_OK;
        if (timeout_ms == 0 || (timeout_ms > 0 && now_ns() >= dl))
            return TERN_ETIMEDOUT;
        wait_until(p, &p->room_cv, dl);
    }
}

/* Store x (lock held, room for one more node reserved in both heaps).
 * Returns the node discarded to make room (maybe x itself) or NULL. */
static node *store(prio *p, node *x)
{
    x->seq = p->next_seq++;
    raise_current(p, x->meta.version);
    x->prio = priority_of(p, x);
    p->n_put++;
    node *victim = NULL;
    if (p->held >= p->capacity) {
        /* wait_for_room saw an evictable node */
        node *v = heap_at(&p->evictable, 0);
        p->n_dropped++;
        if (!p->uniform && !ranks_above(x, v))
            return x; /* the new record ranks below everything evictable */
        unlink_evictable(p, v);
        victim = v;
    }
    x->state = ST_WAITING;
    heap_push(&p->ready, x);
    heap_push(&p->evictable, x);
    p->held++;
    pthread_cond_signal(&p->ready_cv);
    return victim;
}

static int prio_put(void *state, const void *data, size_t len, const tern_record_meta *meta,
                    int64_t timeout_ms)
{
    prio *p = state;
    int rc = buffer_check_put_args(host, p->ctx, "priority", data, len, meta,
                                   SIZE_MAX - sizeof(node));
    if (rc != TERN_OK)
        return rc;
    /* copy before locking: the copy of a large record should not stall others */
    node *x = node_new(data, len, meta);
    if (!x)
        return buffer_fail_copy(host, p->ctx, "priority", len, (unsigned long long)meta->id);
    node *victim = NULL;
    pthread_mutex_lock(&p->lock);
    rc = wait_for_room(p, timeout_ms);
    /* room in the heaps for every node held, so requeueing never allocates */
    if (rc == TERN_OK && (heap_reserve(&p->ready, p->held + 1) != 0 ||
                          heap_reserve(&p->evictable, p->held + 1) != 0))
        rc = TERN_ENOMEM;
    if (rc == TERN_OK) {
        victim = store(p, x);
        /* pass the wakeup on: another putter may go ahead too */
        if (p->held < p->capacity || p->evictable.n > 0)
            pthread_cond_signal(&p->room_cv);
    }
    pthread_mutex_unlock(&p->lock);
    if (victim) {
        free(victim);
        host->metric(p->ctx, "dropped", 1);
    }
    if (rc == TERN_OK)
        return TERN_OK;
    unsigned long long id = (unsigned long long)meta->id;
    free(x);
    if (rc == TERN_ENOMEM)
        return host->fail(p->ctx, TERN_ENOMEM,
                          "priority: out of memory indexing record %llu; lower capacity", id);
    if (rc == TERN_ECLOSED)
        return buffer_fail_put_closed(host, p->ctx, "priority", id);
    return host->fail(p->ctx, TERN_ETIMEDOUT,
                      "priority: put of record %llu timed out after %lld ms with all %llu "
                      "records of capacity handed out and none released; raise capacity or "
                      "the timeout, or have consumers release records sooner",
                      id, (long long)timeout_ms, (unsigned long long)p->capacity);
}

/* ---- get / release ----------------------------------------------------- */

/* Move cooling nodes whose cool-down has ended to `ready` (lock held). */
static void promote_cooled(prio *p, uint64_t now)
{
    while (!list_empty(&p->cooling)) {
        node *x = (node *)p->cooling.next;
        if (x->due_ns > now)
            break;
        list_unlink(&x->l);
        x->state = ST_WAITING;
        heap_push(&p->ready, x); /* stays in `evictable` */
    }
}

/* Hand out up to `want` waiting nodes, best first (lock held); stale ones go
 * to `gone` instead. Returns the count handed out. */
static size_t hand_out(prio *p, tern_record *out, size_t want, qlink *gone, size_t *skipped)
{
    size_t n = 0;
    while (n < want && p->ready.n > 0) {
        node *x = heap_at(&p->ready, p->uniform ? draw_index(p, p->ready.n) : 0);
        heap_remove(&p->ready, x);
        heap_remove(&p->evictable, x);
        if (is_stale(p, x)) {
            p->held--;
            p->n_skipped++;
            (*skipped)++;
            list_push_back(gone, &x->l);
            pthread_cond_signal(&p->room_cv); /* one slot freed */
            continue;
        }
        x->state = ST_OUT;
        list_push_back(&p->out, &x->l);
        buffer_fill_record(&out[n++], &x->meta, x->data, x->len, x->uses);
    }
    p->n_got += n;
    return n;
}

static int prio_get(void *state, tern_record *out, size_t want, size_t *got, int64_t timeout_ms)
{
    prio *p = state;
    int rc = buffer_check_get_args(host, p->ctx, "priority", out, want, got);
    if (rc != TERN_OK)
        return rc;
    qlink gone;
    list_init(&gone);
    size_t n = 0, skipped = 0;
    pthread_mutex_lock(&p->lock);
    uint64_t now = now_ns();
    uint64_t dl = timeout_ms > 0 ? deadline_ns(now, timeout_ms) : UINT64_MAX;
    for (;;) {
        promote_cooled(p, now);
        n = hand_out(p, out, want, &gone, &skipped);
        if (n) {
            rc = TERN_OK;
            if (p->ready.n > 0)
                pthread_cond_signal(&p->ready_cv); /* records left for another getter */
            break;
        }
        if (p->closed) {
            rc = TERN_ECLOSED;
            break;
        }
        if (timeout_ms == 0 || (timeout_ms > 0 && now >= dl)) {
            rc = TERN_ETIMEDOUT;
            break;
        }
        /* sleep until the deadline or the first cool-down end, if earlier */
        uint64_t until = timeout_ms > 0 ? dl : UINT64_MAX;
        if (!list_empty(&p->cooling)) {
            uint64_t due = ((node *)p->cooling.next)->due_ns;
            if (due < until)
                until = due;
        }
        wait_until(p, &p->ready_cv, until);
        now = now_ns();
    }
    pthread_mutex_unlock(&p->lock);
    list_free_all(&gone); /* free outside the lock */
    for (size_t i = 0; i < skipped; i++)
        host->metric(p->ctx, "skipped", 1);
    *got = n;
    if (rc == TERN_ECLOSED)
        return host->fail(p->ctx, TERN_ECLOSED,
                          "priority: get on a closed buffer with no record eligible; stop "
                          "consuming");
    if (rc == TERN_ETIMEDOUT)
        return host->fail(p->ctx, TERN_ETIMEDOUT,
                          "priority: get found no eligible record within %lld ms; producers "
                          "are slower than the timeout (or records are cooling down): raise "
                          "it, or pass -1 to wait without limit", (long long)timeout_ms);
    return TERN_OK;
}

static void prio_release(void *state, tern_record *recs, size_t n)
{
    prio *p = state;
    if (!recs || n == 0)
        return; /* nothing to give back; release cannot report an error */
    qlink gone;
    list_init(&gone);
    size_t back = 0, requeued = 0;
    int cooling_began = 0;
    uint64_t now = 0;
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < n; i++) {
        if (!recs[i].data)
            continue; /* already released (we clear data below) or never handed out */
        /* data points into the node get() filled it from (the buffer's own
         * memory, const only to the consumer): step back to the node */
        node *x = (node *)((unsigned char *)recs[i].data - offsetof(node, data));
        recs[i].data = NULL;
        recs[i].len = 0;
        if (x->state != ST_OUT)
            continue; /* a copy of a record already released */
        list_unlink(&x->l);
        x->uses++;
        back++;
        if (x->uses >= p->max_uses) {
            p->held--;
            list_push_back(&gone, &x->l);
            continue;
        }
        x->prio = priority_of(p, x);
        heap_push(&p->evictable, x);
        if (p->cooldown_ns > 0) {
            if (!now)
                now = now_ns(); /* read under the lock: `cooling` stays in due order */
            x->due_ns = now + p->cooldown_ns;
            x->state = ST_COOLING;
            cooling_began |= list_empty(&p->cooling);
            list_push_back(&p->cooling, &x->l);
        } else {
            x->state = ST_WAITING;
            heap_push(&p->ready, x);
            requeued++;
        }
    }
    /* each record given back made room or became evictable: one putter each */
    if (back == 1)
        pthread_cond_signal(&p->room_cv);
    else if (back > 1)
        pthread_cond_broadcast(&p->room_cv);
    /* a first cool-down changes every waiting getter's wake-up time */
    if (requeued > 1 || cooling_began)
        pthread_cond_broadcast(&p->ready_cv);
    else if (requeued == 1)
        pthread_cond_signal(&p->ready_cv);
    pthread_mutex_unlock(&p->lock);
    list_free_all(&gone); /* free outside the lock */
}

/* ---- close / stats / advance ------------------------------------------- */

static void prio_close(void *state)
{
    prio *p = state;
    buffer_close(&p->lock, &p->closed, &p->ready_cv, &p->room_cv);
}

static int prio_stats(void *state, tern_buffer_stats *out)
{
    prio *p = state;
    int rc = buffer_check_stats_out(host, p->ctx, "priority", out);
    if (rc != TERN_OK)
        return rc;
    pthread_mutex_lock(&p->lock);
    tern_buffer_stats v = {.held = p->held, .capacity = p->capacity, .put = p->n_put,
                           .got = p->n_got, .dropped = p->n_dropped, .skipped = p->n_skipped};
    pthread_mutex_unlock(&p->lock);
    buffer_write_stats(out, &v);
    return TERN_OK;
}

static void prio_advance(void *state, int64_t version)
{
    prio *p = state;
    pthread_mutex_lock(&p->lock);
    raise_current(p, version);
    pthread_mutex_unlock(&p->lock);
}

/* ---- descriptor -------------------------------------------------------- */

static const tern_buffer_ops prio_ops = {
    .size = sizeof prio_ops,
    .create = prio_create,
    .destroy = prio_destroy,
    .put = prio_put,
    .get = prio_get,
    .release = prio_release,
    .close = prio_close,
    .stats = prio_stats,
    .advance = prio_advance,
};

static const tern_setting_spec prio_settings[] = {
    TERN_SETTING(.name = "capacity", .type = TERN_SETTING_INT, .def = "1024", .min = 1,
                 .max = 1e9, .aka = "size|max_size|max_records|cap",
                 .doc = "most records held at once: waiting, cooling down and handed out"),
    TERN_SETTING(.name = "priority", .type = TERN_SETTING_STRING, .def = "\"linear_decay\"",
                 .choices = "linear_decay|uniform",
                 .aka = "priority_fn|priority_function|order|policy|strategy|sampling",
                 .doc = "hand-out order: linear_decay = highest meta.version - decay * "
                        "use_count first (ties: put earlier first), uniform = at random"),
    TERN_SETTING(.name = "decay", .type = TERN_SETTING_FLOAT, .def = "0.1", .min = 0, .max = 1e6,
                 .aka = "decay_rate|use_decay|priority_decay",
                 .doc = "linear_decay: priority lost per use, in versions"),
    TERN_SETTING(.name = "max_uses", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 1e6,
                 .aka = "max_use|max_reuse|reuse|uses|max_use_count",
                 .doc = "times a record may be handed out; it is freed when the last use is "
                        "released"),
    TERN_SETTING(.name = "reuse_cooldown_ms", .type = TERN_SETTING_INT, .def = "0", .min = 0,
                 .max = 1e9, .aka = "cooldown_ms|cooldown|reuse_cooldown|reuse_delay_ms",
                 .doc = "milliseconds a released record with uses left rests before it can "
                        "be handed out again"),
    TERN_SETTING(.name = "max_staleness", .type = TERN_SETTING_INT, .def = "-1", .min = -1,
                 .max = 1e9, .aka = "staleness|max_age|staleness_limit|max_version_lag",
                 .doc = "-1 = off; else a record whose meta.version is more than this below "
                        "the newest version put or advanced to is discarded, not handed out"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor prio_descriptor = {
    .size = sizeof prio_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_BUFFER,
    .name = "priority",
    .version = "1.0.0",
    .summary = "bounded replay buffer: records reused up to max_uses, best priority first",
    .caps = TERN_CAP_THREAD_SAFE | TERN_CAP_REPLAY,
    .ops = &prio_ops,
    .settings = prio_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &prio_descriptor;
}
