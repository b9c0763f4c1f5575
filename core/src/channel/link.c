/* link.c: the rank-to-rank link over MPI (see link.h). */
#include "channel/link.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

/* The launchers' environment: Open MPI's mpirun, PMIx (srun --mpi=pmix),
 * PMI-1/2 (MPICH's hydra, srun --mpi=pmi2). The first one set wins. */
int tern_link_launched(int *rank)
{
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
    static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const char *s = getenv(sizes[i]), *r = getenv(ranks[i]);
        if (s && *s) {
            int n = atoi(s);
            if (rank)
                *rank = r ? atoi(r) : 0;
            return n > 0 ? n : 1;
        }
    }
    if (rank)
        *rank = 0;
    return 1;
}

#ifndef TERN_HAVE_MPI

int tern_link_built(void) { return 0; }

#else

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

int tern_link_built(void) { return 1; }

enum { POLL_NS = 1000000 }; /* between two looks at MPI: 1 ms */

static void nap(void)
{
    struct timespec ts = {0, POLL_NS};
    nanosleep(&ts, NULL);
}

typedef struct letter {
    struct letter *next;
    void *buf;
    size_t len;
    int from;
} letter;

typedef struct mailbox {
    letter *head, *tail;
    int closed;
} mailbox;

struct tern_link {
    int rank, size;
    pthread_mutex_t lock;
    pthread_cond_t arrived;
    mailbox box[TERN_TAG_COUNT];
    pthread_t office;
    int office_on;
    atomic_int closing;   /* the post office stops after the closing barrier */
    MPI_Comm weights;     /* MPI_COMM_NULL unless a member */
    int weights_root;     /* the root's rank in `weights` */
    MPI_Comm trainers;    /* the trainer ranks; MPI_COMM_NULL unless a member */
    int failed;           /* the post office failed: every recv says so */
    char error[256];
};

static int mpi_error(int rc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", rc);
    return tern_errorf(TERN_ERR, "MPI: %s: %s", what, text);
}

/* Wait for a request by polling it (MPI_Test never blocks). */
static int wait_request(MPI_Request *req, const volatile int *cancel, const char *what)
{
    for (;;) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_error(rc, what);
        if (done)
            return TERN_OK;
        if (cancel && *cancel)
            return tern_errorf(TERN_ECLOSED, "MPI: %s: given up (the run is ending)", what);
        nap();
    }
}

static void post(tern_link *l, int tag, int from, void *buf, size_t len)
{
    letter *m = calloc(1, sizeof *m);
    pthread_mutex_lock(&l->lock);
    if (!m || tag <= 0 || tag >= TERN_TAG_COUNT) {
        /* unknown tags are a bug in the sender: dropped, with the bytes */
        free(buf);
        free(m);
    } else {
        *m = (letter){.buf = buf, .len = len, .from = from};
        mailbox *b = &l->box[tag];
        if (b->tail)
            b->tail->next = m;
        else
            b->head = m;
        b->tail = m;
        pthread_cond_broadcast(&l->arrived);
    }
    pthread_mutex_unlock(&l->lock);
}

/* The post office: every message to this rank, filed by tag. */
static void *office_main(void *arg)
{
    tern_link *l = arg;
    while (!atomic_load(&l->closing)) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        int rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
        if (rc == MPI_SUCCESS && !flag) {
            nap();
            continue;
        }
        int count = 0;
        if (rc == MPI_SUCCESS)
            rc = MPI_Get_count(&st, MPI_BYTE, &count);
        void *buf = count > 0 ? malloc((size_t)count) : NULL;
        if (rc == MPI_SUCCESS)
            rc = MPI_Mrecv(buf ? buf : &flag, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || (count > 0 && !buf)) {
            pthread_mutex_lock(&l->lock);
            l->failed = 1;
            snprintf(l->error, sizeof l->error, "rank %d: receiving a message from rank %d %s",
                     l->rank, st.MPI_SOURCE, rc != MPI_SUCCESS ? "failed" : ": out of memory");
            pthread_cond_broadcast(&l->arrived);
            pthread_mutex_unlock(&l->lock);
            free(buf);
            break;
        }
        post(l, st.MPI_TAG, st.MPI_SOURCE, buf, (size_t)count);
    }
    return NULL;
}

