/* transport_plugin.c: weight stores over a transport plugin (see
 * transport_plugin.h and tern/transport.h).
 *
 * Sender: publish hands the policy's device tensors to the plugin, which
 * copies them into its own buffers and sends them on (the trainer waits only
 * for the copy). Freeing the store finishes the stream.
 *
 * Receiver: one thread loops on the plugin's receive; each version it takes
 * becomes the newest, and explorers waiting for it wake. A load copies a
 * held version out of the plugin's memory into the explorer's device
 * tensors; forget_before releases the versions nobody asks for any more. */
#include "channel/transport_plugin.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "weights/transport.h"

#ifdef TERN_HAVE_MPI

typedef struct plugin_weights {
    tern_store_transport store_ops; /* the store's vtable: `method` is the plugin's name */
    tern_transport_plugin p;
    tern_link *link;
    int sender;
    int64_t newest;  /* the newest version published (sender) or received */
    int64_t oldest;  /* receiver: versions below it were released */
    /* receiver */
    pthread_t thread;
    int thread_on;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int ended;       /* the stream ended (finish, or close) */
    int failed;      /* the receiver failed: loads return it */
    char error[512];
} plugin_weights;

static int bootstrap_bcast(void *user, void *buf, size_t bytes)
{
    return tern_link_bcast(user, buf, bytes, NULL);
}

/* connect() as `role`, on the device of `m`'s tensors. */
static int connect_plugin(plugin_weights *w, const tern_model *m, uint32_t role)
{
    const tern_tensor *t;
    size_t n;
    int32_t device = 0;
    int rc = tern_model_device_tensors(m, "the model cannot hand out its device tensors", &t, &n,
                                       &device);
    if (rc != TERN_OK)
        return rc;
    int index = 0, size = 0;
    if ((rc = tern_link_weights_place(w->link, &index, &size)) != TERN_OK)
        return rc;
    tern_transport_group g = {.size = sizeof g, .role = role, .rank = index, .n_ranks = size,
                              .device = device, .bootstrap_bcast = bootstrap_bcast,
                              .user = w->link};
    tern_error_clear();
    rc = w->p.ops->connect(w->p.state, &g);
    if (rc != TERN_OK)
        return tern_errorf(rc, "transport '%s': connect as %s %d of %d: %s", w->p.name,
                           role == TERN_TRANSPORT_SENDER ? "the sender" : "receiver", index,
                           size, *tern_error_message() ? tern_error_message() : "no reason given");
    return TERN_OK;
}

/* A plugin status with the plugin's message, prefixed. */
static int plugin_failed(const plugin_weights *w, int rc, const char *what)
{
    const char *msg = tern_error_message();
    return tern_errorf(rc, "transport '%s': %s: %s", w->p.name, what,
                       *msg ? msg : "no reason given");
}

/* ---- the trainer's side -------------------------------------------------------- */

static int send_publish(void *impl, const tern_tensor *t, size_t n, int64_t version)
{
    plugin_weights *w = impl;
    tern_error_clear();
    int rc = w->p.ops->publish(w->p.state, t, n, version);
    if (rc != TERN_OK)
        return plugin_failed(w, rc, "publish");
    w->newest = version;
    return TERN_OK;
}

static int send_load(void *impl, const tern_tensor *t, size_t n, int64_t version,
                     int64_t *loaded, uint64_t *waited_ns)
{
    (void)impl, (void)t, (void)n, (void)version, (void)loaded, (void)waited_ns;
    return tern_errorf(TERN_EINVAL, "the trainer rank's weight store only sends (a bug)");
}

static void send_forget(void *impl, int64_t version) { (void)impl, (void)version; }

static int64_t send_newest(void *impl) { return ((plugin_weights *)impl)->newest; }

static void send_close(void *impl)
{
    plugin_weights *w = impl;
    w->ended = 1;
    w->p.ops->cancel(w->p.state);
}

