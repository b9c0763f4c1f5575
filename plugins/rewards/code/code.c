/* code.c: the `code` reward plugin: run the program in a response against
 * its task's tests, in a sandbox (docs/rewards.md for users, docs/sandbox.md
 * for what the sandbox contains and what it does not).
 *
 * For each response: find the program (extract.h), read the task's tests
 * (task.h), build one sandbox request (run.h), run the batch's requests
 * through the pool (pool.h), `pool` at a time, and read each verdict.
 * The reward is the fraction of tests passed, or 1/0 with scoring = "all".
 * The sandbox settings, finding tern-sandbox and making the pool are
 * runner.h's, shared with the python tool.
 *
 * An instance's settings and pool are read-only or locked after create(),
 * so score() is reentrant and the descriptor says TERN_CAP_THREAD_SAFE;
 * two batches scored at once share the pool's slots. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tern/plugin.h>
#include <tern/reward.h>

#include "extract.h"
#include "pool.h"
#include "run.h"
#include "runner.h"
#include "task.h"

static const tern_host *host;

#define MAX_FLAGS 32

typedef struct code_state {
    tern_ctx *ctx;
    code_config cfg;
    code_lang default_lang;
    code_judge_opts tolerance;
    int all_or_nothing, unfenced;
    const char *flags[MAX_FLAGS];
    code_runner runner; /* the sandbox settings and the pool (runner.h) */
} code_state;

/* ---- Settings ------------------------------------------------------------------ */

static uint64_t get_u(tern_ctx *ctx, const char *key)
{
    int64_t v = 0;
    host->get_int(ctx, key, &v);
    return (uint64_t)v;
}

static int read_flags(tern_ctx *ctx, code_state *st)
{
    size_t n = 0;
    host->get_count(ctx, "c_flags", &n);
    if (n == 0) {
        st->flags[0] = "-O2";
        st->flags[1] = "-std=gnu17";
        st->cfg.n_c_flags = 2;
    } else if (n > MAX_FLAGS) {
        return host->setting_error(ctx, "c_flags", "%zu flags; at most %d", n, MAX_FLAGS);
    } else {
        for (size_t i = 0; i < n; i++) {
            char key[32];
            snprintf(key, sizeof key, "c_flags.%zu", i);
            host->get_string(ctx, key, &st->flags[i]);
        }
        st->cfg.n_c_flags = n;
    }
    st->cfg.c_flags = st->flags;
    return TERN_OK;
}

static int code_create(tern_ctx *ctx, void **out)
{
    code_state *st = calloc(1, sizeof *st);
    if (!st)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    st->ctx = ctx;
    const char *lang = NULL, *scoring = NULL;
    host->get_string(ctx, "language", &lang);
    host->get_string(ctx, "scoring", &scoring);
    code_lang_parse(lang, &st->default_lang); /* the spec's choices allow only known ones */
    st->all_or_nothing = strcmp(scoring, "all") == 0;
    host->get_bool(ctx, "unfenced", &st->unfenced);
    host->get_float(ctx, "abs_tolerance", &st->tolerance.abs_tol);
    host->get_float(ctx, "rel_tolerance", &st->tolerance.rel_tol);
    host->get_string(ctx, "c_compiler", &st->cfg.cc);

    /* the limits, binds, interpreter and pool every sandboxing plugin shares */
    code_runner *r = &st->runner;
    int rc = code_runner_read(host, ctx, r);
    st->cfg.python = r->python;
    st->cfg.limits = r->limits;
    st->cfg.tmpfs_bytes = r->tmpfs_bytes;
    st->cfg.binds = r->binds;
    st->cfg.n_binds = r->n_binds;
    st->cfg.compile = r->limits;
    st->cfg.compile.wall_ms = st->cfg.compile.cpu_ms = get_u(ctx, "compile_time_ms");
    st->cfg.compile.memory_bytes = get_u(ctx, "compile_memory_mb") << 20;
    if (st->cfg.compile.processes < 8)
        st->cfg.compile.processes = 8; /* gcc runs cc1, as, collect2 and ld */

    if (rc == TERN_OK)
        rc = read_flags(ctx, st);
    if (rc == TERN_OK)
        rc = code_runner_check_program(host, ctx, r, "c_compiler", st->cfg.cc);
    if (rc == TERN_OK)
        rc = code_runner_start(host, ctx, "code", r);
    if (rc != TERN_OK) {
        free(st);
        return rc;
    }
    *out = st;
    return TERN_OK;
}

