/* run_checks.h: checks a run makes of its tasks against its model before
 * anything is created, shared by `tern check` and `tern run`. */
#ifndef TERN_RUN_CHECKS_H
#define TERN_RUN_CHECKS_H

#include "base/export.h"

#include "config/diag.h"
#include "data/task_file.h"
#include "model/model.h"

/* Every prompt of `set`, formatted as the run formats it (the chat template
 * with the task's "system" turn or `system_prompt`, or plain tokens with
 * BOS), leaves room for at least one response token in the model's context
 * (tern_special_tokens.context_len; no check when the model does not say).
 * Each task that does not is one message in d, "PATH:LINE: task ID: ...",
 * the first 5 of them, then a count. TERN_OK, TERN_ECONFIG when d got a
 * message, or the status of a model op that failed (its message set). */
TERN_INTERNAL int tern_check_prompt_lengths(const tern_model *m, const char *system_prompt,
                                            const tern_task_set *set, tern_diag *d);

#endif
