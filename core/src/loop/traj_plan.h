/* traj_plan.h: what an explorer's batch of trajectories is to sample
 * (loop/trajectories.c with an environment or tools, loop/workflows.c with
 * a workflow's programs). */
#ifndef TERN_LOOP_TRAJ_PLAN_H
#define TERN_LOOP_TRAJ_PLAN_H

#include <stdint.h>

#include "model/model.h"

struct tern_task;

/* What to sample: G trajectories of each of n tasks, with model m. */
typedef struct tern_traj_plan {
    const tern_model *m;
    uint32_t n, G;
    const struct tern_task *const *tasks; /* [n] */
    const uint32_t *task_index;           /* [n] their index in their set */
    char *const *prompt;                  /* [n] the tasks' prompts */
    char *const *system;                  /* [n] system turns, NULL entries for none */
    uint32_t max_tokens;                  /* per model turn */
    float temperature, top_p;             /* 0: greedy */
    int32_t top_k;
    const char *stream;                   /* names the seeds: "explore", "eval" */
    uint64_t at;                          /* and numbers them: the batch, the version */
} tern_traj_plan;

#endif
