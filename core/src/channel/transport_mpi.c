/* transport_mpi.c: weights from the trainer rank to the explorer ranks by MPI
 * broadcast (docs/distributed.md "Weights"). See transport_mpi.h.
 *
 * Every published version goes out as two broadcasts on the weights group:
 * a header {version, bytes} (16 bytes, little-endian as the ranks are alike),
 * then the tensors' bytes one after another in the model's tensor order. A
 * header with version -1 ends the stream. The trainer side runs under the
 * weight store's writer thread (tern_weights_open_transport with writer 1),
 * so a publish returns once the weights are copied and at most one
 * broadcast is in flight. Each explorer rank's receiver thread takes every
 * version into a local versioned store (the memory transport), where its
 * explorers load it as in one process. */
#include "channel/transport_mpi.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

#ifdef TERN_HAVE_MPI

typedef struct mpi_weights {
    tern_link *link;
    int sender;
    volatile int cancel;      /* receiver: give up a pending broadcast (ending) */
    /* sender: the staging copy when the tensors are not one block */
    unsigned char *stage;
    size_t stage_bytes;
    /* receiver */
    tern_snapshot *layout;    /* this rank's model layout; its data receives */
    void *local;              /* a memory transport: the versions received */
    pthread_t thread;
    int thread_on;
    pthread_mutex_t lock;
    int failed;               /* the receiver failed: loads return it */
    char error[512];
} mpi_weights;

typedef struct header {
    int64_t version;
    uint64_t bytes;
} header;

/* ---- the trainer's side -------------------------------------------------------- */

static int send_publish(void *impl, const tern_tensor *t, size_t n, int64_t version)
{
    mpi_weights *w = impl;
    size_t bytes = 0;
    int contiguous = 1;
    for (size_t i = 0; i < n; i++) {
        if (i && (char *)t[i].data != (char *)t[0].data + bytes)
            contiguous = 0;
        bytes += t[i].bytes;
    }
    unsigned char *data = n ? t[0].data : NULL;
    if (!contiguous) {
        /* a model's own tensors; the store's snapshots are one block */
        if (w->stage_bytes < bytes) {
            free(w->stage);
            w->stage = malloc(bytes);
            w->stage_bytes = w->stage ? bytes : 0;
            if (!w->stage)
                return tern_errorf(TERN_ENOMEM, "out of memory staging %zu bytes of weights",
                                   bytes);
        }
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            memcpy(w->stage + off, t[i].data, t[i].bytes);
            off += t[i].bytes;
        }
        data = w->stage;
    }
    header h = {.version = version, .bytes = bytes};
    int rc = tern_link_bcast(w->link, &h, sizeof h, NULL);
    if (rc == TERN_OK && bytes)
        rc = tern_link_bcast(w->link, data, bytes, NULL);
    return rc;
}

static int send_load(void *impl, const tern_tensor *t, size_t n, int64_t version,
                     int64_t *loaded, uint64_t *waited_ns)
{
    (void)impl, (void)t, (void)n, (void)version, (void)loaded, (void)waited_ns;
    return tern_errorf(TERN_EINVAL, "mpi weights: the trainer rank publishes, it does not load "
                       "(a bug)");
}

static void send_forget(void *impl, int64_t version) { (void)impl, (void)version; }
static int64_t send_newest(void *impl) { (void)impl; return -1; }
static void send_close(void *impl) { (void)impl; }

static void send_destroy(void *impl)
{
    mpi_weights *w = impl;
    /* the end of the stream: every receiver's thread finishes on it */
    header h = {.version = -1, .bytes = 0};
    tern_link_bcast(w->link, &h, sizeof h, NULL);
    free(w->stage);
    free(w);
}

static const tern_store_transport sender_ops = {
    .method = "mpi",
    .publish = send_publish,
    .load = send_load,
    .forget_before = send_forget,
    .newest = send_newest,
    .close = send_close,
    .destroy = send_destroy,
};

/* ---- an explorer rank's side ---------------------------------------------------- */

static void receiver_fail(mpi_weights *w, const char *fmt, const char *detail)
{
    pthread_mutex_lock(&w->lock);
    if (!w->failed) {
        w->failed = 1;
        snprintf(w->error, sizeof w->error, fmt, detail);
    }
    pthread_mutex_unlock(&w->lock);
    /* wake the explorers waiting for a version: they fail with the error */
    tern_transport_memory.close(w->local);
}

