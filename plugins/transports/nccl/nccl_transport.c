/*
 * nccl_transport.c: the `nccl` weight transport plugin (tern/transport.h):
 * the trainer rank broadcasts each published version from its GPU to the
 * explorer ranks' GPUs with ncclBroadcast, no host copy on either side.
 *
 *   connect   the sender makes an ncclUniqueId and broadcasts it over the
 *             core's MPI channel (bootstrap_bcast); every member then joins
 *             with ncclCommInitRankConfig, nonblocking, polled against the
 *             timeout (a rank that never comes is a message, not a hang)
 *   publish   wait for the previous send; copy the tensors into one flat
 *             device buffer (the send buffer, 256-byte aligned pieces); then
 *             broadcast a header {version, bytes, layout hash} and the flat
 *             buffer in buckets of bucket_mb: a few large calls, never one
 *             per tensor. Returns after the copy; the broadcast runs on.
 *   receive   broadcast the header into a device word and wait for it
 *             (no timeout: the trainer may train long between versions;
 *             cancel ends the wait); version -1 ends the stream. Then the
 *             buckets, into a free slot (a flat device buffer), with the
 *             timeout. A slot stays held until release().
 *   copy_out  device-to-device copies from a held slot into an explorer
 *             model's tensors, after checking their layout hash.
 *
 * Every wait polls the stream and ncclCommGetAsyncError every 100 µs; at
 * the timeout, or on cancel, the communicator is aborted (ncclCommAbort),
 * which ends the peers' pending calls with an error too.
 *
 * NCCL refuses two ranks of one communicator on one GPU ("Duplicate GPU
 * detected"); connect then says so (one GPU per rank: CUDA_VISIBLE_DEVICES
 * or the model's device setting).
 *
 * join_trainers and sum: data-parallel trainer ranks (ranks.trainers > 1)
 * sum their gradients in place on their GPUs with ncclAllReduce, on a second
 * communicator and stream, between backward and the AdamW step.
 *
 * Settings: timeout_s (default 300), bucket_mb (default 64).
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tern/plugin.h"
#include "tern/transport.h"

static const tern_host *host;

#define MAX_SLOTS 16

typedef struct header {
    int64_t version;  /* -1: the end of the stream */
    uint64_t bytes;   /* of the flat buffer */
    uint64_t layout;  /* hash of the tensors' names and sizes */
    uint64_t count;   /* tensors */
} header;

typedef struct slot {
    void *data;       /* device, `bytes` */
    int64_t version;  /* -1: free */
} slot;

typedef struct nccl_state {
    tern_ctx *ctx;
    double timeout_s;
    size_t bucket;
    /* after connect */
    int connected, sender, device;
    ncclComm_t comm;     /* the weights group: the trainer rank and the explorer ranks */
    cudaStream_t st;
    /* join_trainers: the trainer ranks' group, summing gradients */
    ncclComm_t dp_comm;
    cudaStream_t dp_st;
    header *dev_header;  /* one device header the broadcasts go through */
    volatile int cancelled;
    int aborted;
    /* the layout, from the first publish (sender) or header (receiver) */
    size_t bytes, count;
    uint64_t layout;
    /* sender */
    void *send_buf;
    int in_flight;       /* a broadcast was enqueued and not yet waited for */
    int64_t in_flight_version;
    /* receiver */
    pthread_mutex_t lock;
    slot slots[MAX_SLOTS];
    int64_t released_below;
} nccl_state;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_us(long us)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = us * 1000};
    nanosleep(&ts, NULL);
}

/* 256-byte aligned offsets: each tensor starts aligned in the flat buffer. */
static size_t round_up(size_t n) { return (n + 255) & ~(size_t)255; }

/* FNV-1a over the tensors' names and byte sizes: the sender's and a
 * receiver's model must agree. */
static uint64_t layout_hash(const tern_tensor *t, size_t n, size_t *bytes)
{
    uint64_t h = 1469598103934665603ull;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        for (const char *c = t[i].name ? t[i].name : ""; *c; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211ull;
        for (int b = 0; b < 8; b++)
            h = (h ^ ((t[i].bytes >> (8 * b)) & 0xff)) * 1099511628211ull;
        total += round_up(t[i].bytes);
    }
    *bytes = total;
    return h;
}

