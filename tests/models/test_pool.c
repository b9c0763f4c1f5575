/* test_pool.c: the transformer's thread team (layers/pool.c), whose workers
 * spin a while after each call and then sleep: every call runs every share
 * exactly once and returns after all of them, back to back (the spinning
 * path), after pauses longer than the spin (the sleeping path), and mixed;
 * and with no spin at all (spin_us = 0). */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "layers/pool.h"

#define WORKERS 3

typedef struct count_job {
    int calls[WORKERS];   /* per worker: shares run (each worker writes its own) */
    atomic_int in_call;   /* shares of the current call run so far */
    int n_seen[WORKERS];  /* the n each worker was given */
} count_job;

static void count_part(void *arg, int w, int n)
{
    count_job *j = arg;
    j->calls[w]++;
    j->n_seen[w] = n;
    atomic_fetch_add(&j->in_call, 1);
}

static void pause_us(long us)
{
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

Test(pool, every_share_runs_once_per_call_spinning_or_sleeping, .timeout = 60)
{
    pool *p = pool_new(WORKERS);
    cr_assert_not_null(p);
    cr_assert_eq(pool_size(p), WORKERS);
    count_job j;
    memset(&j, 0, sizeof j);
    atomic_init(&j.in_call, 0);
    const int calls = 20000;
    for (int c = 0; c < calls; c++) {
        if (c % 500 == 0)
            pause_us(300); /* longer than the spin: the workers sleep, then wake */
        atomic_store(&j.in_call, 0);
        pool_run(p, count_part, &j);
        cr_assert_eq(atomic_load(&j.in_call), WORKERS, "call %d returned after %d of %d shares",
                     c, atomic_load(&j.in_call), WORKERS);
    }
    for (int w = 0; w < WORKERS; w++) {
        cr_expect_eq(j.calls[w], calls, "worker %d ran %d shares for %d calls", w, j.calls[w],
                     calls);
        cr_expect_eq(j.n_seen[w], WORKERS);
    }
    pool_free(p);
}

Test(pool, a_pool_of_one_and_none_run_inline)
{
    count_job j;
    memset(&j, 0, sizeof j);
    pool_run(NULL, count_part, &j);
    pool *p = pool_new(1);
    cr_assert_not_null(p);
    pool_run(p, count_part, &j);
    cr_expect_eq(j.calls[0], 2);
    cr_expect_eq(pool_size(NULL), 1);
    pool_free(p);
    cr_expect_null(pool_new(0));
}

Test(pool, freed_while_its_workers_sleep_or_spin)
{
    for (int round = 0; round < 50; round++) {
        pool *p = pool_new(WORKERS);
        cr_assert_not_null(p);
        count_job j;
        memset(&j, 0, sizeof j);
        pool_run(p, count_part, &j);
        if (round % 2)
            pause_us(300); /* asleep at the free; else still spinning */
        pool_free(p);
    }
}

/* spin_us = 0: every waiter sleeps at once, and every share still runs once */
Test(pool, never_spinning_runs_every_share_once, .timeout = 60)
{
    pool *p = pool_new(WORKERS);
    cr_assert_not_null(p);
    pool_set_spin(p, 0);
    count_job j;
    memset(&j, 0, sizeof j);
    const int calls = 3000;
    for (int c = 0; c < calls; c++) {
        if (c % 500 == 0)
            pause_us(300);
        atomic_store(&j.in_call, 0);
        pool_run(p, count_part, &j);
        cr_assert_eq(atomic_load(&j.in_call), WORKERS, "call %d", c);
    }
    for (int w = 0; w < WORKERS; w++)
        cr_expect_eq(j.calls[w], calls);
    pool_set_spin(p, 100000); /* and back */
    pool_run(p, count_part, &j);
    cr_expect_eq(j.calls[0], calls + 1);
    pool_free(p);
}