static void code_destroy(void *state)
{
    code_state *st = state;
    if (st)
        code_runner_close(&st->runner);
    free(st);
}

/* ---- Scoring ------------------------------------------------------------------- */

/* One response on its way through the sandbox. */
typedef struct pending {
    size_t item;
    code_task task;
    char *program;
    code_run run;
} pending;

static void verdict_to_result(const code_state *st, const code_verdict *v, tern_reward_result *r)
{
    double rate = v->total ? (double)v->passed / (double)v->total : 0.0;
    int all = v->kind == CODE_PASSED && v->total > 0;
    r->reward = st->all_or_nothing ? (all ? 1.0 : 0.0) : rate;
    r->components[0] = (tern_reward_component){"accuracy", all ? 1.0 : 0.0};
    r->components[1] = (tern_reward_component){"pass_rate", rate};
    r->n_components = 2;
    snprintf(r->reason, sizeof r->reason, "%s", v->reason);
    char name[40];
    snprintf(name, sizeof name, "outcome.%s", code_kind_name(v->kind));
    host->metric(st->ctx, name, 1.0);
}

/* Responses that never reach a sandbox: no program, or a malformed task. */
static void early_verdict(const code_state *st, code_kind kind, const char *why,
                          tern_reward_result *r)
{
    code_verdict v = {.kind = kind};
    snprintf(v.reason, sizeof v.reason, "%.150s", why);
    verdict_to_result(st, &v, r);
}

