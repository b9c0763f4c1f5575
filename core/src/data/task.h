/* task.h: a task, one JSON object of a tasks JSON Lines file, and the field
 * accessors behind host->task_*. */
#ifndef TERN_TASK_H
#define TERN_TASK_H

#include "base/export.h"

#include <stddef.h>

#include "tern/host.h"

/* Parse one line. On malformed JSON or a non-object returns TERN_EINVAL with
 * "WHERE: message (column N)"; `where` is e.g. "data/train.jsonl:12". */
TERN_INTERNAL int tern_task_parse(const char *text, size_t len, const char *where, tern_task **out);
TERN_INTERNAL void tern_task_free(tern_task *t);
/* The file the task was read from (host->task_origin): `origin` is not
 * copied and must outlive the task (the task set's path does). */
void tern_task_set_origin(tern_task *t, const char *origin);
const char *tern_task_origin(const tern_task *t);
/* The task's line in its file, from 1, for messages; 0 when unknown. */
void tern_task_set_line(tern_task *t, size_t line);
size_t tern_task_line(const tern_task *t);

TERN_INTERNAL const char *tern_task_string(const tern_task *t, const char *key);
int tern_task_number(const tern_task *t, const char *key, double *out);
char *tern_task_json(const tern_task *t, const char *key);
/* The whole task, as parsed (borrowed: valid while the task is). */
struct json_t;
TERN_INTERNAL const struct json_t *tern_task_object(const tern_task *t);

/* Whether the task gives a gold answer: its "answer" is a number or a
 * string that is not empty ("" says it has none, as a code task judged by
 * its tests). The supervised warm-up learns from these tasks only. */
int tern_task_has_answer(const tern_task *t);

/* The JSON type of field `key`, as a word for messages: "string", "integer",
 * "real number", "object", "array", "boolean" or "null"; NULL if absent. */
const char *tern_task_type(const tern_task *t, const char *key);
/* An integer field (a JSON number without fraction or exponent): TERN_OK with
 * *out set, TERN_ENOTFOUND if absent, TERN_EINVAL if it is anything else. */
TERN_INTERNAL int tern_task_integer(const tern_task *t, const char *key, long long *out);

#endif
