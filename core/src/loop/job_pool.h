/* job_pool.h: a few threads that run an explorer's jobs while it decodes
 * (loop/trajectories.c: a wave's environment steps and tool calls). Jobs
 * belong to a group (a wave); the caller waits for one group's jobs. The
 * jobs must not call the model (its ops stay on the explorer's thread). */
#ifndef TERN_LOOP_JOB_POOL_H
#define TERN_LOOP_JOB_POOL_H

#include <stddef.h>

/* The most groups (waves) a pool tells apart, and threads it starts. */
#define TERN_JOB_POOL_GROUPS 16
#define TERN_JOB_POOL_THREADS 32

typedef struct tern_job_pool tern_job_pool;

/* Start `threads` (1..TERN_JOB_POOL_THREADS) threads that run fn(job) for
 * each job submitted: TERN_OK with *out, or a status with a message. */
int tern_job_pool_start(tern_job_pool **out, size_t threads, void (*fn)(void *job));
/* Queue job in group g (< TERN_JOB_POOL_GROUPS): TERN_OK, or TERN_ENOMEM
 * (then it was not queued). */
int tern_job_pool_submit(tern_job_pool *p, void *job, size_t g);
/* Until every job of group g submitted so far has run. */
void tern_job_pool_wait(tern_job_pool *p, size_t g);
/* Wait for every job, stop the threads and free the pool. NULL is fine. */
void tern_job_pool_stop(tern_job_pool *p);

#endif
