/* weights.c: snapshots and the weight store (see weights.h). */
#include "weights.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errmsg.h"

typedef struct snap_tensor {
    char *name;
    size_t bytes;
    size_t offset; /* into data */
} snap_tensor;

struct tern_snapshot {
    int64_t version;
    snap_tensor *t;
    size_t n;
    unsigned char *data;
    size_t bytes;
    tern_snapshot *next; /* in the store, oldest first */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int model_tensors(const tern_model_ops *ops, void *model, const tern_tensor **t, size_t *n)
{
    tern_error_clear();
    int rc = ops->tensors(model, t, n);
    if (rc != TERN_OK) {
        const char *m = tern_error_message();
        return tern_errorf(rc, "the model cannot list its tensors: %s",
                           *m ? m : "it gave no reason");
    }
    return TERN_OK;
}

void tern_snapshot_free(tern_snapshot *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->t[i].name);
    free(s->t);
    free(s->data);
    free(s);
}

tern_snapshot *tern_snapshot_take(const tern_model_ops *ops, void *model, int64_t version)
{
    const tern_tensor *t;
    size_t n;
    if (model_tensors(ops, model, &t, &n) != TERN_OK)
        return NULL;
    tern_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        goto oom;
    s->version = version;
    s->t = calloc(n ? n : 1, sizeof *s->t);
    if (!s->t)
        goto oom;
    for (size_t i = 0; i < n; i++)
        s->bytes += t[i].bytes;
    s->data = malloc(s->bytes ? s->bytes : 1);
    if (!s->data)
        goto oom;
    size_t off = 0;
    for (size_t i = 0; i < n; i++, s->n++) {
        s->t[i].name = strdup(t[i].name ? t[i].name : "");
        if (!s->t[i].name)
            goto oom;
        s->t[i].bytes = t[i].bytes;
        s->t[i].offset = off;
        memcpy(s->data + off, t[i].data, t[i].bytes);
        off += t[i].bytes;
    }
    return s;
oom:
    tern_snapshot_free(s);
    tern_errorf(TERN_ENOMEM, "out of memory copying the model's weights");
    return NULL;
}

int tern_snapshot_apply(const tern_snapshot *s, const tern_model_ops *ops, void *model)
{
    const tern_tensor *t;
    size_t n;
    int rc = model_tensors(ops, model, &t, &n);
    if (rc != TERN_OK)
        return rc;
    if (n != s->n)
        return tern_errorf(TERN_EINVAL, "weights of %zu tensors cannot be loaded into a model "
                           "of %zu tensors: both roles must use the same model settings", s->n, n);
    for (size_t i = 0; i < n; i++)
        if (t[i].bytes != s->t[i].bytes || strcmp(t[i].name ? t[i].name : "", s->t[i].name))
            return tern_errorf(TERN_EINVAL, "tensor %zu differs: '%s' (%zu bytes) published, "
                               "'%s' (%zu bytes) in the receiving model", i, s->t[i].name,
                               s->t[i].bytes, t[i].name ? t[i].name : "", t[i].bytes);
    for (size_t i = 0; i < n; i++)
        memcpy(t[i].data, s->data + s->t[i].offset, t[i].bytes);
    return TERN_OK;
}

int64_t tern_snapshot_version(const tern_snapshot *s) { return s->version; }

int tern_weights_copy(const tern_model_ops *ops, void *from, void *to)
{
    tern_snapshot *s = tern_snapshot_take(ops, from, 0);
    if (!s)
        return TERN_ENOMEM;
    int rc = tern_snapshot_apply(s, ops, to);
    tern_snapshot_free(s);
    return rc;
}

struct tern_weight_store {
    pthread_mutex_t lock;
    pthread_cond_t published;
    tern_snapshot *head; /* oldest first */
    int64_t newest;
    int closed;
};

tern_weight_store *tern_weights_new(void)
{
    tern_weight_store *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->published, NULL);
    w->newest = -1;
    return w;
}

void tern_weights_free(tern_weight_store *w)
{
    if (!w)
        return;
    for (tern_snapshot *s = w->head, *next; s; s = next) {
        next = s->next;
        tern_snapshot_free(s);
    }
    pthread_cond_destroy(&w->published);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

int tern_weights_publish(tern_weight_store *w, const tern_model_ops *ops, void *model,
                         int64_t version)
{
    tern_snapshot *s = tern_snapshot_take(ops, model, version);
    if (!s)
        return TERN_ENOMEM;
    pthread_mutex_lock(&w->lock);
    if (version <= w->newest) {
        pthread_mutex_unlock(&w->lock);
        tern_snapshot_free(s);
        return tern_errorf(TERN_EINVAL, "weight version %lld published after %lld",
                           (long long)version, (long long)w->newest);
    }
    tern_snapshot **tail = &w->head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = s;
    w->newest = version;
    pthread_cond_broadcast(&w->published);
    pthread_mutex_unlock(&w->lock);
    return TERN_OK;
}

int tern_weights_load(tern_weight_store *w, const tern_model_ops *ops, void *model,
                      int64_t version, int64_t *loaded, uint64_t *waited_ns)
{
    uint64_t t0 = now_ns();
    pthread_mutex_lock(&w->lock);
    while (!w->closed && (version < 0 ? w->newest < 0 : w->newest < version))
        pthread_cond_wait(&w->published, &w->lock);
    if (waited_ns)
        *waited_ns = now_ns() - t0;
    if (w->closed) {
        pthread_mutex_unlock(&w->lock);
        return TERN_ECLOSED;
    }
    const tern_snapshot *s = w->head;
    if (version < 0)
        while (s && s->next)
            s = s->next;
    else
        while (s && s->version != version)
            s = s->next;
    if (!s) {
        pthread_mutex_unlock(&w->lock);
        return tern_errorf(TERN_EINVAL, "weight version %lld was asked for after it was freed",
                           (long long)version);
    }
    /* Copy under the lock: a snapshot is freed only by forget_before, which
     * the loading role itself calls, so this is short and uncontended. */
    int rc = tern_snapshot_apply(s, ops, model);
    if (rc == TERN_OK && loaded)
        *loaded = s->version;
    pthread_mutex_unlock(&w->lock);
    return rc;
}

void tern_weights_forget_before(tern_weight_store *w, int64_t version)
{
    pthread_mutex_lock(&w->lock);
    /* the newest stays, whatever is asked: an explorer may still need it */
    while (w->head && w->head->next && w->head->version < version) {
        tern_snapshot *s = w->head;
        w->head = s->next;
        tern_snapshot_free(s);
    }
    pthread_mutex_unlock(&w->lock);
}

int64_t tern_weights_newest(tern_weight_store *w)
{
    pthread_mutex_lock(&w->lock);
    int64_t v = w->newest;
    pthread_mutex_unlock(&w->lock);
    return v;
}

void tern_weights_close(tern_weight_store *w)
{
    pthread_mutex_lock(&w->lock);
    w->closed = 1;
    pthread_cond_broadcast(&w->published);
    pthread_mutex_unlock(&w->lock);
}
