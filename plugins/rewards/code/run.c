/* run.c: a response's program as a sandbox request, and its verdict (run.h). */
#include "run.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../common/reward_text.h"
#include "runner.h"

/* harness.py, embedded at build time (CMakeLists.txt) */
extern const char code_harness_py[];
extern const size_t code_harness_py_len;

/* ---- The request ------------------------------------------------------------- */

static void make_nonce(char out[33])
{
    uint8_t b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* no entropy source: a nonce from the clock and address still
         * differs per run, which is what it is for */
        uint64_t x = (uint64_t)(uintptr_t)out ^ (uint64_t)clock();
        for (size_t i = 0; i < sizeof b; i++, x = x * 6364136223846793005u + 1442695040888963407u)
            b[i] = (uint8_t)(x >> 56);
    }
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int code_run_build(const code_config *cfg, const code_task *t, const char *program,
                   size_t program_len, code_run *run)
{
    *run = (code_run){0};
    run->plan.compile_step = run->plan.assert_step = -1;
    int is_c = t->lang == CODE_LANG_C;
    size_t n_steps = t->n_cases + (is_c ? 1 : 0) + (t->asserts_json ? 1 : 0);
    /* every argv in one block: compile (flags + 6 + NULL), the others <= 4 */
    size_t slots = (cfg->n_c_flags + 7) + 4 * n_steps;
    run->argvs = calloc(slots, sizeof *run->argvs);
    run->req.steps = calloc(n_steps, sizeof *run->req.steps);
    if (!run->argvs || !run->req.steps)
        goto oom;
    char **a = run->argvs;
    sandbox_step *s = run->req.steps;

    run->files[0] = (sandbox_file){is_c ? "prog.c" : "solution.py", 0644, (uint8_t *)program,
                                   program_len};
    run->req.n_files = 1;
    if (is_c) {
        run->plan.compile_step = 0;
        char **argv = a;
        *a++ = (char *)cfg->cc;
        for (size_t i = 0; i < cfg->n_c_flags; i++)
            *a++ = (char *)cfg->c_flags[i];
        *a++ = "-o";
        *a++ = "/box/prog";
        *a++ = "/box/prog.c";
        *a++ = "-lm";
        *a++ = NULL;
        *s++ = (sandbox_step){.argc = (uint32_t)(a - argv - 1), .argv = argv,
                              .limits = cfg->compile, .flags = SANDBOX_STEP_REQUIRED};
    }
    run->plan.first_case = (size_t)(s - run->req.steps);
    run->plan.n_cases = t->n_cases;
    for (size_t i = 0; i < t->n_cases; i++) {
        char **argv = a;
        if (is_c) {
            *a++ = "/box/prog";
        } else {
            *a++ = (char *)cfg->python;
            *a++ = "-I";
            *a++ = "/box/solution.py";
        }
        *a++ = NULL;
        *s++ = (sandbox_step){.argc = (uint32_t)(a - argv - 1), .argv = argv,
                              .stdin_data = (uint8_t *)t->cases[i].stdin_data,
                              .stdin_len = t->cases[i].stdin_len, .limits = cfg->limits};
    }
    if (t->asserts_json) {
        make_nonce(run->nonce);
        size_t n = strlen(t->asserts_json) + 64;
        run->harness_stdin = malloc(n);
        if (!run->harness_stdin)
            goto oom;
        int len = snprintf(run->harness_stdin, n, "{\"nonce\":\"%s\",\"asserts\":%s}", run->nonce,
                           t->asserts_json);
        run->files[1] = (sandbox_file){"harness.py", 0644, (uint8_t *)code_harness_py,
                                       code_harness_py_len};
        run->req.n_files = 2;
        run->plan.assert_step = (int)(s - run->req.steps);
        char **argv = a;
        *a++ = (char *)cfg->python;
        *a++ = "-I";
        *a++ = "/box/harness.py";
        *a++ = NULL;
        *s++ = (sandbox_step){.argc = 3, .argv = argv, .stdin_data = (uint8_t *)run->harness_stdin,
                              .stdin_len = (uint64_t)len, .limits = cfg->limits,
                              .flags = SANDBOX_STEP_RESULT_FD};
    }
    run->req.n_steps = (uint32_t)n_steps;
    run->req.files = run->files;
    run->req.tmpfs_bytes = cfg->tmpfs_bytes;
    run->req.binds = (char **)cfg->binds;
    run->req.n_binds = (uint32_t)cfg->n_binds;
    return 0;
oom:
    code_run_free(run);
    return -1;
}