static void send_destroy(void *impl)
{
    plugin_weights *w = impl;
    if (!w->ended) {
        tern_error_clear();
        if (w->p.ops->finish(w->p.state) != TERN_OK)
            tern_logf(TERN_LOG_WARN, "weights", "transport '%s': finishing the stream: %s",
                      w->p.name, tern_error_message());
    }
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* ---- an explorer rank's side ---------------------------------------------------- */

static void *receiver_main(void *arg)
{
    plugin_weights *w = arg;
    for (;;) {
        int64_t v = -1;
        tern_error_clear();
        int rc = w->p.ops->receive(w->p.state, &v);
        pthread_mutex_lock(&w->lock);
        if (rc == TERN_OK && v > w->newest) {
            w->newest = v;
        } else if (rc == TERN_OK) {
            rc = TERN_EINVAL;
            snprintf(w->error, sizeof w->error, "transport '%s': received version %lld after "
                     "%lld (versions only grow: a bug in the plugin)", w->p.name, (long long)v,
                     (long long)w->newest);
            w->failed = rc;
        } else if (rc == TERN_ECLOSED) {
            w->ended = 1;
        } else if (!w->failed) {
            const char *msg = tern_error_message();
            snprintf(w->error, sizeof w->error, "transport '%s': receiving weights: %s",
                     w->p.name, *msg ? msg : "no reason given");
            w->failed = rc;
        }
        pthread_cond_broadcast(&w->changed);
        pthread_mutex_unlock(&w->lock);
        if (rc != TERN_OK)
            return NULL;
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int recv_load(void *impl, const tern_tensor *t, size_t n, int64_t version,
                     int64_t *loaded, uint64_t *waited_ns)
{
    plugin_weights *w = impl;
    uint64_t t0 = now_ns();
    pthread_mutex_lock(&w->lock);
    while (!w->failed && !w->ended && (version >= 0 ? w->newest < version : w->newest < 0))
        pthread_cond_wait(&w->changed, &w->lock);
    int64_t v = version >= 0 ? version : w->newest;
    int rc = TERN_OK;
    char msg[512] = "";
    if (w->failed) {
        rc = w->failed;
        snprintf(msg, sizeof msg, "%s", w->error);
    } else if (v < 0 || v > w->newest) {
        rc = TERN_ECLOSED;
        snprintf(msg, sizeof msg, "the weight stream ended before version %lld",
                 (long long)(version >= 0 ? version : 0));
    } else if (v < w->oldest) {
        rc = TERN_EINVAL;
        snprintf(msg, sizeof msg, "weight version %lld was forgotten already", (long long)v);
    }
    pthread_mutex_unlock(&w->lock);
    if (rc != TERN_OK)
        return tern_errorf(rc, "%s", msg);
    *waited_ns = now_ns() - t0;
    tern_error_clear();
    rc = w->p.ops->copy_out(w->p.state, v, t, n);
    if (rc != TERN_OK)
        return plugin_failed(w, rc, "copying out a received version");
    *loaded = v;
    return TERN_OK;
}

static int recv_publish(void *impl, const tern_tensor *t, size_t n, int64_t version)
{
    (void)impl, (void)t, (void)n, (void)version;
    return tern_errorf(TERN_EINVAL, "an explorer rank's weight store only receives (a bug)");
}

static void recv_forget(void *impl, int64_t version)
{
    plugin_weights *w = impl;
    pthread_mutex_lock(&w->lock);
    /* the newest is always kept */
    if (version > w->newest)
        version = w->newest;
    int release = version > w->oldest;
    if (release)
        w->oldest = version;
    pthread_mutex_unlock(&w->lock);
    if (release)
        w->p.ops->release(w->p.state, version);
}

static int64_t recv_newest(void *impl)
{
    plugin_weights *w = impl;
    pthread_mutex_lock(&w->lock);
    int64_t v = w->newest;
    pthread_mutex_unlock(&w->lock);
    return v;
}

static void recv_close(void *impl)
{
    plugin_weights *w = impl;
    pthread_mutex_lock(&w->lock);
    w->ended = 1;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    w->p.ops->cancel(w->p.state);
}

static void recv_destroy(void *impl)
{
    plugin_weights *w = impl;
    if (w->thread_on)
        pthread_join(w->thread, NULL); /* the sender's finish, or close, ends it */
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static plugin_weights *new_weights(tern_link *link, const tern_transport_plugin *p, int sender)
{
    plugin_weights *w = calloc(1, sizeof *w);
    if (!w) {
        tern_errorf(TERN_ENOMEM, "out of memory");
        return NULL;
    }
    w->p = *p;
    w->link = link;
    w->sender = sender;
    w->newest = -1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    w->store_ops = sender ? (tern_store_transport){.method = p->name, .device = 1,
                                                 .publish = send_publish, .load = send_load,
                                                 .forget_before = send_forget,
                                                 .newest = send_newest, .close = send_close,
                                                 .destroy = send_destroy}
                          : (tern_store_transport){.method = p->name, .device = 1,
                                                 .publish = recv_publish, .load = recv_load,
                                                 .forget_before = recv_forget,
                                                 .newest = recv_newest, .close = recv_close,
                                                 .destroy = recv_destroy};
    return w;
}

static void drop_weights(plugin_weights *w)
{
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

tern_weight_store *tern_transport_plugin_sender(tern_link *link, const tern_transport_plugin *p,
                                                const tern_model *model, tern_trace *trace)
{
    plugin_weights *w = new_weights(link, p, 1);
    if (!w)
        return NULL;
    if (connect_plugin(w, model, TERN_TRANSPORT_SENDER) != TERN_OK) {
        drop_weights(w);
        return NULL;
    }
    return tern_weights_open_transport(&w->store_ops, w, 0, trace);
}

tern_weight_store *tern_transport_plugin_receiver(tern_link *link, const tern_transport_plugin *p,
                                                  const tern_model *like, tern_trace *trace)
{
    plugin_weights *w = new_weights(link, p, 0);
    if (!w)
        return NULL;
    if (connect_plugin(w, like, TERN_TRANSPORT_RECEIVER) != TERN_OK) {
        drop_weights(w);
        return NULL;
    }
    if (pthread_create(&w->thread, NULL, receiver_main, w) != 0) {
        tern_errorf(TERN_ERR, "cannot start the weights receiver thread");
        w->p.ops->cancel(w->p.state);
        drop_weights(w);
        return NULL;
    }
    w->thread_on = 1;
    return tern_weights_open_transport(&w->store_ops, w, 0, trace);
}

#endif
