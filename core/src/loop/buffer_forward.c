/* buffer_forward.c: the trainer rank's buffer, a forwarder to the master's
 * (see ranks.h). The buffer plugin stays in the master's process, so any
 * buffer plugin works across ranks, a durable one keeps its file in the run
 * directory, and the master's ledger sees every group taken.
 *
 * An ask (TERN_TAG_BUFFER_ASK) is [u32 op][fields]:
 *   GET      [u32 want][i64 timeout_ms]   answered
 *   ADVANCE  [i64 version]                not answered
 *   STATS    []                           answered
 * A GET's answer (TERN_TAG_BUFFER_ANSWER) is [i32 status][u32 got] then per
 * record [u64 id][i64 version][i64 batch][u32 use_count][u64 len][len bytes],
 * or, for a failure, [i32 status][the message's text]. The master copies the
 * records into the answer and releases them at once: the trainer's own
 * release (after it decoded them) has nothing left to give back. Integers
 * are in the ranks' common byte order (the ranks of a job are alike). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "loop/ranks.h"

#ifdef TERN_HAVE_MPI

enum { ASK_GET = 1, ASK_ADVANCE = 2, ASK_STATS = 3 };

typedef struct bytes {
    unsigned char *p;
    size_t n, cap;
    int oom;
} bytes;

static void put(bytes *b, const void *v, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, v, n);
    b->n += n;
}

/* Read n bytes at *at of [p, p+len): 0 when they are not all there. */
static int take(const unsigned char *p, size_t len, size_t *at, void *v, size_t n)
{
    if (len - *at < n)
        return 0;
    memcpy(v, p + *at, n);
    *at += n;
    return 1;
}

/* ---- the trainer's side ------------------------------------------------------------ */

typedef struct forward {
    tern_link *link;
    atomic_int closed;
    void *answer;        /* the last GET's answer: the records point into it */
} forward;

void *tern_buffer_forward_new(tern_link *link)
{
    forward *f = calloc(1, sizeof *f);
    if (!f) {
        tern_errorf(TERN_ENOMEM, "out of memory");
        return NULL;
    }
    f->link = link;
    return f;
}

static void fwd_destroy(void *state)
{
    forward *f = state;
    free(f->answer);
    free(f);
}

static int fwd_put(void *state, const void *data, size_t len, const tern_record_meta *meta,
                   int64_t timeout_ms)
{
    (void)state, (void)data, (void)len, (void)meta, (void)timeout_ms;
    return tern_errorf(TERN_EINVAL, "the trainer rank's buffer takes no puts: the master puts "
                       "(a bug)");
}

/* Send an ask and wait for its answer (the master answers within the ask's
 * own timeout; the link fails if the master's rank is gone). */
static int ask(forward *f, const bytes *q, void **answer, size_t *len)
{
    if (q->oom)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    int rc = tern_link_send(f->link, 0, TERN_TAG_BUFFER_ASK, q->p, q->n);
    if (rc != TERN_OK)
        return rc;
    for (;;) {
        rc = tern_link_recv(f->link, TERN_TAG_BUFFER_ANSWER, 200, answer, len, NULL);
        if (rc != TERN_ETIMEDOUT)
            return rc;
        if (atomic_load(&f->closed))
            return TERN_ECLOSED; /* its answer, if any, is dropped with the link */
    }
}

static int failure(const unsigned char *p, size_t len, int32_t status)
{
    size_t at = sizeof status;
    return tern_errorf(status < 0 ? status : TERN_ERR, "the master's buffer: %.*s",
                       (int)(len - at), (const char *)p + at);
}