static int cuda_fail(nccl_state *s, cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    return host->fail(s->ctx, TERN_ERR, "nccl: %s on CUDA device %d: %s", what, s->device,
                      cudaGetErrorString(e));
}

static int nccl_fail(nccl_state *s, ncclResult_t r, const char *what)
{
    const char *last = s->comm ? ncclGetLastError(s->comm) : ncclGetLastError(NULL);
    return host->fail(s->ctx, TERN_ERR, "nccl: %s: %s%s%s", what, ncclGetErrorString(r),
                      last && *last ? ": " : "", last && *last ? last : "");
}

/* Abort the communicators: the peers' pending calls end with an error. A
 * failure ends the run, so both go. */
static void abort_comm(nccl_state *s)
{
    if (s->comm) {
        ncclCommAbort(s->comm);
        s->comm = NULL;
    }
    if (s->dp_comm) {
        ncclCommAbort(s->dp_comm);
        s->dp_comm = NULL;
    }
    s->aborted = 1;
}

/* Wait for a stream's work (and its communicator's pending state), until
 * `limit` seconds (< 0: no limit) or a cancel. */
static int wait_on(nccl_state *s, cudaStream_t st, ncclComm_t comm, double limit,
                   const char *what)
{
    double t0 = now_s();
    for (;;) {
        cudaError_t e = cudaStreamQuery(st);
        if (e == cudaSuccess)
            return TERN_OK;
        if (e != cudaErrorNotReady)
            return cuda_fail(s, e, what);
        ncclResult_t async = ncclSuccess;
        if (comm && ncclCommGetAsyncError(comm, &async) == ncclSuccess &&
            async != ncclSuccess && async != ncclInProgress) {
            int rc = nccl_fail(s, async, what);
            abort_comm(s);
            return rc;
        }
        if (s->cancelled) {
            abort_comm(s);
            return host->fail(s->ctx, TERN_ECLOSED, "nccl: %s: cancelled (the run is ending)",
                              what);
        }
        if (limit >= 0 && now_s() - t0 > limit) {
            abort_comm(s);
            return host->fail(s->ctx, TERN_ETIMEDOUT,
                              "nccl: %s did not finish within %.0f s: a peer rank is gone or "
                              "stuck (its log says why); raise transport.timeout_s for a slow "
                              "link", what, limit);
        }
        sleep_us(100);
    }
}

/* The weights group's stream. */
static int wait_stream(nccl_state *s, double limit, const char *what)
{
    return wait_on(s, s->st, s->comm, limit, what);
}

/* ---- create / destroy ------------------------------------------------------- */

static int nc_create(tern_ctx *ctx, void **state)
{
    double timeout = 300;
    int64_t bucket_mb = 64;
    int rc = host->get_float(ctx, "timeout_s", &timeout);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "bucket_mb", &bucket_mb);
    if (rc != TERN_OK)
        return rc;
    nccl_state *s = calloc(1, sizeof *s);
    if (!s)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    s->ctx = ctx;
    s->timeout_s = timeout;
    s->bucket = (size_t)bucket_mb << 20;
    s->released_below = -1;
    pthread_mutex_init(&s->lock, NULL);
    for (int i = 0; i < MAX_SLOTS; i++)
        s->slots[i].version = -1;
    *state = s;
    return TERN_OK;
}

