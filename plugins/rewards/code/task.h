/*
 * task.h: what a code task asks (its JSON fields, docs/rewards.md).
 *
 *   language      "python" | "c" (else the plugin's `language` setting)
 *   tests         [{"stdin": "...", "stdout": "..."}, ...]: the program is
 *                 run once per case on its stdin; its stdout must match
 *   asserts       "test code" or ["test", ...]: Python run after the
 *                 solution (python only)
 *   abs_tolerance, rel_tolerance   override the settings for this task
 * A task needs tests, asserts or both.
 */
#ifndef TERN_CODE_TASK_H
#define TERN_CODE_TASK_H

#include <stddef.h>

#include <tern/host.h>

#include "extract.h"
#include "judge.h"

#define CODE_MAX_CASES 1024

typedef struct code_case {
    char *stdin_data, *stdout_data;
    size_t stdin_len, stdout_len;
} code_case;

typedef struct code_task {
    code_lang lang;
    code_case *cases;
    size_t n_cases;
    char *asserts_json;  /* the `asserts` field as JSON text, or NULL */
    size_t n_asserts;    /* elements of a list; 1 for a string (until the harness counts) */
    code_judge_opts tolerance;
} code_task;

/* Reads `task` into *out, starting from the plugin's defaults. 0, or -1 with
 * why (cap >= 160) when the task is malformed: that is the task's fault,
 * and the response is scored 0 with that reason. */
int code_task_read(const tern_host *host, const tern_task *task, code_lang default_lang,
                   code_judge_opts default_tol, code_task *out, char *why, size_t why_cap);

void code_task_free(code_task *t);

#endif /* TERN_CODE_TASK_H */
