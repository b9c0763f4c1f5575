/* weights.c: snapshots and the weight store (see weights.h). */
#include "weights/weights.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "model/model.h"
#include "weights/transport.h"
#include "rundir/trace.h"

/* The tensors are kept as the model listed them (names copied, data
 * pointing into `data`), so a transport publishes a snapshot's list just as
 * it publishes a model's (a writer thread publishes from snapshots). */
struct tern_snapshot {
    int64_t version;
    tern_tensor *t;
    size_t n;
    unsigned char *data;
    size_t bytes;
};

void tern_snapshot_free(tern_snapshot *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free((char *)s->t[i].name);
    free(s->t);
    free(s->data);
    free(s);
}

tern_snapshot *tern_snapshot_take(const tern_tensor *t, size_t n, int64_t version)
{
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
        s->t[i] = t[i];
        s->t[i].size = sizeof s->t[i];
        s->t[i].name = strdup(t[i].name ? t[i].name : "");
        if (!s->t[i].name)
            goto oom;
        s->t[i].data = s->data + off;
        memcpy(s->data + off, t[i].data, t[i].bytes);
        off += t[i].bytes;
    }
    return s;
oom:
    tern_snapshot_free(s);
    tern_errorf(TERN_ENOMEM, "out of memory copying the model's weights");
    return NULL;
}

int tern_snapshot_apply(const tern_snapshot *s, const tern_tensor *t, size_t n)
{
    if (n != s->n)
        return tern_errorf(TERN_EINVAL, "weights of %zu tensors cannot be loaded into a model "
                           "of %zu tensors: both roles must use the same model settings", s->n, n);
    for (size_t i = 0; i < n; i++)
        if (t[i].bytes != s->t[i].bytes || strcmp(t[i].name ? t[i].name : "", s->t[i].name))
            return tern_errorf(TERN_EINVAL, "tensor %zu differs: '%s' (%zu bytes) published, "
                               "'%s' (%zu bytes) in the receiving model", i, s->t[i].name,
                               s->t[i].bytes, t[i].name ? t[i].name : "", t[i].bytes);
    for (size_t i = 0; i < n; i++)
        memcpy(t[i].data, s->t[i].data, t[i].bytes);
    return TERN_OK;
}

unsigned char *tern_snapshot_data(const tern_snapshot *s, size_t *bytes)
{
    *bytes = s->bytes;
    return s->data;
}

int64_t tern_snapshot_version(const tern_snapshot *s) { return s->version; }

void tern_snapshot_tensors(const tern_snapshot *s, const tern_tensor **t, size_t *n)
{
    *t = s->t;
    *n = s->n;
}

/* The tensors of a model: what snapshots and transports read and write. */
static int tensors_of(const tern_model *m, const tern_tensor **t, size_t *n)
{
    return tern_model_tensors(m, "the model cannot list its tensors", t, n);
}

tern_snapshot *tern_snapshot_of(const tern_model *m, int64_t version)
{
    const tern_tensor *t;
    size_t n;
    return tensors_of(m, &t, &n) == TERN_OK ? tern_snapshot_take(t, n, version) : NULL;
}

int tern_snapshot_into(const tern_snapshot *s, const tern_model *m)
{
    const tern_tensor *t;
    size_t n;
    int rc = tensors_of(m, &t, &n);
    return rc == TERN_OK ? tern_snapshot_apply(s, t, n) : rc;
}

int tern_weights_copy(const tern_model *from, const tern_model *to)
{
    tern_snapshot *s = tern_snapshot_of(from, 0);
    if (!s)
        return TERN_ENOMEM;
    int rc = tern_snapshot_into(s, to);
    tern_snapshot_free(s);
    return rc;
}

/* Copy `model` into `s` if its layout (names, sizes, dtypes, shapes: a
 * transport writes these) is the same; TERN_ENOTFOUND if not. */
static int snapshot_refill(tern_snapshot *s, const tern_tensor *t, size_t n, int64_t version)
{
    if (n != s->n)
        return TERN_ENOTFOUND;
    for (size_t i = 0; i < n; i++)
        if (t[i].bytes != s->t[i].bytes || strcmp(t[i].name ? t[i].name : "", s->t[i].name) ||
            t[i].dtype != s->t[i].dtype || t[i].ndim != s->t[i].ndim ||
            memcmp(t[i].shape, s->t[i].shape, sizeof t[i].shape) != 0)
            return TERN_ENOTFOUND;
    for (size_t i = 0; i < n; i++)
        memcpy(s->t[i].data, t[i].data, t[i].bytes);
    s->version = version;
    return TERN_OK;
}

