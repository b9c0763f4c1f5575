/* python_tool.c: the `python` tool plugin (tern/tool.h, README.md here): runs
 * the Python code of a call in the code reward's sandbox, with its limits,
 * and answers what the code printed (output.h).
 *
 * Each call is one fresh `python3 -I -u /box/run.py` (run.py runs the code
 * in /box/main.py) in one fresh sandbox (tern-sandbox, through the code
 * reward's runner: ../../rewards/code/runner.h): nothing is kept between
 * calls. The sandbox's settings (limits, binds, pool, helper) are the code
 * reward's, with the same names and defaults.
 *
 * An instance is read-only after create() and the pool is thread-safe, so
 * calls may run concurrently (TERN_CAP_THREAD_SAFE); `pool` bounds how many
 * sandboxes run at once across them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <tern/plugin.h>
#include <tern/tool.h>

#include "output.h"
#include "runner.h"

/* run.py, embedded at build time (CMakeLists.txt) */
extern const char python_tool_run_py[];
extern const size_t python_tool_run_py_len;

static const tern_host *host;

/* What the model is told of the tool (describe()): short and plain, a
 * small model reads it. */
static const char python_schema[] =
    "{\"type\": \"function\", \"function\": {\"name\": \"python\", \"description\": "
    "\"Run Python 3 code and return what it prints. Each call starts fresh: nothing is kept "
    "from earlier calls. If the last line is an expression, its value is printed too.\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"code\": {\"type\": \"string\", "
    "\"description\": \"The Python code to run, e.g. print(2 ** 10)\"}}, "
    "\"required\": [\"code\"]}}}";

typedef struct python_tool {
    tern_ctx *ctx;
    code_runner runner; /* the sandbox: settings, tern-sandbox, the pool */
} python_tool;

static int python_create(tern_ctx *ctx, void **state)
{
    python_tool *t = calloc(1, sizeof *t);
    if (!t)
        return host->fail(ctx, TERN_ENOMEM, "python: out of memory");
    t->ctx = ctx;
    int rc = code_runner_read(host, ctx, &t->runner);
    /* one real sandbox now: a machine that cannot make them fails here,
     * with what to fix, not at the model's first call */
    if (rc == TERN_OK)
        rc = code_runner_start(host, ctx, "python", &t->runner);
    if (rc != TERN_OK) {
        free(t);
        return rc;
    }
    *state = t;
    return TERN_OK;
}

static void python_destroy(void *state)
{
    python_tool *t = state;
    if (t)
        code_runner_close(&t->runner);
    free(t);
}

static int python_describe(void *state, const char **schema)
{
    (void)state;
    *schema = python_schema;
    return TERN_OK;
}

/* An INVALID answer: why, one line, into out. */
static void invalid(tern_tool_result *out, const char *why)
{
    out->status = TERN_TOOL_INVALID;
    out->truncated = 0;
    out->output_len = 0;
    if (!out->output || out->output_cap == 0)
        return;
    size_t n = strlen(why);
    if (n >= out->output_cap) { /* cut between characters */
        n = out->output_cap - 1;
        while (n > 0 && ((unsigned char)why[n] & 0xC0) == 0x80)
            n--;
        out->truncated = 1;
    }
    memcpy(out->output, why, n);
    out->output[n] = '\0';
    out->output_len = n;
}

/* Runs code[0..len) once and reads how it went into out. */
static int run_code(const python_tool *t, const char *code, size_t len, tern_tool_result *out)
{
    const code_runner *r = &t->runner;
    sandbox_file files[] = {
        {"main.py", 0644, (uint8_t *)code, len},
        {"run.py", 0644, (uint8_t *)python_tool_run_py, python_tool_run_py_len},
    };
    char *argv[] = {(char *)r->python, "-I", "-u", "/box/run.py", NULL};
    /* the sandbox keeps at least what the core's buffer holds, so a long
     * output is cut here (the model sees its start), not killed there */
    sandbox_limits limits = r->limits;
    if (limits.output_bytes < out->output_cap)
        limits.output_bytes = out->output_cap;
    sandbox_response res = {0};
    char why[160];
    int rc = TERN_OK;
    if (code_runner_once(r, files, 2, argv, &limits, &res, why, sizeof why) != 0) {
        rc = host->fail(t->ctx, TERN_ERR, "python: %s", why);
    } else if (res.error[0] || res.n_steps != 1) {
        /* the sandbox failed, not the code: the plugin is broken here */
        rc = host->fail(t->ctx, TERN_ERR, "python: the sandbox failed: %s (docs/sandbox.md)",
                        res.error[0] ? res.error : "a response of the wrong length");
    } else if (res.steps[0].outcome == SANDBOX_START_FAILED) {
        rc = host->fail(t->ctx, TERN_ERR, "python: cannot start %s in the sandbox: %s; set "
                        "`python` to an interpreter inside `binds`", r->python,
                        strerror(res.steps[0].code));
    } else if (res.steps[0].outcome > SANDBOX_OUTPUT_LIMIT) {
        rc = host->fail(t->ctx, TERN_ERR, "python: the sandbox answered outcome %u (%s) for "
                        "its only step", (unsigned)res.steps[0].outcome,
                        sandbox_outcome_name(res.steps[0].outcome));
    } else {
        python_output_write(&limits, &res.steps[0], out);
    }
    sandbox_response_free(&res);
    return rc;
}

static int python_call(void *state, const tern_tool_call *call, tern_tool_result *out)
{
    const python_tool *t = state;
    if (!t || !call || !out)
        return host->fail(t ? t->ctx : NULL, TERN_EINVAL, "python: call() without its call "
                          "or result");
    json_error_t err;
    json_t *args = json_loads(call->arguments ? call->arguments : "", 0, &err);
    json_t *code = json_is_object(args) ? json_object_get(args, "code") : NULL;
    int rc = TERN_OK;
    if (!json_is_object(args))
        invalid(out, "the arguments are not a JSON object; give {\"code\": \"...\"}");
    else if (!json_is_string(code))
        invalid(out, "the arguments need \"code\", a string of Python");
    else
        rc = run_code(t, json_string_value(code), json_string_length(code), out);
    json_decref(args);
    return rc;
}

static const tern_tool_ops python_ops = {
    .size = sizeof python_ops,
    .create = python_create,
    .destroy = python_destroy,
    .describe = python_describe,
    .call = python_call,
};

static const tern_setting_spec python_settings[] = {
    CODE_RUNNER_PYTHON_SETTING,
    CODE_RUNNER_LIMIT_SETTINGS("each call"),
    CODE_RUNNER_HOST_SETTINGS,
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor python_descriptor = {
    .size = sizeof python_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_TOOL,
    .name = "python",
    .version = "1.0.0",
    .summary = "python tool: runs the model's Python code, one fresh process per call, in the "
               "code reward's sandbox",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &python_ops,
    .settings = python_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &python_descriptor;
}