static int fwd_get(void *state, tern_record *out, size_t want, size_t *got, int64_t timeout_ms)
{
    forward *f = state;
    *got = 0;
    if (atomic_load(&f->closed))
        return TERN_ECLOSED;
    free(f->answer);
    f->answer = NULL;
    bytes q = {0};
    uint32_t op = ASK_GET, w = (uint32_t)want;
    put(&q, &op, sizeof op);
    put(&q, &w, sizeof w);
    put(&q, &timeout_ms, sizeof timeout_ms);
    void *a = NULL;
    size_t len = 0;
    int rc = ask(f, &q, &a, &len);
    free(q.p);
    if (rc != TERN_OK)
        return rc;
    f->answer = a;
    const unsigned char *p = a;
    size_t at = 0;
    int32_t status = 0;
    uint32_t n = 0;
    if (!take(p, len, &at, &status, sizeof status))
        return tern_errorf(TERN_EINVAL, "the master's buffer answered %zu bytes (a bug)", len);
    if (status != TERN_OK)
        return status == TERN_ETIMEDOUT || status == TERN_ECLOSED ? status
                                                                  : failure(p, len, status);
    if (!take(p, len, &at, &n, sizeof n) || n > want)
        return tern_errorf(TERN_EINVAL, "the master's buffer answered a bad count (a bug)");
    for (uint32_t i = 0; i < n; i++) {
        tern_record *r = &out[i];
        uint64_t rlen = 0;
        r->meta = (tern_record_meta){.size = sizeof r->meta};
        if (!take(p, len, &at, &r->meta.id, sizeof r->meta.id) ||
            !take(p, len, &at, &r->meta.version, sizeof r->meta.version) ||
            !take(p, len, &at, &r->meta.batch, sizeof r->meta.batch) ||
            !take(p, len, &at, &r->use_count, sizeof r->use_count) ||
            !take(p, len, &at, &rlen, sizeof rlen) || len - at < rlen)
            return tern_errorf(TERN_EINVAL, "the master's buffer answered a cut record (a bug)");
        r->data = p + at;
        r->len = (size_t)rlen;
        at += (size_t)rlen;
    }
    *got = n;
    return TERN_OK;
}

static void fwd_release(void *state, tern_record *recs, size_t n)
{
    (void)recs, (void)n;
    forward *f = state;
    free(f->answer);
    f->answer = NULL;
}

static void fwd_close(void *state)
{
    forward *f = state;
    atomic_store(&f->closed, 1);
}

static int fwd_stats(void *state, tern_buffer_stats *out)
{
    forward *f = state;
    bytes q = {0};
    uint32_t op = ASK_STATS;
    put(&q, &op, sizeof op);
    void *a = NULL;
    size_t len = 0;
    int rc = ask(f, &q, &a, &len);
    free(q.p);
    if (rc != TERN_OK)
        return rc;
    const unsigned char *p = a;
    size_t at = 0;
    int32_t status = 0;
    tern_buffer_stats st;
    if (!take(p, len, &at, &status, sizeof status))
        rc = tern_errorf(TERN_EINVAL, "the master's buffer answered %zu bytes (a bug)", len);
    else if (status != TERN_OK)
        rc = failure(p, len, status);
    else if (!take(p, len, &at, &st, sizeof st))
        rc = tern_errorf(TERN_EINVAL, "the master's buffer answered short stats (a bug)");
    else
        memcpy(out, &st, out->size < sizeof st ? out->size : sizeof st);
    free(a);
    return rc;
}

static void fwd_advance(void *state, int64_t version)
{
    forward *f = state;
    bytes q = {0};
    uint32_t op = ASK_ADVANCE;
    put(&q, &op, sizeof op);
    put(&q, &version, sizeof version);
    if (!q.oom)
        tern_link_send(f->link, 0, TERN_TAG_BUFFER_ASK, q.p, q.n);
    free(q.p);
}

const tern_buffer_ops tern_buffer_forward_ops = {
    .size = sizeof(tern_buffer_ops),
    .destroy = fwd_destroy,
    .put = fwd_put,
    .get = fwd_get,
    .release = fwd_release,
    .close = fwd_close,
    .stats = fwd_stats,
    .advance = fwd_advance,
};

/* ---- the master's side ------------------------------------------------------------- */

