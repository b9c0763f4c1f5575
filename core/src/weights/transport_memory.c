/* transport_memory.c: the "memory" weight transport (transport.h): host
 * snapshots shared by the threads of one process.
 *
 * Published versions sit in a list, oldest first, until every explorer has
 * moved past them. A pure double buffer (front read, back written) is not
 * enough under a fixed schedule with an offset: with interval I and offset O
 * an explorer may still need a version ceil(O / I) publishes older than the
 * newest. So the list holds what may still be asked for, and a forgotten
 * snapshot's memory is kept as the spare the next publish copies into:
 * steady state is two buffers (the one explorers read, the one being
 * written) with no allocation per publish. */
#include <pthread.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/errmsg.h"
#include "weights/transport.h"
#include "weights/weights.h"

typedef struct node {
    tern_snapshot *s;
    int64_t version;
    struct node *next;
} node;

typedef struct memory {
    pthread_mutex_t lock;
    pthread_cond_t published;
    node *head;            /* oldest first */
    tern_snapshot *spare;  /* a forgotten snapshot's memory, reused by publish */
    int64_t newest;
    int closed;
} memory;

void *tern_transport_memory_new(void)
{
    memory *m = calloc(1, sizeof *m);
    if (!m) {
        tern_errorf(TERN_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->published, NULL);
    m->newest = -1;
    return m;
}

static void memory_destroy(void *impl)
{
    memory *m = impl;
    if (!m)
        return;
    for (node *n = m->head, *next; n; n = next) {
        next = n->next;
        tern_snapshot_free(n->s);
        free(n);
    }
    tern_snapshot_free(m->spare);
    pthread_cond_destroy(&m->published);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static int memory_publish(void *impl, const tern_tensor *t, size_t n_t, int64_t version)
{
    memory *m = impl;
    node *n = calloc(1, sizeof *n);
    if (!n)
        return tern_errorf(TERN_ENOMEM, "out of memory publishing weights");
    pthread_mutex_lock(&m->lock);
    if (version <= m->newest) {
        int64_t newest = m->newest;
        pthread_mutex_unlock(&m->lock);
        free(n);
        return tern_errorf(TERN_EINVAL, "weight version %lld published after %lld",
                           (long long)version, (long long)newest);
    }
    tern_snapshot *s = m->spare;
    m->spare = NULL;
    pthread_mutex_unlock(&m->lock);

    /* the copy happens outside the lock: loaders of older versions go on */
    int rc = tern_snapshot_retake(&s, t, n_t, version);
    if (rc != TERN_OK) {
        free(n);
        return rc;
    }
    n->s = s;
    n->version = version;
    pthread_mutex_lock(&m->lock);
    node **tail = &m->head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = n;
    m->newest = version;
    pthread_cond_broadcast(&m->published);
    pthread_mutex_unlock(&m->lock);
    return TERN_OK;
}

static int memory_load(void *impl, const tern_tensor *t, size_t n_t, int64_t version,
                       int64_t *loaded, uint64_t *waited_ns)
{
    memory *m = impl;
    /* only the time the version was not there is a wait, not the lock */
    uint64_t t0 = 0;
    pthread_mutex_lock(&m->lock);
    while (!m->closed && (version < 0 ? m->newest < 0 : m->newest < version)) {
        if (!t0)
            t0 = tern_mono_ns();
        pthread_cond_wait(&m->published, &m->lock);
    }
    if (waited_ns)
        *waited_ns = t0 ? tern_mono_ns() - t0 : 0;
    if (m->closed) {
        pthread_mutex_unlock(&m->lock);
        return TERN_ECLOSED;
    }
    const node *n = m->head;
    if (version < 0)
        while (n && n->next)
            n = n->next;
    else
        while (n && n->version != version)
            n = n->next;
    if (!n) {
        pthread_mutex_unlock(&m->lock);
        return tern_errorf(TERN_EINVAL, "weight version %lld was asked for after it was freed",
                           (long long)version);
    }
    /* Copy under the lock: a snapshot is freed only by forget_before, which
     * the loading role itself calls, so this is short and uncontended. */
    int rc = tern_snapshot_apply(n->s, t, n_t);
    if (rc == TERN_OK && loaded)
        *loaded = n->version;
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static void memory_forget_before(void *impl, int64_t version)
{
    memory *m = impl;
    pthread_mutex_lock(&m->lock);
    /* the newest stays, whatever is asked: an explorer may still need it */
    while (m->head && m->head->next && m->head->version < version) {
        node *n = m->head;
        m->head = n->next;
        if (!m->spare) {
            m->spare = n->s;
            n->s = NULL;
        }
        tern_snapshot_free(n->s);
        free(n);
    }
    pthread_mutex_unlock(&m->lock);
}

static int64_t memory_newest(void *impl)
{
    memory *m = impl;
    pthread_mutex_lock(&m->lock);
    int64_t v = m->newest;
    pthread_mutex_unlock(&m->lock);
    return v;
}

static void memory_close(void *impl)
{
    memory *m = impl;
    pthread_mutex_lock(&m->lock);
    m->closed = 1;
    pthread_cond_broadcast(&m->published);
    pthread_mutex_unlock(&m->lock);
}

const tern_store_transport tern_transport_memory = {
    .method = "memory",
    .publish = memory_publish,
    .load = memory_load,
    .forget_before = memory_forget_before,
    .newest = memory_newest,
    .close = memory_close,
    .destroy = memory_destroy,
};
