/* kept_responses.h: the responses a run directory keeps for a person to
 * read (docs/run.md, "Looking at the responses"): the whole groups in
 * rollouts.jsonl (run.keep_groups a step) and every evaluation response in
 * eval_responses.jsonl, each file up to run.keep_mb. */
#ifndef TERN_LOOP_KEPT_RESPONSES_H
#define TERN_LOOP_KEPT_RESPONSES_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "loop/evaluate.h"

/* Whether `f`, a run-directory file opened for appending, holds `cap` bytes
 * or more. The first time it does (*said 0), one warning names the file
 * (`name`) and what it keeps no more (`what`), and *said becomes 1. */
int tern_kept_full(FILE *f, uint64_t cap, int *said, const char *name, const char *what);

/* Take a whole group's extras (its prompt, answer and every response) off a
 * rollouts.jsonl line, leaving the line it has without them. */
void tern_kept_lean(json_t *line);

/* eval_responses.jsonl's lines of one evaluation: each of e->responses with
 * the evaluation's stage, step and weights version before its own keys. */
int tern_kept_eval_lines(FILE *f, const tern_eval_result *e, int64_t step, int64_t version);

#endif
