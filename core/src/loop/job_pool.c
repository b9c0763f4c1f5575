/* job_pool.c: an explorer's job threads (see job_pool.h). */
#include "loop/job_pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/errmsg.h"

typedef struct queued {
    void *job;
    size_t g;
} queued;

struct tern_job_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    queued *q;             /* a ring of cap entries */
    size_t head, count, cap;
    size_t pending[TERN_JOB_POOL_GROUPS]; /* queued or running */
    int stop;
    void (*fn)(void *job);
    pthread_t threads[TERN_JOB_POOL_THREADS];
    size_t n_threads;
};

static void *worker(void *arg)
{
    tern_job_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->count && !p->stop)
            pthread_cond_wait(&p->work, &p->mu);
        if (!p->count)
            break; /* stopping, and nothing left */
        queued e = p->q[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        pthread_mutex_unlock(&p->mu);
        p->fn(e.job);
        pthread_mutex_lock(&p->mu);
        p->pending[e.g]--;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int tern_job_pool_start(tern_job_pool **out, size_t threads, void (*fn)(void *job))
{
    *out = NULL;
    if (threads < 1)
        threads = 1;
    if (threads > TERN_JOB_POOL_THREADS)
        threads = TERN_JOB_POOL_THREADS;
    tern_job_pool *p = calloc(1, sizeof *p);
    if (!p)
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->fn = fn;
    for (size_t i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
            tern_job_pool_stop(p);
            return tern_errorf(TERN_ERR, "explorer: cannot start a thread for the "
                               "environment's steps");
        }
        p->n_threads++;
    }
    *out = p;
    return TERN_OK;
}

int tern_job_pool_submit(tern_job_pool *p, void *job, size_t g)
{
    pthread_mutex_lock(&p->mu);
    if (p->count == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        queued *q = malloc(cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&p->mu);
            return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        }
        for (size_t i = 0; i < p->count; i++) /* unroll the ring */
            q[i] = p->q[(p->head + i) % p->cap];
        free(p->q);
        p->q = q, p->head = 0, p->cap = cap;
    }
    p->q[(p->head + p->count) % p->cap] = (queued){job, g};
    p->count++;
    p->pending[g]++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    return TERN_OK;
}

void tern_job_pool_wait(tern_job_pool *p, size_t g)
{
    pthread_mutex_lock(&p->mu);
    while (p->pending[g])
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void tern_job_pool_stop(tern_job_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p->q);
    free(p);
}