static void nc_destroy(void *state)
{
    nccl_state *s = state;
    if (s->connected) {
        cudaSetDevice(s->device);
        if (s->comm) {
            if (s->cancelled || wait_stream(s, s->timeout_s, "the last broadcast") != TERN_OK)
                abort_comm(s);
            else
                ncclCommDestroy(s->comm);
            s->comm = NULL;
        }
        if (s->dp_comm) {
            if (s->cancelled)
                abort_comm(s);
            else
                ncclCommDestroy(s->dp_comm);
        }
        cudaFree(s->send_buf);
        cudaFree(s->dev_header);
        for (int i = 0; i < MAX_SLOTS; i++)
            cudaFree(s->slots[i].data);
        cudaStreamDestroy(s->st);
        cudaStreamDestroy(s->dp_st);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Join a communicator of g->n_ranks with the id the group's rank 0 made:
 * nonblocking init, polled, so a rank that never joins is a timeout. */
static int init_comm(nccl_state *s, const tern_transport_group *g, ncclUniqueId id,
                     ncclComm_t *comm)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(comm, g->n_ranks, id, g->rank, &cfg);
    double t0 = now_s();
    while (r == ncclInProgress || r == ncclSuccess) {
        ncclResult_t st = ncclInProgress;
        if (ncclCommGetAsyncError(*comm, &st) != ncclSuccess)
            st = ncclSystemError;
        if (st == ncclSuccess)
            break;
        if (st != ncclInProgress) {
            r = st;
            break;
        }
        if (s->cancelled || now_s() - t0 > s->timeout_s) {
            ncclCommAbort(*comm);
            *comm = NULL;
            return host->fail(s->ctx, s->cancelled ? TERN_ECLOSED : TERN_ETIMEDOUT,
                              "nccl: the communicator of %d ranks did not form within %.0f s "
                              "(rank %d waiting): a rank is gone, or NCCL cannot reach it "
                              "(NCCL_DEBUG=INFO says why)", g->n_ranks, s->timeout_s, g->rank);
        }
        sleep_us(1000);
    }
    if (r != ncclSuccess && r != ncclInProgress) {
        const char *last = ncclGetLastError(*comm);
        int dup = last && strstr(last, "Duplicate GPU");
        int rc = host->fail(s->ctx, TERN_ERR, "nccl: joining the communicator (rank %d of %d, "
                            "CUDA device %d): %s%s%s%s", g->rank, g->n_ranks, s->device,
                            ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "",
                            dup ? ". NCCL needs one GPU per rank: give each rank its own "
                                  "(CUDA_VISIBLE_DEVICES, or the model's device setting), or "
                                  "use method = \"mpi\" for ranks that share a GPU" : "");
        ncclCommAbort(*comm);
        *comm = NULL;
        return rc;
    }
    return TERN_OK;
}

/* ---- connect ------------------------------------------------------------------ */

/* The device, its streams and the header word, once for both groups. */
static int open_device(nccl_state *s, int device)
{
    if (s->connected)
        return device == s->device ? TERN_OK
                                   : host->fail(s->ctx, TERN_EINVAL, "nccl: the trainer's "
                                                "weights and gradients are on different devices "
                                                "(%d and %d)", s->device, device);
    s->device = device;
    int n_dev = 0;
    cudaError_t e = cudaGetDeviceCount(&n_dev);
    if (e != cudaSuccess || n_dev == 0) {
        (void)cudaGetLastError();
        return host->fail(s->ctx, TERN_ERR, "nccl: this rank has no usable CUDA device (%s): "
                          "the nccl transport moves weights between GPUs; use method = \"mpi\" "
                          "on machines without one", cudaGetErrorString(e));
    }
    if ((e = cudaSetDevice(s->device)) != cudaSuccess)
        return cuda_fail(s, e, "selecting the device");
    if ((e = cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking)) != cudaSuccess)
        return cuda_fail(s, e, "making a stream");
    if ((e = cudaStreamCreateWithFlags(&s->dp_st, cudaStreamNonBlocking)) != cudaSuccess) {
        cudaStreamDestroy(s->st);
        return cuda_fail(s, e, "making a stream");
    }
    if ((e = cudaMalloc((void **)&s->dev_header, sizeof(header))) != cudaSuccess) {
        cudaStreamDestroy(s->st);
        cudaStreamDestroy(s->dp_st);
        return cuda_fail(s, e, "allocating the header");
    }
    s->connected = 1; /* destroy frees the streams and header from here on */
    return TERN_OK;
}

/* The group's rank 0 makes the id; it reaches the others over MPI. */
static int share_id(nccl_state *s, const tern_transport_group *g, ncclUniqueId *id)
{
    memset(id, 0, sizeof *id);
    ncclResult_t r;
    if (g->rank == 0 && (r = ncclGetUniqueId(id)) != ncclSuccess)
        return nccl_fail(s, r, "making the unique id");
    int rc = g->bootstrap_bcast(g->user, id, sizeof *id);
    if (rc != TERN_OK)
        return host->fail(s->ctx, rc, "nccl: sharing the unique id over MPI failed");
    return TERN_OK;
}

/* Join one group's communicator: the device, the id over MPI, the init. */
static int join(nccl_state *s, const tern_transport_group *g, ncclComm_t *comm, const char *op)
{
    if (*comm)
        return host->fail(s->ctx, TERN_EINVAL, "nccl: %s called twice", op);
    int rc = open_device(s, g->device);
    if (rc != TERN_OK)
        return rc;
    ncclUniqueId id;
    if ((rc = share_id(s, g, &id)) != TERN_OK)
        return rc;
    return init_comm(s, g, id, comm);
}

