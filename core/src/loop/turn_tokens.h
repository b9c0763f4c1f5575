/* turn_tokens.h: the tokens a trajectory's chat turns are made of, from the
 * model's own template (docs/agents.md, "Templates and token exactness"):
 * the first prompt, with the tools described, and what follows a model's
 * turn for an observation or for the answers of its tool calls: render k+1
 * messages, take what follows the rendering of k, so the trained ids are the
 * template's, appended and never rendered again. */
#ifndef TERN_LOOP_TURN_TOKENS_H
#define TERN_LOOP_TURN_TOKENS_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

struct tern_run;

/* The tokens model m's chat template puts after an assistant turn's
 * end-of-turn token `eos` for a user turn `observation` (after an optional
 * system turn): our own array of *n (+1) ids. TERN_EUNSUPPORTED with a
 * message for a template that is not prefix-stable there. */
int tern_observation_tokens(const tern_model *m, int32_t eos, const char *system,
                            const char *observation, int32_t **ids, size_t *n);

/* The first turn's ids of a trajectory: the task's prompt after an optional
 * system turn, with the run's tools described (the template's tool block, or
 * tern's in the system turn when it has none; docs/agents.md, "Tools"); as
 * tern_run_prompt without tools. Our own array of *n (+1) ids. */
int tern_traj_prompt(const struct tern_run *run, const tern_model *m, const char *system,
                     const char *prompt, int32_t **ids, size_t *n);

/* The tokens model m's template puts after an assistant turn's end-of-turn
 * token `eos` for k `tool` turns (names[i]: the function, outputs[i]: what
 * it answered), after an optional system turn: our own array of *n (+1)
 * ids. TERN_EUNSUPPORTED with a message for a template that cannot render
 * them or is not prefix-stable there. */
int tern_tool_turn_tokens(const tern_model *m, int32_t eos, const char *system,
                          const char *const *names, const char *const *outputs, size_t k,
                          int32_t **ids, size_t *n);

#endif
