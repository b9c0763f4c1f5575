/* trajectories.h: an explorer's batch as trajectories of turns with the
 * run's environment (loop/trajectories.c, docs/agents.md). */
#ifndef TERN_LOOP_TRAJECTORIES_H
#define TERN_LOOP_TRAJECTORIES_H

#include <stddef.h>
#include <stdint.h>

#include "channel/messages.h"
#include "loop/traj_plan.h"
#include "loop/turn_tokens.h"
#include "model/model.h"

struct tern_run;
struct tern_task;


/* Sample the plan's trajectories with the run's environment into *out (as
 * the one-answer explorer fills it, each response a trajectory; out's batch,
 * version and explorer are the caller's). An episode that fails ends its
 * trajectory (kept, with its failure); TERN_OK, or a status with a message
 * when the model or the environment plugin itself failed. */
int tern_sample_trajectories(struct tern_run *run, const tern_traj_plan *plan,
                             tern_rollout_msg *out);

/* Explorer `id`'s batch `job` as trajectories (tern_sample_trajectories
 * with the run's explorer settings). */
int tern_explore_trajectories(struct tern_run *run, uint32_t id,
                              const struct tern_explore_job *job, tern_rollout_msg *out);

/* Whether the run samples trajectories (an environment, tools, or a
 * workflow's programs) rather
 * than one answer per sample. */
#define TERN_RUN_TRAJECTORIES(run) \
    ((run)->env_ops != NULL || (run)->tools.n > 0 || (run)->set.has_workflow)

/* The verdicts v[0..n) on r's trajectories (tasks[i] the task of
 * r->resp[i]) made returns (docs/agents.md, "Rewards"): each reward plus the
 * sum of its turns' rewards; a trajectory no reward plugin judged is right
 * (accuracy 1) when its environment said done and its return is above 0,
 * and counts as judged when `judge`. A trajectory its environment failed is
 * kept in reward_failures.jsonl (`stage` "rl" at batch `at`, "eval" at
 * weights version `at`). */
struct tern_verdict;
void tern_trajectory_returns(struct tern_run *run, const tern_rollout_msg *r,
                             const struct tern_task *const *tasks, struct tern_verdict *v,
                             size_t n, int judge, const char *stage, int64_t at);

/* "ok", "error", "crash", "timeout", "garbage", "after_done", "start"; "?"
 * for a code that names nothing. */
const char *tern_env_failure_name(uint32_t failure);

/* "answer", "done", "max_turns", "context", "failed" (a tern_traj_end); "?"
 * for a code that names nothing. */
const char *tern_traj_end_name(uint32_t end);

#endif
