/* pool.h: a fixed team of threads owned by one model instance, so that each
 * instance uses exactly its `threads` setting (OpenBLAS's own thread count is
 * global to the process, so it is kept at 1 and the work is split here). */
#ifndef TERN_POOL_H
#define TERN_POOL_H

typedef struct pool pool;

/* n >= 1 workers: the caller plus n - 1 threads. NULL on failure. */
pool *pool_new(int n);
void pool_free(pool *p);
/* Workers in the team (1 for a NULL pool). */
int pool_size(const pool *p);
/* How long a waiting thread spins before it sleeps (ns; default 100000, 0:
 * it sleeps at once). Safe between pool_run calls; no-op for a NULL pool. */
void pool_set_spin(pool *p, long ns);
/* Run fn(arg, w, n) for w = 0..n-1 concurrently (w = 0 on the caller) and
 * wait for all. With a NULL pool, runs fn(arg, 0, 1) inline. Not reentrant. */
void pool_run(pool *p, void (*fn)(void *arg, int w, int n), void *arg);
/* The half-open share [*lo, *hi) of `total` items for worker w of n. */
void pool_share(int total, int w, int n, int *lo, int *hi);
/* The half-open share [*c0, *c1) of the columns 0..d-1 for worker w of n, in
 * blocks of 16 (whole 64-byte cache lines of a float row): for sums over
 * every row into one [d] vector, as the norms' weight gradients. */
void pool_share_columns(int d, int w, int n, int *c0, int *c1);

#endif
