/* trajectories.h: an explorer's batch as trajectories of turns with the
 * run's environment (loop/trajectories.c, docs/agents.md). */
#ifndef TERN_LOOP_TRAJECTORIES_H
#define TERN_LOOP_TRAJECTORIES_H

#include <stddef.h>
#include <stdint.h>

#include "channel/messages.h"
#include "model/model.h"

struct tern_run;

/* Sample job's G trajectories per task with explorer `id`'s model and the
 * run's environment into *out (as the one-answer explorer fills it, each
 * response a trajectory). An episode that fails ends its trajectory (kept,
 * with its failure); TERN_OK, or a status with a message when the model or
 * the environment plugin itself failed. */
int tern_explore_trajectories(struct tern_run *run, uint32_t id,
                              const struct tern_explore_job *job, tern_rollout_msg *out);

/* The tokens model m's chat template puts after an assistant turn's
 * end-of-turn token `eos` for a user turn `observation` (after an optional
 * system turn): our own array of *n (+1) ids. TERN_EUNSUPPORTED with a
 * message for a template that is not prefix-stable there. */
int tern_observation_tokens(const tern_model *m, int32_t eos, const char *system,
                            const char *observation, int32_t **ids, size_t *n);

/* "ok", "error", "crash", "timeout", "garbage", "after_done", "start"; "?"
 * for a code that names nothing. */
const char *tern_env_failure_name(uint32_t failure);

#endif
