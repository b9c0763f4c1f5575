/* workflows.h: a batch's trajectories run by the user's program, one run of
 * it per trajectory, calling the policy over an OpenAI endpoint of its own
 * (loop/workflows.c, docs/agents.md "Workflows"). */
#ifndef TERN_LOOP_WORKFLOWS_H
#define TERN_LOOP_WORKFLOWS_H

#include "channel/messages.h"
#include "loop/traj_plan.h"

struct tern_run;

/* Sample the plan's trajectories with the run's workflow into *out, as
 * tern_sample_trajectories does with an environment: each trajectory is its
 * program's calls in order, token for token; a program that fails costs its
 * trajectory (kept, with its failure). TERN_OK, or a status with a message
 * when tern itself failed (the model, the server, out of memory). */
int tern_sample_workflows(struct tern_run *run, const tern_traj_plan *plan,
                          tern_rollout_msg *out);

#endif
