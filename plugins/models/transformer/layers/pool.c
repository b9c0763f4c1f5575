/* pool.c: a team of threads that run one function at a time (see pool.h).
 *
 * A call is a generation: the caller publishes fn and arg, sets `pending` to
 * the workers' count and bumps `generation`; each worker runs its share and
 * counts `pending` down; the caller runs share 0, then waits for 0.
 *
 * Waiting spins first, then sleeps. A decode step of generation makes about
 * ten calls per layer, each a few tens of microseconds of work, and a wake-up
 * through a condition variable costs about as much (the kernel's futex, the
 * scheduler putting the thread back on a core): measured 40-60 us per call
 * with condition variables alone. So a worker that finished spins on
 * `generation` for up to SPIN_NS before it sleeps, and the caller spins on
 * `pending` as long before it sleeps; a wait longer than that (the pool idle
 * between passes, or a long share) costs one wake-up as before, and the
 * spinning never holds a core longer than SPIN_NS past the last work.
 * pool_set_spin (the plugin's `spin_us`) changes that bound: on a machine
 * whose cores other work needs, a spinner takes the core from it (measured:
 * the quickstart beside one CPU-bound process took 101 s spinning 100 us,
 * 64 s not spinning; docs/models.md).
 *
 * Sleeping without lost wake-ups: a sleeper announces itself (`sleepers`,
 * `caller_asleep`) before it checks its condition under the lock, and the
 * waker changes the condition before it reads the announcement (all
 * sequentially consistent atomics): either the sleeper sees the new value, or
 * the waker sees the sleeper and signals under the lock.
 */
#include "layers/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* How long a waiter spins before it sleeps (ns). */
#define SPIN_NS 100000L

struct pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    atomic_ulong generation;
    atomic_int pending, stop;
    atomic_int sleepers;      /* workers asleep (or about to be) on `work` */
    atomic_int caller_asleep; /* the caller asleep (or about to be) on `done` */
    atomic_long spin_ns;      /* how long a waiter spins before it sleeps; 0: never */
    void (*fn)(void *, int, int);
    void *arg;
};

typedef struct worker_arg {
    pool *p;
    int w;
} worker_arg;

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* A worker's wait is over: a new call, or the pool stopping. */
static int call_posted(pool *p, unsigned long seen)
{
    return atomic_load_explicit(&p->generation, memory_order_acquire) != seen ||
           atomic_load_explicit(&p->stop, memory_order_relaxed);
}

/* The caller's wait is over: every worker's share done. */
static int shares_done(pool *p, unsigned long unused)
{
    (void)unused;
    return atomic_load_explicit(&p->pending, memory_order_acquire) == 0;
}

/* Spin until ready(p, arg), for at most the pool's spin_ns; 1 if it came.
 * The clock is read once every 64 turns. */
static int spin(pool *p, int (*ready)(pool *, unsigned long), unsigned long arg)
{
    long limit = atomic_load_explicit(&p->spin_ns, memory_order_relaxed);
    if (limit <= 0)
        return ready(p, arg);
    long t0 = now_ns();
    for (unsigned turn = 1;; turn++) {
        if (ready(p, arg))
            return 1;
        cpu_relax();
        if (turn % 64 == 0 && now_ns() - t0 > limit)
            return 0;
    }
}

static void *worker(void *a)
{
    worker_arg *wa = a;
    pool *p = wa->p;
    int w = wa->w;
    free(wa);
    unsigned long seen = 0;
    for (;;) {
        if (!spin(p, call_posted, seen)) {
            pthread_mutex_lock(&p->lock);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->work, &p->lock);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load(&p->stop))
            break;
        seen = atomic_load(&p->generation);
        p->fn(p->arg, w, p->n); /* published before generation moved */
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_asleep)) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
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
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_asleep, 0);
    atomic_init(&p->spin_ns, SPIN_NS);
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
    atomic_store(&p->stop, 1);
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

void pool_set_spin(pool *p, long ns)
{
    if (p)
        atomic_store(&p->spin_ns, ns > 0 ? ns : 0);
}

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
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->pending, p->n - 1);
    atomic_fetch_add(&p->generation, 1); /* publishes fn, arg and pending */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->work);
        pthread_mutex_unlock(&p->lock);
    }
    fn(arg, 0, p->n);
    if (spin(p, shares_done, 0))
        return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->caller_asleep, 1);
    while (atomic_load(&p->pending) > 0)
        pthread_cond_wait(&p->done, &p->lock);
    atomic_store(&p->caller_asleep, 0);
    pthread_mutex_unlock(&p->lock);
}
