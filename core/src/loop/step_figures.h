/* step_figures.h: what an RL step's line in metrics.jsonl and its lines in
 * rollouts.jsonl say about the groups it trained on, computed by the
 * trainer from the group records themselves (docs/run.md "Metrics"). */
#ifndef TERN_LOOP_STEP_FIGURES_H
#define TERN_LOOP_STEP_FIGURES_H

#include "experience/experience.h"
#include "loop/run.h"

/* Set rep->figures, rep->batch and rep->rollout_version from the n groups g
 * (the rewards as scored: before the trainer's KL and length terms), and
 * rep->groups to one rollouts.jsonl line per group with "step" = step (the
 * response shown is the group's first, detokenized by the policy). The
 * figures: reward_mean, reward_std (over every response), accuracy,
 * accuracy/<domain>, response_length (tokens), truncated_frac (ended by the
 * length limit), reward_failures (responses without a verdict), groups, and
 * each reward component as reward/<name> (mean, .count) and each failure as
 * reward/failed/<why>. TERN_ENOMEM, or the model's detokenize failure. */
int tern_step_figures(tern_run *run, const tern_experience *g, size_t n, int64_t step,
                      tern_step_msg *rep);

#endif