/* Runs p[0..n) (their requests built) and writes their results. */
static int run_chunk(const code_state *st, pending *p, size_t n, tern_reward_result *res)
{
    const sandbox_request **reqs = calloc(n, sizeof *reqs);
    sandbox_response *out = calloc(n, sizeof *out);
    char why[160];
    int rc = TERN_OK;
    if (!reqs || !out) {
        rc = host->fail(st->ctx, TERN_ENOMEM, "code: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        reqs[i] = &p[i].run.req;
    uint64_t t0 = host->now_ns();
    if (sandbox_pool_run(st->runner.pool, reqs, out, n, why, sizeof why) != 0) {
        rc = host->fail(st->ctx, TERN_ERR, "code: %s", why);
        goto done;
    }
    host->metric(st->ctx, "sandbox_ms", (double)(host->now_ns() - t0) / 1e6 / (double)n);
    for (size_t i = 0; i < n; i++) {
        if (out[i].error[0] || out[i].n_steps != p[i].run.req.n_steps) {
            /* the sandbox failed, not the program: the plugin is broken here */
            rc = host->fail(st->ctx, TERN_ERR, "code: the sandbox failed: %s",
                            out[i].error[0] ? out[i].error : "a response of the wrong length");
            goto done;
        }
        code_verdict v;
        code_verdict_read(&st->cfg, &p[i].task, &p[i].run, &out[i], &v);
        verdict_to_result(st, &v, &res[p[i].item]);
    }
done:
    for (size_t i = 0; out && i < n; i++)
        sandbox_response_free(&out[i]);
    free(out);
    free(reqs);
    return rc;
}

static void pending_free(pending *p)
{
    code_run_free(&p->run);
    code_task_free(&p->task);
    free(p->program);
    *p = (pending){0};
}

static int code_score(void *state, const tern_reward_item *items, tern_reward_result *res,
                      size_t n)
{
    const code_state *st = state;
    if (!st || (n && (!items || !res)))
        return host->fail(NULL, TERN_EINVAL, "code: score() called without its arrays");
    /* requests are built a chunk at a time: a batch of large tests would
     * otherwise be held in memory all at once */
    size_t chunk = 4 * (size_t)st->runner.slots;
    pending *p = calloc(chunk, sizeof *p);
    if (!p)
        return host->fail(st->ctx, TERN_ENOMEM, "code: out of memory");
    int rc = TERN_OK;
    size_t next = 0;
    while (rc == TERN_OK && next < n) {
        size_t k = 0;
        for (; next < n && k < chunk; next++) {
            const tern_reward_item *it = &items[next];
            tern_reward_result *r = &res[next];
            pending *q = &p[k];
            char why[200], how[96];
            *q = (pending){.item = next};
            if (code_task_read(host, it->task, st->default_lang, st->tolerance, &q->task, why,
                               sizeof why) != 0) {
                early_verdict(st, CODE_BAD_TASK, why, r);
                continue;
            }
            size_t len = 0;
            int found = code_extract(it->response ? it->response : "", it->response_len,
                                     q->task.lang, st->unfenced, &q->program, &len, how,
                                     sizeof how);
            if (found < 0 || (found == 1 && code_run_build(&st->cfg, &q->task, q->program, len,
                                                           &q->run) != 0)) {
                pending_free(q);
                rc = host->fail(st->ctx, TERN_ENOMEM, "code: out of memory");
                break;
            }
            if (found == 0) {
                snprintf(why, sizeof why, "no program: %s", how);
                early_verdict(st, CODE_NO_PROGRAM, why, r);
                pending_free(q);
                continue;
            }
            k++;
        }
        if (rc == TERN_OK && k)
            rc = run_chunk(st, p, k, res);
        for (size_t i = 0; i < k; i++)
            pending_free(&p[i]);
    }
    free(p);
    return rc;
}

static const tern_reward_ops code_ops = {
    .size = sizeof code_ops,
    .create = code_create,
    .destroy = code_destroy,
    .score = code_score,
};

static const tern_setting_spec code_settings[] = {
    TERN_SETTING(.name = "language", .type = TERN_SETTING_STRING, .def = "\"python\"",
                 .choices = "python|c",
                 .doc = "the language of a task without a `language` field"),
    TERN_SETTING(.name = "scoring", .type = TERN_SETTING_STRING, .def = "\"fraction\"",
                 .choices = "fraction|all",
                 .doc = "reward = the fraction of tests passed, or 1 only when all pass"),
    TERN_SETTING(.name = "unfenced", .type = TERN_SETTING_BOOL, .def = "false",
                 .doc = "a response without any ``` block is the program itself"),
    TERN_SETTING(.name = "abs_tolerance", .type = TERN_SETTING_FLOAT, .def = "0", .min = 0,
                 .max = 1e300, .doc = "numbers in stdout match within this absolute difference "
                                      "(0: compared as text); a task may override it"),
    TERN_SETTING(.name = "rel_tolerance", .type = TERN_SETTING_FLOAT, .def = "0", .min = 0,
                 .max = 1e300, .doc = "... or within this fraction of the expected value"),
    CODE_RUNNER_PYTHON_SETTING,
    TERN_SETTING(.name = "c_compiler", .type = TERN_SETTING_STRING, .def = "\"/usr/bin/gcc\"",
                 .doc = "the C compiler (inside binds)"),
    TERN_SETTING(.name = "c_flags", .type = TERN_SETTING_STRINGS,
                 .doc = "compiler flags before -o (default [\"-O2\", \"-std=gnu17\"]); -lm is "
                        "always linked"),
    CODE_RUNNER_LIMIT_SETTINGS("each test run"),
    TERN_SETTING(.name = "compile_time_ms", .type = TERN_SETTING_INT, .def = "10000", .min = 1,
                 .max = 600000, .doc = "wall and CPU limit of compiling a C program, ms"),
    TERN_SETTING(.name = "compile_memory_mb", .type = TERN_SETTING_INT, .def = "1024", .min = 64,
                 .max = 1048576, .doc = "address space of the compiler's processes, MiB"),
    CODE_RUNNER_HOST_SETTINGS,
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor code_descriptor = {
    .size = sizeof code_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD,
    .name = "code",
    .version = "1.0.0",
    .summary = "code reward: runs the response's Python or C program against the task's tests "
               "in a sandbox",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &code_ops,
    .settings = code_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &code_descriptor;
}
