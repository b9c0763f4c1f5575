/* jsonl_append.h: one whole line appended to a run directory's JSON Lines
 * file (metrics.jsonl, rollouts.jsonl, eval_responses.jsonl,
 * reward_failures.jsonl), never part of one. */
#ifndef TERN_RUNDIR_JSONL_APPEND_H
#define TERN_RUNDIR_JSONL_APPEND_H

#include <stdio.h>

#include <jansson.h>

/* Append `o` as one line to `f` (opened for appending, written through this
 * function only), all of it or nothing: a write that fails part-way (a full
 * disk) is cut back off, so the file keeps ending with a whole line. `name`
 * names the file in messages. TERN_EIO / TERN_ENOMEM with a message. */
int tern_jsonl_append(FILE *f, const json_t *o, const char *name);

#endif