int tern_snapshot_retake(tern_snapshot **s, const tern_tensor *t, size_t n, int64_t version)
{
    int rc = *s ? snapshot_refill(*s, t, n, version) : TERN_ENOTFOUND;
    if (rc == TERN_OK)
        return TERN_OK;
    tern_snapshot_free(*s);
    *s = NULL;
    if (rc != TERN_ENOTFOUND)
        return rc;
    *s = tern_snapshot_take(t, n, version);
    return *s ? TERN_OK : TERN_ENOMEM;
}

/* ---- the store: a front over one transport ----------------------------------- */

/* A transport whose publish is slow (checkpoint: write, fsync, rename) gets a
 * writer thread: publish copies the weights into one of two snapshots and
 * returns, the writer hands it to the transport, so the trainer trains on
 * while the file is written. With both snapshots in flight publish waits for
 * the older one (double buffering bounds the memory). Versions are written in
 * order, none skipped: a fixed schedule may wait for any of them. */
#define WRITER_SLOTS 2

struct tern_weight_store {
    const tern_store_transport *ops;
    void *impl;
    tern_trace *trace;

    int writer_on;
    pthread_t writer;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    tern_snapshot *queue[WRITER_SLOTS]; /* to write, oldest first */
    size_t queued;
    tern_snapshot *spare[WRITER_SLOTS]; /* written, memory to reuse */
    size_t spares;
    int writing, stop;
    int failed;       /* a write failed: its status */
    char error[512];  /* ... and message, returned by the next publish */
};

static void note_published(tern_weight_store *w, int64_t version)
{
    char args[64];
    snprintf(args, sizeof args, "{\"version\":%lld}", (long long)version);
    tern_trace_instant_on(w->trace, "trainer", "publish", tern_trace_clock(), args);
}

static void *writer_main(void *arg)
{
    tern_weight_store *w = arg;
    tern_trace_name_lane(w->trace, "weights writer");
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->queued && !w->stop)
            pthread_cond_wait(&w->changed, &w->lock);
        if (!w->queued)
            break; /* stopped with nothing left to write */
        tern_snapshot *s = w->queue[0];
        w->writing = 1;
        pthread_mutex_unlock(&w->lock);

        char args[96];
        snprintf(args, sizeof args, "{\"method\":\"%s\",\"version\":%lld}", w->ops->method,
                 (long long)s->version);
        uint64_t span = tern_trace_begin(w->trace, "sync");
        tern_error_clear();
        int rc = w->ops->publish(w->impl, s->t, s->n, s->version);
        tern_trace_end(w->trace, span, args);
        if (rc == TERN_OK)
            note_published(w, s->version);

        pthread_mutex_lock(&w->lock);
        if (rc != TERN_OK && !w->failed) {
            w->failed = rc;
            snprintf(w->error, sizeof w->error, "publishing weight version %lld: %s",
                     (long long)s->version, tern_error_message());
        }
        memmove(w->queue, w->queue + 1, (--w->queued) * sizeof *w->queue);
        w->writing = 0;
        if (w->spares < WRITER_SLOTS)
            w->spare[w->spares++] = s;
        else
            tern_snapshot_free(s);
        pthread_cond_broadcast(&w->changed);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

tern_weight_store *tern_weights_open_transport(const tern_store_transport *ops, void *impl,
                                               int writer, tern_trace *trace)
{
    if (!impl)
        return NULL; /* the transport's constructor failed: its message stands */
    tern_weight_store *w = calloc(1, sizeof *w);
    if (!w) {
        ops->destroy(impl);
        tern_errorf(TERN_ENOMEM, "out of memory");
        return NULL;
    }
    w->trace = trace;
    w->ops = ops;
    w->impl = impl;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    if (writer) {
        if (pthread_create(&w->writer, NULL, writer_main, w) != 0) {
            tern_errorf(TERN_ERR, "cannot start the weights writer thread");
            ops->destroy(impl);
            pthread_cond_destroy(&w->changed);
            pthread_mutex_destroy(&w->lock);
            free(w);
            return NULL;
        }
        w->writer_on = 1;
    }
    return w;
}