static void *receiver_main(void *arg)
{
    mpi_weights *w = arg;
    size_t bytes = 0;
    unsigned char *data = tern_snapshot_data(w->layout, &bytes);
    const tern_tensor *t;
    size_t n;
    tern_snapshot_tensors(w->layout, &t, &n);
    for (;;) {
        header h;
        int rc = tern_link_bcast(w->link, &h, sizeof h, &w->cancel);
        if (rc != TERN_OK) {
            if (rc != TERN_ECLOSED)
                receiver_fail(w, "receiving weights from the trainer rank: %s",
                              tern_error_message());
            break;
        }
        if (h.version < 0)
            break; /* the trainer rank is done */
        if (h.bytes != bytes) {
            char detail[160];
            snprintf(detail, sizeof detail, "%llu bytes of weights came from the trainer rank; "
                     "this explorer's model has %zu", (unsigned long long)h.bytes, bytes);
            /* the broadcast is still taken, so the trainer is not stuck */
            unsigned char *sink = malloc(h.bytes ? h.bytes : 1);
            if (sink)
                tern_link_bcast(w->link, sink, h.bytes, &w->cancel);
            free(sink);
            receiver_fail(w, "%s: every rank must load the same model section", detail);
            if (!sink)
                break;
            continue;
        }
        if (bytes && (rc = tern_link_bcast(w->link, data, bytes, &w->cancel)) != TERN_OK) {
            if (rc != TERN_ECLOSED)
                receiver_fail(w, "receiving weights from the trainer rank: %s",
                              tern_error_message());
            break;
        }
        /* the layout's tensors now hold version h.version: into the local store */
        rc = tern_transport_memory.publish(w->local, t, n, h.version);
        if (rc != TERN_OK) {
            receiver_fail(w, "keeping weights received from the trainer rank: %s",
                          tern_error_message());
            /* go on taking the broadcasts: the trainer must not wait on us */
        }
    }
    return NULL;
}

static int recv_publish(void *impl, const tern_tensor *t, size_t n, int64_t version)
{
    (void)impl, (void)t, (void)n, (void)version;
    return tern_errorf(TERN_EINVAL, "mpi weights: an explorer rank loads, it does not publish "
                       "(a bug)");
}

static int recv_load(void *impl, const tern_tensor *t, size_t n, int64_t version,
                     int64_t *loaded, uint64_t *waited_ns)
{
    mpi_weights *w = impl;
    int rc = tern_transport_memory.load(w->local, t, n, version, loaded, waited_ns);
    pthread_mutex_lock(&w->lock);
    if (w->failed && rc != TERN_OK)
        rc = tern_errorf(TERN_EIO, "%s", w->error);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

static void recv_forget(void *impl, int64_t version)
{
    mpi_weights *w = impl;
    tern_transport_memory.forget_before(w->local, version);
}

static int64_t recv_newest(void *impl)
{
    mpi_weights *w = impl;
    return tern_transport_memory.newest(w->local);
}

static void recv_close(void *impl)
{
    mpi_weights *w = impl;
    tern_transport_memory.close(w->local);
}

static void recv_destroy(void *impl)
{
    mpi_weights *w = impl;
    /* the thread ends on the trainer's end of stream (tern_transport_mpi_sender's
     * destroy), which every rank's wind-down sends before the link closes */
    if (w->thread_on)
        pthread_join(w->thread, NULL);
    tern_transport_memory.destroy(w->local);
    tern_snapshot_free(w->layout);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static const tern_store_transport receiver_ops = {
    .method = "mpi",
    .publish = recv_publish,
    .load = recv_load,
    .forget_before = recv_forget,
    .newest = recv_newest,
    .close = recv_close,
    .destroy = recv_destroy,
};

tern_weight_store *tern_transport_mpi_sender(tern_link *link, tern_trace *trace)
{
    mpi_weights *w = calloc(1, sizeof *w);
    if (!w) {
        tern_errorf(TERN_ENOMEM, "out of memory");
        return NULL;
    }
    w->link = link;
    w->sender = 1;
    pthread_mutex_init(&w->lock, NULL);
    return tern_weights_open_transport(&sender_ops, w, 1, trace);
}

tern_weight_store *tern_transport_mpi_receiver(tern_link *link, const tern_model *like,
                                               tern_trace *trace)
{
    mpi_weights *w = calloc(1, sizeof *w);
    if (!w) {
        tern_errorf(TERN_ENOMEM, "out of memory");
        return NULL;
    }
    w->link = link;
    pthread_mutex_init(&w->lock, NULL);
    w->layout = tern_snapshot_of(like, -1);
    w->local = w->layout ? tern_transport_memory_new() : NULL;
    if (!w->local || pthread_create(&w->thread, NULL, receiver_main, w) != 0) {
        if (w->local)
            tern_errorf(TERN_ERR, "cannot start the weights receiver thread");
        if (w->local)
            tern_transport_memory.destroy(w->local);
        tern_snapshot_free(w->layout);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    w->thread_on = 1;
    return tern_weights_open_transport(&receiver_ops, w, 0, trace);
}

#endif
