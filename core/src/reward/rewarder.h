/* rewarder.h: reward routing (docs/architecture.md §2), for a run's master and for
 * `tern reward score`. Each response goes to the reward plugins configured
 * for its task's domain; its reward is the weighted sum of theirs, its
 * accuracy the "accuracy" component of the first of them that gives one
 * (else 0, and the verdict is not `judged`: a reward alone says nothing of
 * right or wrong, docs/rewards.md). A plugin that fails, crashes, hangs or answers garbage
 * costs the responses it was judging (scored 0, marked failed, the reason
 * counted), never the caller. A route with `isolate = true` runs its plugin
 * in a supervised worker process (reward/worker.h). */
#ifndef TERN_REWARD_REWARDER_H
#define TERN_REWARD_REWARDER_H

#include "base/export.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "data/task_file.h"
#include "experience/experience.h"
#include "rundir/metrics.h"
#include "reward/worker.h"
#include "host/session.h"
#include "tern/reward.h"

/* One reward plugin instance and where its responses come from. */
typedef struct tern_reward_route {
    const char *domain;  /* tasks of this domain; NULL: every task */
    const char *label;   /* "rewards[0]" */
    const tern_reward_ops *ops;
    void *state;         /* the in-process instance (unused when isolated) */
    tern_ctx *ctx;
    double weight;
    int thread_safe;     /* TERN_CAP_THREAD_SAFE: calls need no lock */
    int64_t timeout_ms;  /* isolated: per response; 0 none */
    uint64_t watchdog_ns; /* in process: the watchdog names a call this long; 0 never */
    tern_reward_worker *worker; /* isolated routes only */
    const tern_instance *instance; /* its config group and plugin (the session's) */
    pthread_mutex_t lock; /* one call at a time (not thread-safe, or isolated) */
} tern_reward_route;

/* Score route `route`'s m items somewhere else (a run's reward-worker ranks,
 * loop/ranks_reward.c) instead of its own instance or worker: fill res[k]
 * (reward, reason, components whose names stay valid until the hook is
 * removed) and fail[k] as the isolated worker does. TERN_OK or TERN_ENOMEM;
 * responses that get no verdict are failures, not an error. */
typedef int (*tern_reward_remote_fn)(void *arg, size_t route, const tern_reward_item *items,
                                     tern_reward_result *res, tern_reward_failure *fail,
                                     size_t m);

typedef struct tern_rewarder {
    tern_reward_route *routes;
    size_t n;
    uint64_t restarts; /* isolated workers restarted, all routes (under the locks) */
    tern_reward_remote_fn remote; /* NULL: every route scores here */
    void *remote_arg;
} tern_rewarder;

/* The verdict on one response. */
typedef struct tern_verdict {
    double reward;
    double accuracy; /* 1 right, 0 wrong */
    int judged;      /* a route gave an "accuracy" component; else accuracy is 0 */
    int failed;      /* some route gave no verdict: it counts 0 */
    /* why, for the first failed route: "error", "nonfinite", "crash",
     * "timeout", "garbage", "start" (tern_reward_failure_name); NULL if none */
    const char *failure;
    uint32_t failure_code; /* the same as a tern_reward_failure (0: none), as records keep it */
    size_t failed_route;   /* the index in routes of that first failed route (when failed) */
    /* the named components the plugins gave (finite values, in route order;
     * the first TERN_EXPERIENCE_MAX_PARTS), as the experience keeps them */
    uint32_t n_parts;
    char part_name[TERN_EXPERIENCE_MAX_PARTS][TERN_EXPERIENCE_NAME_MAX + 1];
    double part_value[TERN_EXPERIENCE_MAX_PARTS];
    /* the first route's reason (or its failure), printable */
    char reason[TERN_REWARD_REASON_MAX];
} tern_verdict;

/* Build the routes from the session's reward instances and start the
 * isolated ones' workers. TERN_ECONFIG for a `timeout_ms` without
 * `isolate` or a plugin that does not start in its worker. Close it
 * whatever the result. */
TERN_INTERNAL int tern_rewarder_open(tern_rewarder *rw, tern_session *s);
/* Stop the workers; free the routes. A zeroed rewarder is fine. */
TERN_INTERNAL void tern_rewarder_close(tern_rewarder *rw);
/* Check that every domain of `set` has a route: TERN_ECONFIG naming the
 * domain, how many tasks have it, and the fix. */
int tern_rewarder_check_domains(const tern_rewarder *rw, const tern_task_set *set);
/* Route `route`'s own instance (or isolated worker) on m items, as
 * tern_rewarder_score calls it, never the remote hook: what a reward-worker
 * rank runs for the master. TERN_OK or TERN_ENOMEM. */
TERN_INTERNAL int tern_rewarder_route_score(tern_rewarder *rw, size_t route,
                                            const tern_reward_item *items,
                                            tern_reward_result *res, tern_reward_failure *fail,
                                            size_t m);
/* Score n responses. texts[i] answers tasks[i]; ntok[i] is its token count.
 * Each response without a verdict from one of its routes is marked failed
 * and counted in *failures; with `observe`, "reward/failed/<why>" is observed
 * (1) for it, and each named component a plugin gives as "reward/<name>".
 * Safe from several threads. TERN_ENOMEM only. */
TERN_INTERNAL int tern_rewarder_score(tern_rewarder *rw, const tern_task *const *tasks,
                        const char *const *texts, const uint32_t *ntok, size_t n,
                        tern_verdict *out, uint64_t *failures, tern_metrics *observe);

#endif