tern_link *tern_link_open(void)
{
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            mpi_error(rc, "MPI_Init_thread");
            return NULL;
        }
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        tern_errorf(TERN_EUNSUPPORTED, "MPI: this MPI library gives no MPI_THREAD_MULTIPLE "
                    "(the roles of a rank call MPI from several threads): use Open MPI 4 (Debian: "
                    "openmpi-bin libopenmpi-dev) or an MPI built with thread support");
        MPI_Finalize();
        return NULL;
    }
    tern_link *l = calloc(1, sizeof *l);
    if (!l) {
        tern_errorf(TERN_ENOMEM, "out of memory");
        MPI_Finalize();
        return NULL;
    }
    /* errors come back as codes, for a message naming what failed */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &l->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &l->size);
    l->weights = MPI_COMM_NULL;
    l->trainers = MPI_COMM_NULL;
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->arrived, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&l->office, NULL, office_main, l) != 0) {
        tern_errorf(TERN_ERR, "cannot start the MPI post office thread");
        pthread_cond_destroy(&l->arrived);
        pthread_mutex_destroy(&l->lock);
        free(l);
        MPI_Finalize();
        return NULL;
    }
    l->office_on = 1;
    return l;
}

int tern_link_rank(const tern_link *l) { return l->rank; }
int tern_link_size(const tern_link *l) { return l->size; }

int tern_link_send(tern_link *l, int to, tern_link_tag tag, const void *buf, size_t len)
{
    if (len > (size_t)1 << 31)
        return tern_errorf(TERN_EINVAL, "MPI: a message of %zu bytes to rank %d: more than the "
                           "2 GiB one message carries (a bug: weights go by broadcast)", len, to);
    if (atomic_load(&l->closing))
        return tern_errorf(TERN_ECLOSED, "MPI: the link is closing");
    MPI_Request req;
    int rc = MPI_Isend(len ? buf : NULL, (int)len, MPI_BYTE, to, (int)tag, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "sending a message");
    return wait_request(&req, NULL, "sending a message");
}

static void deadline_after(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int tern_link_recv(tern_link *l, tern_link_tag tag, int timeout_ms, void **buf, size_t *len,
                   int *from)
{
    *buf = NULL;
    *len = 0;
    if (tag <= 0 || tag >= TERN_TAG_COUNT)
        return tern_errorf(TERN_EINVAL, "MPI: no mailbox %d (a bug)", (int)tag);
    struct timespec until;
    if (timeout_ms >= 0)
        deadline_after(&until, timeout_ms);
    mailbox *b = &l->box[tag];
    pthread_mutex_lock(&l->lock);
    int rc = TERN_OK;
    while (!b->head && !b->closed && !l->failed) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&l->arrived, &l->lock);
        } else if (pthread_cond_timedwait(&l->arrived, &l->lock, &until) != 0) {
            if (!b->head && !b->closed && !l->failed)
                rc = TERN_ETIMEDOUT;
            break;
        }
    }
    letter *m = b->head;
    if (m) {
        b->head = m->next;
        if (!b->head)
            b->tail = NULL;
    } else if (rc == TERN_OK) {
        rc = l->failed ? tern_errorf(TERN_EIO, "MPI: %s", l->error) : TERN_ECLOSED;
    }
    pthread_mutex_unlock(&l->lock);
    if (!m)
        return rc;
    *buf = m->buf;
    *len = m->len;
    if (from)
        *from = m->from;
    free(m);
    return TERN_OK;
}

void tern_link_close_tag(tern_link *l, tern_link_tag tag)
{
    if (tag <= 0 || tag >= TERN_TAG_COUNT)
        return;
    pthread_mutex_lock(&l->lock);
    l->box[tag].closed = 1;
    pthread_cond_broadcast(&l->arrived);
    pthread_mutex_unlock(&l->lock);
}