static int answer_failure(tern_run *run, int32_t status)
{
    bytes a = {0};
    put(&a, &status, sizeof status);
    const char *m = tern_error_message();
    put(&a, m, strlen(m));
    int rc = a.oom ? tern_errorf(TERN_ENOMEM, "out of memory")
                   : tern_link_send(run->ranks->link, TERN_RANK_TRAINER_AT,
                                    TERN_TAG_BUFFER_ANSWER, a.p, a.n);
    free(a.p);
    return rc;
}

static int serve_get(tern_run *run, uint32_t want, int64_t timeout_ms)
{
    if (want == 0 || want > 65536)
        return tern_errorf(TERN_EINVAL, "the trainer rank asked for %u records (a bug)", want);
    tern_record *recs = calloc(want, sizeof *recs);
    if (!recs)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < want; i++)
        recs[i].size = sizeof recs[i];
    size_t got = 0;
    tern_error_clear();
    int rc = run->buffer_ops->get(run->buffer, recs, want, &got, timeout_ms);
    if (rc != TERN_OK) {
        free(recs);
        int32_t st = rc;
        return answer_failure(run, st);
    }
    bytes a = {0};
    int32_t status = TERN_OK;
    uint32_t n = (uint32_t)got;
    put(&a, &status, sizeof status);
    put(&a, &n, sizeof n);
    for (size_t i = 0; i < got; i++) {
        const tern_record *r = &recs[i];
        uint64_t len = r->len;
        put(&a, &r->meta.id, sizeof r->meta.id);
        put(&a, &r->meta.version, sizeof r->meta.version);
        put(&a, &r->meta.batch, sizeof r->meta.batch);
        put(&a, &r->use_count, sizeof r->use_count);
        put(&a, &len, sizeof len);
        put(&a, r->data, r->len);
    }
    run->buffer_ops->release(run->buffer, recs, got);
    free(recs);
    if (a.oom) {
        free(a.p);
        return tern_errorf(TERN_ENOMEM, "out of memory answering the trainer rank");
    }
    rc = tern_link_send(run->ranks->link, TERN_RANK_TRAINER_AT, TERN_TAG_BUFFER_ANSWER, a.p, a.n);
    free(a.p);
    return rc;
}

int tern_ranks_serve_buffer(tern_run *run, const void *msg, size_t len)
{
    const unsigned char *p = msg;
    size_t at = 0;
    uint32_t op = 0;
    if (!take(p, len, &at, &op, sizeof op))
        return tern_errorf(TERN_EINVAL, "an empty ask from the trainer rank (a bug)");
    if (op == ASK_GET) {
        uint32_t want = 0;
        int64_t timeout_ms = 0;
        if (!take(p, len, &at, &want, sizeof want) ||
            !take(p, len, &at, &timeout_ms, sizeof timeout_ms))
            return tern_errorf(TERN_EINVAL, "a cut ask from the trainer rank (a bug)");
        return serve_get(run, want, timeout_ms);
    }
    if (op == ASK_ADVANCE) {
        int64_t version = 0;
        if (!take(p, len, &at, &version, sizeof version))
            return tern_errorf(TERN_EINVAL, "a cut ask from the trainer rank (a bug)");
        if (TERN_HAS(run->buffer_ops, advance) && run->buffer_ops->advance)
            run->buffer_ops->advance(run->buffer, version);
        return TERN_OK;
    }
    if (op == ASK_STATS) {
        tern_buffer_stats st = {.size = sizeof st};
        tern_error_clear();
        int rc = run->buffer_ops->stats(run->buffer, &st);
        if (rc != TERN_OK)
            return answer_failure(run, rc);
        bytes a = {0};
        int32_t status = TERN_OK;
        put(&a, &status, sizeof status);
        put(&a, &st, sizeof st);
        rc = a.oom ? tern_errorf(TERN_ENOMEM, "out of memory")
                   : tern_link_send(run->ranks->link, TERN_RANK_TRAINER_AT,
                                    TERN_TAG_BUFFER_ANSWER, a.p, a.n);
        free(a.p);
        return rc;
    }
    return tern_errorf(TERN_EINVAL, "an ask %u from the trainer rank (a bug)", op);
}

#endif