static int nc_connect(void *state, const tern_transport_group *g)
{
    nccl_state *s = state;
    s->sender = g->role == TERN_TRANSPORT_SENDER;
    return join(s, g, &s->comm, "connect");
}

static int nc_join_trainers(void *state, const tern_transport_group *g)
{
    nccl_state *s = state;
    return join(s, g, &s->dp_comm, "join_trainers");
}

/* The gradients, summed in place: one ncclAllReduce per run of tensors that
 * lie end to end (the CUDA model's are one block), on the trainers' stream. */
static int nc_sum(void *state, const tern_tensor *t, size_t n)
{
    nccl_state *s = state;
    if (!s->dp_comm)
        return host->fail(s->ctx, s->cancelled ? TERN_ECLOSED : TERN_EINVAL,
                          "nccl: sum on a rank that did not join the trainer ranks");
    cudaError_t e = cudaSetDevice(s->device);
    if (e != cudaSuccess)
        return cuda_fail(s, e, "selecting the device");
    for (size_t i = 0; i < n;) {
        if (t[i].dtype != TERN_DTYPE_F32)
            return host->fail(s->ctx, TERN_EINVAL, "nccl: gradient %s is not float32 (a bug "
                              "in the model plugin)", t[i].name);
        char *start = t[i].data;
        size_t bytes = t[i].bytes, j = i + 1;
        while (j < n && t[j].dtype == TERN_DTYPE_F32 && (char *)t[j].data == start + bytes)
            bytes += t[j++].bytes;
        ncclResult_t r = ncclAllReduce(start, start, bytes / sizeof(float), ncclFloat, ncclSum,
                                       s->dp_comm, s->dp_st);
        if (r != ncclSuccess && r != ncclInProgress)
            return nccl_fail(s, r, "enqueueing the gradients' allreduce");
        i = j;
    }
    return wait_on(s, s->dp_st, s->dp_comm, s->timeout_s, "summing the trainer ranks' gradients");
}

/* ---- the sender ------------------------------------------------------------- */

/* Broadcast the header and then `bytes` of buf in buckets, enqueued on the
 * stream (root 0: the sender). */
static int enqueue_broadcast(nccl_state *s, void *buf, size_t bytes)
{
    ncclResult_t r = ncclBroadcast(s->dev_header, s->dev_header, sizeof(header), ncclUint8, 0,
                                   s->comm, s->st);
    for (size_t at = 0; r == ncclSuccess && at < bytes; at += s->bucket) {
        size_t n = bytes - at < s->bucket ? bytes - at : s->bucket;
        r = ncclBroadcast((char *)buf + at, (char *)buf + at, n, ncclUint8, 0, s->comm, s->st);
    }
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_fail(s, r, "enqueueing a broadcast");
    return TERN_OK;
}

static int finish_in_flight(nccl_state *s)
{
    if (!s->in_flight)
        return TERN_OK;
    char what[96];
    snprintf(what, sizeof what, "the broadcast of weight version %lld",
             (long long)s->in_flight_version);
    int rc = wait_stream(s, s->timeout_s, what);
    s->in_flight = 0;
    return rc;
}

