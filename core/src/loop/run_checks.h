/* run_checks.h: every check a run makes before it creates anything, in one
 * place: `tern run` (loop/master.c) and `tern check` (api/commands.c) both
 * call tern_run_check, so what check calls valid, run accepts. */
#ifndef TERN_RUN_CHECKS_H
#define TERN_RUN_CHECKS_H

#include "base/export.h"

#include "config/diag.h"
#include "data/task_file.h"
#include "host/session.h"
#include "loop/run.h"
#include "model/model.h"

/* The run's checks (docs/run.md, step 2), for the started session
 * run->session (run zeroed but for session and seed): the loop's sections
 * (run->set) and the rules that join several keys; the task files (run->train,
 * run->eval and their sha256); a model, buffer and sync section; a buffer the
 * loop can train from, holding no experiences of an earlier run; a model that
 * tells its end-of-sequence token (run->special); the sync plugin's explorers,
 * transport and schedule (run->sync, run->transport, run->n_explorers,
 * run->async, run->max_staleness); whether the policy reads images
 * (run->reads_images, run->image_spec); a reference for a KL term; a reward
 * for every task domain (run->rewards is opened: isolated workers start);
 * every task's image against the policy's image spec (read and decoded
 * once, not kept), or a refusal of image tasks for a text-only policy;
 * every prompt against the model's context. Fills in run->policy, run->buffer (not
 * for a buffer that waits for the run directory: tern_run_check_buffer_empty
 * then runs once it is started), run->reference when it is its own plugin,
 * and run->reference_is_copy. Makes no model copy and no run directory.
 *
 * Config problems are lines in d (TERN_ECONFIG), or TERN_ECONFIG with
 * tern_error_message() set when d got none (a task file); other failures
 * return their status with the message set. tern_run_check_free() whatever
 * the result. */
int tern_run_check(tern_run *run, tern_diag *d);
/* Free what tern_run_check made: the reward routes, tasks and settings. */
void tern_run_check_free(tern_run *run);

/* The instance of the session labelled `label` ("model", "buffer"), or NULL. */
tern_instance *tern_run_instance(tern_session *s, const char *label);

/* run->buffer holds no experiences (a durable buffer's file from an earlier
 * run): the trainer could not place them in any batch. TERN_OK, or
 * TERN_ECONFIG with a message naming the config line and the fix. */
int tern_run_check_buffer_empty(const tern_run *run);

/* Every prompt of `set`, formatted as the run formats it (the chat template
 * with the task's "system" turn or `system_prompt`, or plain tokens with
 * BOS; a task with an image gets `placeholder` when not NULL, as
 * tern_run_prompt puts it, so its image tokens count), leaves room for at
 * least one response token in the model's context
 * (tern_special_tokens.context_len; no check when the model does not say).
 * Each task that does not is one message in d, "PATH:LINE: task ID: ...",
 * the first 5 of them, then a count. TERN_OK, TERN_ECONFIG when d got a
 * message, or the status of a model op that failed (its message set). */
TERN_INTERNAL int tern_check_prompt_lengths(const tern_model *m, const char *system_prompt,
                                            const char *placeholder, const tern_task_set *set,
                                            tern_diag *d);

#endif