void code_run_free(code_run *run)
{
    free(run->argvs);
    free(run->req.steps);
    free(run->harness_stdin);
    *run = (code_run){0};
}

/* ---- The verdict ------------------------------------------------------------- */

const char *code_kind_name(code_kind k)
{
    static const char *const names[CODE_KINDS] = {
        "passed", "wrong_answer", "compile_error", "runtime_error", "time_limit",
        "memory_limit", "output_limit", "no_program", "bad_task",
    };
    return k < CODE_KINDS ? names[k] : "unknown";
}

/* The line of text[0..n) that best says what went wrong, into dst: after a
 * Python traceback its last line (the exception), else the first line with
 * "error" (a compiler's first error), else the last non-blank line; without
 * "/box/" in front of file names. */
static void telling_line(const uint8_t *text, size_t n, char *dst, size_t cap)
{
    const char *s = (const char *)text;
    const char *best = NULL, *last = NULL;
    size_t best_len = 0, last_len = 0;
    int traceback = s && memmem(s, n, "Traceback (most recent call last)", 33) != NULL;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] != '\n')
            j++;
        size_t len = j - i;
        int blank = 1;
        for (size_t k = i; k < j; k++)
            blank &= s[k] == ' ' || s[k] == '\t' || s[k] == '\r';
        if (!blank) {
            last = s + i;
            last_len = len;
            if (!best && !traceback && memmem(s + i, len, "error", 5)) {
                best = s + i;
                best_len = len;
            }
        }
        i = j + 1;
    }
    if (!best) {
        best = last;
        best_len = last_len;
    }
    dst[0] = '\0';
    if (!best)
        return;
    while (best_len >= 5 && memcmp(best, "/box/", 5) == 0) {
        best += 5;
        best_len -= 5;
    }
    while (best_len && (*best == ' ' || *best == '\t')) {
        best++;
        best_len--;
    }
    reward_excerpt(dst, cap, best, best_len, 90);
}

/* Whether r died of its memory limit; always judged against the test
 * limits (runner.h). */
static int memory_exhausted(const code_config *cfg, const sandbox_step_result *r)
{
    return code_runner_out_of_memory(&cfg->limits, r);
}

/* A step that did not exit 0 (or hit a limit): its kind and a phrase. */
static code_kind classify(const code_config *cfg, const sandbox_step_result *r,
                          const sandbox_limits *l, char *what, size_t cap)
{
    char line[100];
    switch (r->outcome) {
    case SANDBOX_WALL_LIMIT:
        snprintf(what, cap, "time limit (%llu ms)", (unsigned long long)l->wall_ms);
        return CODE_TIME_LIMIT;
    case SANDBOX_CPU_LIMIT:
        snprintf(what, cap, "CPU time limit (%llu ms)", (unsigned long long)l->cpu_ms);
        return CODE_TIME_LIMIT;
    case SANDBOX_OUTPUT_LIMIT:
        snprintf(what, cap, "output limit (%llu bytes)", (unsigned long long)l->output_bytes);
        return CODE_OUTPUT_LIMIT;
    case SANDBOX_NOT_RUN:
        snprintf(what, cap, "not run");
        return CODE_RUNTIME_ERROR;
    case SANDBOX_START_FAILED:
        snprintf(what, cap, "could not start: %s", strerror(r->code));
        return CODE_RUNTIME_ERROR;
    }
    if (memory_exhausted(cfg, r)) {
        snprintf(what, cap, "memory limit (%llu MiB)",
                 (unsigned long long)(l->memory_bytes >> 20));
        return CODE_MEMORY_LIMIT;
    }
    telling_line(r->err, r->err_len, line, sizeof line);
    if (r->outcome == SANDBOX_SIGNALED)
        snprintf(what, cap, "runtime error (SIG%s)%s%s", sigabbrev_np(r->code) ?
                 sigabbrev_np(r->code) : "?", line[0] ? ": " : "", line);
    else
        snprintf(what, cap, "runtime error (exit %d)%s%s", r->code, line[0] ? ": " : "", line);
    return CODE_RUNTIME_ERROR;
}

