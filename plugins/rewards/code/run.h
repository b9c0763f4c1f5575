/*
 * run.h: one response's program against its task's tests, as a sandbox
 * request, and the verdict read from the sandbox's response.
 *
 * The steps of a run, in order:
 *   c:       compile  cc <c_flags> -o /box/prog /box/prog.c -lm   (required)
 *            then one step per stdin/stdout case: /box/prog
 *   python:  one step per case: python3 -I /box/solution.py
 *            then, with asserts: python3 -I /box/harness.py (harness.py)
 * All steps share one sandbox, so a run costs one sandbox however many
 * tests it has; each step is a fresh process with its own limits, and
 * nothing a step started outlives it (steps.h).
 */
#ifndef TERN_CODE_RUN_H
#define TERN_CODE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "sandbox/wire.h"
#include "task.h"

/* The plugin's settings a run is made from. */
typedef struct code_config {
    const char *python;       /* interpreter path, visible in the sandbox */
    const char *cc;           /* C compiler path, visible in the sandbox */
    const char **c_flags;     /* before -o */
    size_t n_c_flags;
    sandbox_limits limits;    /* each test */
    sandbox_limits compile;   /* the C compile step */
    uint64_t tmpfs_bytes;
    const char **binds;       /* read-only host paths */
    size_t n_binds;
} code_config;

/* Where a run's steps are. */
typedef struct code_plan {
    int compile_step;  /* index of the compile step, or -1 */
    size_t first_case; /* index of the first stdin/stdout case */
    size_t n_cases;
    int assert_step;   /* index of the harness step, or -1 */
} code_plan;

typedef struct code_run {
    sandbox_request req;
    code_plan plan;
    char nonce[33]; /* the harness's line prefix */
    /* storage the request points into */
    sandbox_file files[2];
    char *harness_stdin;
    char **argvs;   /* one block: every step's argv */
} code_run;

/* Builds the run of `program` for task t. 0, or -1 out of memory. The
 * request points into cfg, t and program: they outlive the run. */
int code_run_build(const code_config *cfg, const code_task *t, const char *program,
                   size_t program_len, code_run *run);
void code_run_free(code_run *run);

/* What a run came to. */
typedef enum code_kind {
    CODE_PASSED = 0,      /* every test passed */
    CODE_WRONG_ANSWER,
    CODE_COMPILE_ERROR,
    CODE_RUNTIME_ERROR,
    CODE_TIME_LIMIT,
    CODE_MEMORY_LIMIT,
    CODE_OUTPUT_LIMIT,
    CODE_NO_PROGRAM,      /* nothing to run in the response */
    CODE_BAD_TASK,        /* the task's tests are malformed */
    CODE_KINDS
} code_kind;

/* "passed", "wrong_answer", ...: a metric name part. */
const char *code_kind_name(code_kind k);

typedef struct code_verdict {
    size_t passed, total;
    code_kind kind;   /* of the first failing test, or CODE_PASSED */
    char reason[160];
} code_verdict;

/* Reads the sandbox's response into v. The response has no `error`: a
 * sandbox that failed is the plugin's failure, not a verdict. */
void code_verdict_read(const code_config *cfg, const code_task *t, const code_run *run,
                       const sandbox_response *res, code_verdict *v);

#endif /* TERN_CODE_RUN_H */
