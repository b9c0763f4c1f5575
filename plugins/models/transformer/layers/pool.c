/* pool.c: a team of threads that run one function at a time (see pool.h).
 * A generation counter under one mutex: the caller bumps it and wakes the
 * workers, runs its own share, then waits until every worker has finished. */
#include "layers/pool.h"

#include <pthread.h>
#include <stdlib.h>

struct pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    unsigned long generation;
    int pending, stop;
    void (*fn)(void *, int, int);
    void *arg;
};

typedef struct worker_arg {
    pool *p;
    int w;
} worker_arg;

static void *worker(void *a)
{
    worker_arg *wa = a;
    pool *p = wa->p;
    int w = wa->w;
    free(wa);
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->generation == seen && !p->stop)
            pthread_cond_wait(&p->work, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        void (*fn)(void *, int, int) = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->lock);
        fn(arg, w, p->n);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

pool *pool_new(int n)
{
    pool *p = calloc(1, sizeof *p);
    if (!p || n < 1) {
        free(p);
        return NULL;
    }
    p->n = n;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = calloc((size_t)n, sizeof *p->threads);
    if (!p->threads) {
        pool_free(p);
        return NULL;
    }
    for (int w = 1; w < n; w++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (wa)
            *wa = (worker_arg){p, w};
        if (!wa || pthread_create(&p->threads[w], NULL, worker, wa) != 0) {
            free(wa);
            p->n = w; /* only threads 1..w-1 exist */
            pool_free(p);
            return NULL;
        }
    }
    return p;
}

void pool_free(pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int w = 1; p->threads && w < p->n; w++)
        pthread_join(p->threads[w], NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
}

int pool_size(const pool *p) { return p ? p->n : 1; }

void pool_share(int total, int w, int n, int *lo, int *hi)
{
    *lo = (int)((long long)total * w / n);
    *hi = (int)((long long)total * (w + 1) / n);
}

void pool_share_columns(int d, int w, int n, int *c0, int *c1)
{
    pool_share((d + 15) / 16, w, n, c0, c1);
    *c0 *= 16;
    *c1 = *c1 * 16 < d ? *c1 * 16 : d;
}

void pool_run(pool *p, void (*fn)(void *arg, int w, int n), void *arg)
{
    if (!p || p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->pending = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    fn(arg, 0, p->n);
    pthread_mutex_lock(&p->lock);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