/* What the harness said on descriptor 3 (harness.py). Lines without the
 * nonce are not the harness's and are ignored. */
typedef struct harness_report {
    int counted, done, task_error, solution_error;
    size_t n;               /* tests, after "S n" */
    size_t passed;
    long first_fail;        /* -1: none */
    char message[120];      /* of E, T, or the first F */
} harness_report;

static void read_report(const code_run *run, const sandbox_step_result *r, harness_report *h)
{
    *h = (harness_report){.first_fail = -1};
    size_t nl = strlen(run->nonce);
    const char *s = (const char *)r->aux;
    size_t n = s ? r->aux_len : 0;
    uint8_t *seen = NULL;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] != '\n')
            j++;
        const char *line = s + i;
        size_t len = j - i;
        i = j + 1;
        if (len < nl + 3 || memcmp(line, run->nonce, nl) != 0 || line[nl] != ' ')
            continue;
        char kind = line[nl + 1];
        const char *rest = line + nl + 3;
        size_t rest_len = len - nl - 3;
        char num[24] = "";
        size_t k = 0;
        while (k < rest_len && k + 1 < sizeof num && rest[k] >= '0' && rest[k] <= '9') {
            num[k] = rest[k];
            k++;
        }
        num[k] = '\0';
        unsigned long long v = strtoull(num, NULL, 10);
        const char *msg = k < rest_len ? rest + k + 1 : rest + k;
        size_t msg_len = k < rest_len ? rest_len - k - 1 : 0;
        switch (kind) {
        case 'S':
            if (!h->counted && num[0] && v <= CODE_MAX_CASES * 64ull) {
                h->counted = 1;
                h->n = (size_t)v;
                seen = calloc(h->n ? h->n : 1, 1);
            }
            break;
        case 'P':
            if (h->counted && seen && num[0] && v < h->n && !seen[v]) {
                seen[v] = 1;
                h->passed++;
            }
            break;
        case 'F':
            if (h->counted && num[0] && v < h->n && h->first_fail < 0) {
                h->first_fail = (long)v;
                reward_excerpt(h->message, sizeof h->message, msg, msg_len, 100);
            }
            break;
        case 'E':
        case 'T':
            if (!h->solution_error && !h->task_error) {
                *(kind == 'E' ? &h->solution_error : &h->task_error) = 1;
                reward_excerpt(h->message, sizeof h->message, rest, rest_len, 100);
            }
            break;
        case 'D':
            if (h->counted && num[0] && v == h->n)
                h->done = 1;
            break;
        }
    }
    free(seen);
}

/* Records the first failure: its kind and, as "test N: what", the reason. */
static void first_failure(code_verdict *v, code_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void first_failure(code_verdict *v, code_kind kind, const char *fmt, ...)
{
    if (v->kind != CODE_PASSED)
        return;
    v->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->reason, sizeof v->reason, fmt, ap);
    va_end(ap);
}