tern_weight_store *tern_weights_open(const char *method, const char *dir, tern_trace *trace)
{
    if (!method || strcmp(method, "memory") == 0)
        return tern_weights_open_transport(&tern_transport_memory, tern_transport_memory_new(),
                                           0, trace);
    if (strcmp(method, "checkpoint") == 0)
        return tern_weights_open_transport(&tern_transport_checkpoint,
                                           tern_transport_checkpoint_new(dir), 1, trace);
    tern_errorf(TERN_EUNSUPPORTED, "weight transport \"%s\" is not built into this tern "
                "(memory, checkpoint; mpi in a run on MPI ranks)", method);
    return NULL;
}

tern_weight_store *tern_weights_new(void) { return tern_weights_open("memory", NULL, NULL); }

/* Write everything queued, then stop the writer. */
static void stop_writer(tern_weight_store *w)
{
    if (!w->writer_on)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->writer, NULL);
    w->writer_on = 0;
}

void tern_weights_free(tern_weight_store *w)
{
    if (!w)
        return;
    stop_writer(w);
    for (size_t i = 0; i < w->queued; i++)
        tern_snapshot_free(w->queue[i]);
    for (size_t i = 0; i < w->spares; i++)
        tern_snapshot_free(w->spare[i]);
    w->ops->destroy(w->impl);
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

const char *tern_weights_method(const tern_weight_store *w) { return w->ops->method; }

/* The tensors a transport moves: the model's host tensors, or its device
 * tensors for a transport plugin's (device) store. */
static int moved_tensors_of(const tern_weight_store *w, const tern_model *m, const tern_tensor **t,
                            size_t *n)
{
    int32_t device;
    if (w->ops->device)
        return tern_model_device_tensors(m, "the model cannot hand out its device tensors", t,
                                         n, &device);
    return tensors_of(m, t, n);
}

int tern_weights_publish(tern_weight_store *w, const tern_model *m, int64_t version)
{
    const tern_tensor *t;
    size_t n;
    int rc = moved_tensors_of(w, m, &t, &n);
    if (rc != TERN_OK)
        return rc;
    if (!w->writer_on) { /* always so for a device store: the model's own memory goes out */
        rc = w->ops->publish(w->impl, t, n, version);
        if (rc == TERN_OK)
            note_published(w, version);
        return rc;
    }
    pthread_mutex_lock(&w->lock);
    while (w->queued == WRITER_SLOTS && !w->failed)
        pthread_cond_wait(&w->changed, &w->lock);
    if (w->failed) {
        rc = w->failed;
        char msg[512];
        snprintf(msg, sizeof msg, "%s", w->error);
        pthread_mutex_unlock(&w->lock);
        return tern_errorf(rc, "%s", msg);
    }
    tern_snapshot *s = w->spares ? w->spare[--w->spares] : NULL;
    pthread_mutex_unlock(&w->lock);

    /* the copy: the only part of a publish the trainer waits for */
    rc = tern_snapshot_retake(&s, t, n, version);
    if (rc != TERN_OK)
        return rc;
    pthread_mutex_lock(&w->lock);
    w->queue[w->queued++] = s;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    return TERN_OK;
}

int tern_weights_flush(tern_weight_store *w)
{
    if (!w->writer_on)
        return TERN_OK;
    pthread_mutex_lock(&w->lock);
    while (w->queued && !w->failed)
        pthread_cond_wait(&w->changed, &w->lock);
    int rc = w->failed;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", w->error);
    pthread_mutex_unlock(&w->lock);
    return rc ? tern_errorf(rc, "%s", msg) : TERN_OK;
}

int tern_weights_load(tern_weight_store *w, const tern_model *m, int64_t version, int64_t *loaded,
                      uint64_t *waited_ns)
{
    const tern_tensor *t;
    size_t n;
    int rc = moved_tensors_of(w, m, &t, &n);
    if (rc == TERN_OK)
        rc = w->ops->load(w->impl, t, n, version, loaded, waited_ns);
    if (rc == TERN_OK && w->ops->device)
        rc = tern_model_device_tensors_written(m, "the model cannot take new device weights");
    return rc;
}

void tern_weights_forget_before(tern_weight_store *w, int64_t version)
{
    w->ops->forget_before(w->impl, version);
}

int64_t tern_weights_newest(tern_weight_store *w) { return w->ops->newest(w->impl); }

void tern_weights_close(tern_weight_store *w)
{
    w->ops->close(w->impl);
}