static int nc_publish(void *state, const tern_tensor *t, size_t n, int64_t version)
{
    nccl_state *s = state;
    if (!s->connected || !s->sender || !s->comm)
        return host->fail(s->ctx, TERN_EINVAL, "nccl: publish on a rank that is not the "
                          "connected sender");
    cudaError_t e = cudaSetDevice(s->device);
    if (e != cudaSuccess)
        return cuda_fail(s, e, "selecting the device");
    size_t bytes;
    uint64_t layout = layout_hash(t, n, &bytes);
    if (!s->send_buf) {
        if ((e = cudaMalloc(&s->send_buf, bytes ? bytes : 1)) != cudaSuccess)
            return cuda_fail(s, e, "allocating the send buffer");
        s->bytes = bytes, s->count = n, s->layout = layout;
    } else if (layout != s->layout || bytes != s->bytes) {
        return host->fail(s->ctx, TERN_EINVAL, "nccl: version %lld has a layout (%zu tensors, "
                          "%zu bytes) unlike the first published (%zu, %zu)", (long long)version,
                          n, bytes, s->count, s->bytes);
    }
    /* the send buffer is free once the previous broadcast is done */
    int rc = finish_in_flight(s);
    if (rc != TERN_OK)
        return rc;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        e = cudaMemcpyAsync((char *)s->send_buf + at, t[i].data, t[i].bytes,
                            cudaMemcpyDeviceToDevice, s->st);
        if (e != cudaSuccess)
            return cuda_fail(s, e, "copying the weights into the send buffer");
        at += round_up(t[i].bytes);
    }
    header h = {.version = version, .bytes = bytes, .layout = layout, .count = n};
    if ((e = cudaMemcpyAsync(s->dev_header, &h, sizeof h, cudaMemcpyHostToDevice, s->st)) !=
        cudaSuccess)
        return cuda_fail(s, e, "writing the header");
    /* the caller may change t once the copies are done: wait for them (the
     * header's host source `h` lives on this stack frame too) */
    if ((rc = wait_stream(s, s->timeout_s, "copying the weights")) != TERN_OK)
        return rc;
    if ((rc = enqueue_broadcast(s, s->send_buf, bytes)) != TERN_OK)
        return rc;
    s->in_flight = 1;
    s->in_flight_version = version;
    return TERN_OK;
}

static int nc_finish(void *state)
{
    nccl_state *s = state;
    if (!s->connected || !s->sender || !s->comm)
        return TERN_OK;
    cudaSetDevice(s->device);
    int rc = finish_in_flight(s);
    if (rc != TERN_OK)
        return rc;
    header h = {.version = -1};
    cudaError_t e = cudaMemcpyAsync(s->dev_header, &h, sizeof h, cudaMemcpyHostToDevice, s->st);
    if (e != cudaSuccess)
        return cuda_fail(s, e, "writing the end header");
    ncclResult_t r = ncclBroadcast(s->dev_header, s->dev_header, sizeof(header), ncclUint8, 0,
                                   s->comm, s->st);
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_fail(s, r, "broadcasting the end of the stream");
    return wait_stream(s, s->timeout_s, "the end of the weight stream");
}

/* ---- a receiver --------------------------------------------------------------- */

static int nc_receive(void *state, int64_t *version)
{
    nccl_state *s = state;
    if (!s->connected || s->sender || !s->comm)
        return host->fail(s->ctx, s->cancelled ? TERN_ECLOSED : TERN_EINVAL,
                          "nccl: receive on a rank that is not a connected receiver");
    cudaError_t e = cudaSetDevice(s->device);
    if (e != cudaSuccess)
        return cuda_fail(s, e, "selecting the device");
    ncclResult_t r = ncclBroadcast(s->dev_header, s->dev_header, sizeof(header), ncclUint8, 0,
                                   s->comm, s->st);
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_fail(s, r, "enqueueing the header's broadcast");
    /* the trainer publishes when it is ready: no limit here, cancel ends it */
    int rc = wait_stream(s, -1, "waiting for the next weight version");
    if (rc != TERN_OK)
        return rc;
    header h;
    if ((e = cudaMemcpy(&h, s->dev_header, sizeof h, cudaMemcpyDeviceToHost)) != cudaSuccess)
        return cuda_fail(s, e, "reading the header");
    if (h.version < 0)
        return host->fail(s->ctx, TERN_ECLOSED, "nccl: the trainer ended the weight stream");
    if (s->layout && (h.layout != s->layout || h.bytes != s->bytes))
        return host->fail(s->ctx, TERN_EINVAL, "nccl: version %lld's layout changed mid-run",
                          (long long)h.version);
    s->layout = h.layout, s->bytes = h.bytes, s->count = h.count;

    /* a free slot: released, or never used */
    pthread_mutex_lock(&s->lock);
    int free_slot = -1;
    for (int i = 0; i < MAX_SLOTS && free_slot < 0; i++)
        if (s->slots[i].version < 0 || s->slots[i].version < s->released_below)
            free_slot = i;
    if (free_slot >= 0)
        s->slots[free_slot].version = -1; /* being written */
    pthread_mutex_unlock(&s->lock);
    if (free_slot < 0)
        return host->fail(s->ctx, TERN_ENOMEM, "nccl: %d weight versions held and none "
                          "released: the explorers fall behind further than the transport "
                          "keeps (lower sync.max_staleness)", MAX_SLOTS);
    slot *sl = &s->slots[free_slot];
    if (!sl->data && (e = cudaMalloc(&sl->data, h.bytes ? h.bytes : 1)) != cudaSuccess)
        return cuda_fail(s, e, "allocating a slot for a received version");
    for (size_t at = 0; at < h.bytes; at += s->bucket) {
        size_t n = h.bytes - at < s->bucket ? h.bytes - at : s->bucket;
        r = ncclBroadcast((char *)sl->data + at, (char *)sl->data + at, n, ncclUint8, 0, s->comm,
                          s->st);
        if (r != ncclSuccess && r != ncclInProgress)
            return nccl_fail(s, r, "enqueueing a bucket's broadcast");
    }
    char what[96];
    snprintf(what, sizeof what, "receiving weight version %lld", (long long)h.version);
    if ((rc = wait_stream(s, s->timeout_s, what)) != TERN_OK)
        return rc;
    pthread_mutex_lock(&s->lock);
    sl->version = h.version;
    pthread_mutex_unlock(&s->lock);
    *version = h.version;
    return TERN_OK;
}