void code_verdict_read(const code_config *cfg, const code_task *t, const code_run *run,
                       const sandbox_response *res, code_verdict *v)
{
    const code_plan *p = &run->plan;
    *v = (code_verdict){.kind = CODE_PASSED, .total = t->n_cases + t->n_asserts};
    char what[140];
    if (p->compile_step >= 0) {
        const sandbox_step_result *r = &res->steps[p->compile_step];
        if (r->outcome != SANDBOX_EXITED || r->code != 0) {
            code_kind k = classify(cfg, r, &cfg->compile, what, sizeof what);
            if (k == CODE_RUNTIME_ERROR && r->outcome == SANDBOX_EXITED) {
                telling_line(r->err, r->err_len, what, sizeof what);
                first_failure(v, CODE_COMPILE_ERROR, "compile error: %s", what);
            } else {
                first_failure(v, CODE_COMPILE_ERROR, "compile: %s", what);
            }
        }
    }
    /* after a failed compile the other steps did not run: nothing passed */
    for (size_t i = 0; v->kind != CODE_COMPILE_ERROR && i < p->n_cases; i++) {
        const sandbox_step_result *r = &res->steps[p->first_case + i];
        if (r->outcome == SANDBOX_EXITED && r->code == 0) {
            const code_case *c = &t->cases[i];
            if (code_output_matches((const char *)r->out, r->out_len, c->stdout_data,
                                    c->stdout_len, &t->tolerance, what, sizeof what)) {
                v->passed++;
            } else {
                first_failure(v, CODE_WRONG_ANSWER, "test %zu: wrong answer: %s", i + 1, what);
            }
            continue;
        }
        code_kind k = classify(cfg, r, &cfg->limits, what, sizeof what);
        first_failure(v, k, "test %zu: %s", i + 1, what);
    }
    if (p->assert_step >= 0) {
        const sandbox_step_result *r = &res->steps[p->assert_step];
        harness_report h;
        read_report(run, r, &h);
        if (h.counted)
            v->total = t->n_cases + h.n;
        v->passed += h.passed;
        int limit = r->outcome != SANDBOX_EXITED || memory_exhausted(cfg, r);
        if (h.task_error) {
            first_failure(v, CODE_BAD_TASK, "the task's asserts do not parse: %s", h.message);
        } else if (limit && !h.done) {
            code_kind k = classify(cfg, r, &cfg->limits, what, sizeof what);
            first_failure(v, k, "function tests: %s", what);
        } else if (h.solution_error) {
            first_failure(v, strncmp(h.message, "MemoryError", 11) == 0 ? CODE_MEMORY_LIMIT
                                                                       : CODE_RUNTIME_ERROR,
                          "the solution failed before its tests: %s", h.message);
        } else if (h.first_fail >= 0) {
            code_kind k = strncmp(h.message, "AssertionError", 14) == 0 ? CODE_WRONG_ANSWER
                                                                         : CODE_RUNTIME_ERROR;
            first_failure(v, k, "assert %ld: %s", h.first_fail + 1, h.message);
        } else if (!h.done) {
            if (r->outcome == SANDBOX_EXITED && r->code == 0)
                snprintf(what, sizeof what, "the program exited before them");
            else
                classify(cfg, r, &cfg->limits, what, sizeof what);
            first_failure(v, CODE_RUNTIME_ERROR, "function tests did not finish (%s)", what);
        }
    }
    /* "passed p/n tests", then the first failure; cut at the reason's size */
    char tail[sizeof v->reason];
    memcpy(tail, v->reason, sizeof tail);
    int n = snprintf(v->reason, sizeof v->reason, "passed %zu/%zu tests%s", v->passed, v->total,
                     v->kind == CODE_PASSED ? "" : "; ");
    if (v->kind != CODE_PASSED && n > 0 && (size_t)n < sizeof v->reason) {
        size_t room = sizeof v->reason - (size_t)n - 1, len = strlen(tail);
        if (len > room) /* cut between characters, not inside one */
            for (len = room; len > 0 && ((unsigned char)tail[len] & 0xC0) == 0x80; len--) {
            }
        memcpy(v->reason + n, tail, len);
        v->reason[n + len] = '\0';
    }
}