int tern_link_agree(tern_link *l, int status, int *rank)
{
    /* the lowest (rank of a failure, else size): everyone learns the first
     * failing rank, then that rank's status in a second round */
    int mine = status != TERN_OK ? l->rank : l->size, first = l->size;
    MPI_Request req;
    int rc = MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS || (rc = wait_request(&req, NULL, "agreeing on a status")) != TERN_OK)
        return rc == TERN_OK ? TERN_ERR : (rc < 0 ? rc : mpi_error(rc, "agreeing on a status"));
    if (first == l->size) {
        *rank = -1;
        return TERN_OK;
    }
    int st = status;
    rc = MPI_Ibcast(&st, 1, MPI_INT, first, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "agreeing on a status");
    if ((rc = wait_request(&req, NULL, "agreeing on a status")) != TERN_OK)
        return rc;
    *rank = first;
    return st;
}

int tern_link_weights_group(tern_link *l, int member, int root)
{
    MPI_Comm c = MPI_COMM_NULL;
    /* the root first (key 0), so it is rank 0 of the group */
    int rc = MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED,
                            l->rank == root ? 0 : 1 + l->rank, &c);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "making the weights group");
    l->weights = c;
    l->weights_root = 0;
    if (c != MPI_COMM_NULL)
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return TERN_OK;
}

int tern_link_weights_place(tern_link *l, int *index, int *size)
{
    if (l->weights == MPI_COMM_NULL)
        return tern_errorf(TERN_EINVAL, "MPI: rank %d is not in the weights group (a bug)",
                           l->rank);
    MPI_Comm_rank(l->weights, index);
    MPI_Comm_size(l->weights, size);
    return TERN_OK;
}

int tern_link_bcast(tern_link *l, void *buf, size_t len, const volatile int *cancel)
{
    if (l->weights == MPI_COMM_NULL)
        return tern_errorf(TERN_EINVAL, "MPI: rank %d is not in the weights group (a bug)",
                           l->rank);
    const size_t chunk = (size_t)1 << 30;
    for (size_t at = 0; at < len || (len == 0 && at == 0); at += chunk) {
        size_t n = len - at < chunk ? len - at : chunk;
        MPI_Request req;
        int rc = MPI_Ibcast((char *)buf + at, (int)n, MPI_BYTE, l->weights_root, l->weights,
                            &req);
        if (rc != MPI_SUCCESS)
            return mpi_error(rc, "broadcasting weights");
        if ((rc = wait_request(&req, cancel, "broadcasting weights")) != TERN_OK)
            return rc;
        if (len == 0)
            break;
    }
    return TERN_OK;
}

int tern_link_trainers_group(tern_link *l, int member)
{
    MPI_Comm c = MPI_COMM_NULL;
    int rc = MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, l->rank, &c);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "making the trainer ranks' group");
    l->trainers = c;
    if (c != MPI_COMM_NULL)
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return TERN_OK;
}

static int trainers_wait(MPI_Request *req, int rc, const volatile int *cancel, const char *what)
{
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, what);
    return wait_request(req, cancel, what);
}

static int in_trainers(const tern_link *l)
{
    return l->trainers != MPI_COMM_NULL
               ? TERN_OK
               : tern_errorf(TERN_EINVAL, "MPI: rank %d is not a trainer rank (a bug)", l->rank);
}

int tern_link_trainers_agree(tern_link *l, int status, int *who, const volatile int *cancel)
{
    int rc = in_trainers(l);
    if (rc != TERN_OK)
        return rc;
    int me = 0, n = 0;
    MPI_Comm_rank(l->trainers, &me);
    MPI_Comm_size(l->trainers, &n);
    /* the lowest failing member, then its status (as tern_link_agree) */
    int mine = status != TERN_OK ? me : n, first = n;
    MPI_Request req;
    rc = MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, l->trainers, &req);
    if ((rc = trainers_wait(&req, rc, cancel, "the trainer ranks agreeing")) != TERN_OK)
        return rc;
    *who = first < n ? first : -1;
    if (first == n)
        return TERN_OK;
    int st = status;
    rc = MPI_Ibcast(&st, 1, MPI_INT, first, l->trainers, &req);
    if ((rc = trainers_wait(&req, rc, cancel, "the trainer ranks agreeing")) != TERN_OK)
        return rc;
    return st != TERN_OK ? st : TERN_ERR;
}