static int nc_copy_out(void *state, int64_t version, const tern_tensor *t, size_t n)
{
    nccl_state *s = state;
    size_t bytes;
    uint64_t layout = layout_hash(t, n, &bytes);
    if (layout != s->layout || bytes != s->bytes)
        return host->fail(s->ctx, TERN_EINVAL, "nccl: the explorer's model (%zu tensors, %zu "
                          "bytes) is not laid out as the trainer's (%zu, %zu): both must be the "
                          "same model", n, bytes, s->count, s->bytes);
    cudaError_t e = cudaSetDevice(s->device);
    if (e != cudaSuccess)
        return cuda_fail(s, e, "selecting the device");
    pthread_mutex_lock(&s->lock);
    const slot *sl = NULL;
    for (int i = 0; i < MAX_SLOTS && !sl; i++)
        if (s->slots[i].version == version && version >= s->released_below)
            sl = &s->slots[i];
    int rc = TERN_OK;
    /* the lock keeps the slot from being reused while we copy */
    if (!sl) {
        rc = host->fail(s->ctx, TERN_EINVAL, "nccl: weight version %lld is not held here",
                        (long long)version);
    } else {
        size_t at = 0;
        for (size_t i = 0; i < n && e == cudaSuccess; i++) {
            e = cudaMemcpy(t[i].data, (const char *)sl->data + at, t[i].bytes,
                           cudaMemcpyDeviceToDevice);
            at += round_up(t[i].bytes);
        }
        if (e != cudaSuccess)
            rc = cuda_fail(s, e, "copying a version into the explorer's model");
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static void nc_release(void *state, int64_t version)
{
    nccl_state *s = state;
    pthread_mutex_lock(&s->lock);
    if (version > s->released_below)
        s->released_below = version;
    pthread_mutex_unlock(&s->lock);
}

static void nc_cancel(void *state) { ((nccl_state *)state)->cancelled = 1; }

static const tern_transport_ops ops = {
    .size = sizeof(tern_transport_ops),
    .create = nc_create,
    .destroy = nc_destroy,
    .connect = nc_connect,
    .publish = nc_publish,
    .finish = nc_finish,
    .receive = nc_receive,
    .copy_out = nc_copy_out,
    .release = nc_release,
    .cancel = nc_cancel,
    .join_trainers = nc_join_trainers,
    .sum = nc_sum,
};

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "timeout_s", .type = TERN_SETTING_FLOAT, .def = "300", .min = 1,
                 .max = 86400, .aka = "timeout",
                 .doc = "seconds a started transfer, or the communicator's forming, may take "
                        "before the run stops with a message (a peer is gone)"),
    TERN_SETTING(.name = "bucket_mb", .type = TERN_SETTING_INT, .def = "64", .min = 1,
                 .max = 4096, .aka = "bucket_size_mb",
                 .doc = "MiB per broadcast call: the flat weight buffer goes in buckets of this "
                        "size, never one call per tensor"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof(tern_plugin_descriptor),
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_TRANSPORT,
    .name = "nccl",
    .version = "0.1.0",
    .summary = "weights from the trainer's GPU to the explorer ranks' GPUs by NCCL broadcast, "
               "bucketed, with a timeout",
    .caps = TERN_CAP_GPU,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
