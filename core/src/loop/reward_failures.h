/* reward_failures.h: every response that got no verdict in a run (a reward
 * plugin that failed, crashed, hung or answered garbage), kept in the run
 * directory as reward_failures.jsonl so that one command reproduces it.
 *
 * A line is the task, as its file gave it, with the response added
 * ("response", "response_tokens"; bytes of it that are not UTF-8 become
 * U+FFFD, as JSON needs) and what went wrong under "tern_failure":
 * {"reward": "rewards[0]", "plugin": NAME, "failure": "crash", "reason": ...,
 * "stage": "rl" | "eval", "batch" | "version": N}. That is the input of
 * `tern reward score`, which ignores the fields it does not know:
 *
 *   tern reward score --plugin NAME [-o key=value]... < RUN/reward_failures.jsonl
 *
 * The first failure of each reward instance logs that command, with the
 * instance's settings as -o flags. The file is made at the first failure
 * (a run without one has none) and appended to on resume. */
#ifndef TERN_LOOP_REWARD_FAILURES_H
#define TERN_LOOP_REWARD_FAILURES_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "reward/rewarder.h"
#include "data/task.h"

typedef struct tern_failure_log {
    char path[4200];      /* DIR/reward_failures.jsonl */
    FILE *f;              /* opened at the first failure */
    uint8_t *said;        /* [routes]: the reproduce command was logged */
    size_t n_routes;
    uint64_t kept;        /* lines written */
    int broken;           /* a write failed (warned once): no more lines */
    int said_episode;     /* the first environment failure was logged */
    pthread_mutex_t lock; /* the master and its evaluation may both write */
} tern_failure_log;

/* Prepare the log for the run directory `dir` and the rewarder's routes;
 * nothing is written yet. TERN_OK or TERN_ENOMEM. */
int tern_failure_log_open(tern_failure_log *fl, const char *dir, const tern_rewarder *rw);
/* Keep the failed verdicts among v[0..n): texts[i] answers tasks[i]
 * (ntok[i] tokens). `stage` is "rl" or "eval"; `at` is the batch (rl) or the
 * weights version (eval). A file that cannot be written costs one warning
 * and no more lines, never the run. */
void tern_failure_log_keep(tern_failure_log *fl, const tern_rewarder *rw,
                          const tern_task *const *tasks, const char *const *texts,
                          const uint32_t *ntok, const tern_verdict *v, size_t n,
                          const char *stage, int64_t at);
/* Keep one trajectory that its environment (or a workflow's program) ended
 * with a failure (docs/agents.md, "Failures"): the task, the last turn's
 * text ("response"), and under "tern_failure" {SOURCE: PLUGIN (SOURCE
 * "environment" or "workflow", PLUGIN the plugin or the command),
 * "failure": NAME, "reason": ..., "turns": N, "stage": "rl" | "eval",
 * "batch" | "version": N}.
 * The first one of a run is also logged as a warning. A file that cannot be
 * written costs one warning, never the run. */
void tern_failure_log_keep_episode(tern_failure_log *fl, const char *source, const char *plugin,
                                   const tern_task *task, const char *text, uint32_t ntok,
                                   const char *failure, const char *reason, uint32_t turns,
                                   const char *stage, int64_t at);
/* Close the file and free; a zeroed log is fine. */
void tern_failure_log_close(tern_failure_log *fl);

#endif