int tern_link_trainers_gather(tern_link *l, float *buf, const int *counts, const int *displs,
                              const volatile int *cancel)
{
    int rc = in_trainers(l);
    if (rc != TERN_OK)
        return rc;
    MPI_Request req;
    rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_FLOAT,
                         l->trainers, &req);
    return trainers_wait(&req, rc, cancel, "gathering the trainer ranks' scores");
}

int tern_link_trainers_bcast(tern_link *l, void *buf, size_t len)
{
    int rc = in_trainers(l);
    if (rc != TERN_OK)
        return rc;
    if (len > (size_t)INT_MAX)
        return tern_errorf(TERN_EINVAL, "MPI: a bootstrap of %zu bytes (a bug)", len);
    rc = MPI_Bcast(buf, (int)len, MPI_BYTE, 0, l->trainers);
    return rc == MPI_SUCCESS ? TERN_OK : mpi_error(rc, "broadcasting among the trainer ranks");
}

int tern_link_trainers_place(tern_link *l, int *index, int *size)
{
    int rc = in_trainers(l);
    if (rc != TERN_OK)
        return rc;
    MPI_Comm_rank(l->trainers, index);
    MPI_Comm_size(l->trainers, size);
    return TERN_OK;
}

int tern_link_trainers_sum(tern_link *l, float *buf, size_t n, const volatile int *cancel)
{
    int rc = in_trainers(l);
    if (rc != TERN_OK)
        return rc;
    /* Blocking, the one wait on ranks that is not polled: the caller agreed
     * with every member just before (tern_link_trainers_agree), so nobody
     * waits here for a late peer, and a nonblocking allreduce polled every
     * 1 ms advances a round per poll (measured: 3x slower from 16 MiB,
     * bench_weights_bcast). */
    (void)cancel;
    const size_t chunk = (size_t)1 << 30; /* MPI counts are int */
    for (size_t at = 0; at < n; at += chunk) {
        int k = (int)(n - at < chunk ? n - at : chunk);
        rc = MPI_Allreduce(MPI_IN_PLACE, buf + at, k, MPI_FLOAT, MPI_SUM, l->trainers);
        if (rc != MPI_SUCCESS)
            return mpi_error(rc, "summing the trainer ranks' gradients");
    }
    return TERN_OK;
}

int tern_link_trainers_same(tern_link *l, uint64_t value, int *same,
                            const volatile int *cancel)
{
    int rc = in_trainers(l);
    if (rc != TERN_OK)
        return rc;
    uint64_t lo = 0, hi = 0;
    MPI_Request req[2];
    rc = MPI_Iallreduce(&value, &lo, 1, MPI_UINT64_T, MPI_MIN, l->trainers, &req[0]);
    if ((rc = trainers_wait(&req[0], rc, cancel, "comparing the trainer ranks")) != TERN_OK)
        return rc;
    rc = MPI_Iallreduce(&value, &hi, 1, MPI_UINT64_T, MPI_MAX, l->trainers, &req[1]);
    if ((rc = trainers_wait(&req[1], rc, cancel, "comparing the trainer ranks")) != TERN_OK)
        return rc;
    *same = lo == hi;
    return TERN_OK;
}

void tern_link_close(tern_link *l)
{
    if (!l)
        return;
    /* everyone's messages are in before the post office closes */
    MPI_Request req;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &req) == MPI_SUCCESS)
        wait_request(&req, NULL, "the closing barrier");
    atomic_store(&l->closing, 1);
    if (l->office_on)
        pthread_join(l->office, NULL);
    if (l->weights != MPI_COMM_NULL)
        MPI_Comm_free(&l->weights);
    if (l->trainers != MPI_COMM_NULL)
        MPI_Comm_free(&l->trainers);
    for (int t = 0; t < TERN_TAG_COUNT; t++) {
        for (letter *m = l->box[t].head, *next; m; m = next) {
            next = m->next;
            free(m->buf);
            free(m);
        }
    }
    pthread_cond_destroy(&l->arrived);
    pthread_mutex_destroy(&l->lock);
    free(l);
    MPI_Finalize();
}

_Noreturn void tern_link_abort(tern_link *l, int code)
{
    (void)l;
    MPI_Abort(MPI_COMM_WORLD, code);
    abort(); /* MPI_Abort does not return */
}

#endif
