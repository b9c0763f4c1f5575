/* python.c: the `python` reward plugin (docs/rewards.md, "python"): a
 * reward function written in Python,
 *
 *     def reward(response, task):
 *         return 1.0 if response.strip() == task["answer"] else 0.0
 *
 * named by `file` (relative to the config's directory) and `function`. The
 * function runs in its own Python process, started with the configured
 * interpreter (`python`, a venv's included) and runner.py (embedded here),
 * and supervised by the exec reward's engine: an exception fails its
 * response with the exception as the reason, a crash or a hang costs one
 * response and the process is started again. A file that does not load
 * (a syntax error, a failed import, no such function) is refused at start,
 * with Python's message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_engine.h"
#include "runner_py.h"
#include "tern/plugin.h"
#include "tern/reward.h"

static const tern_host *host;

static void python_destroy(void *state)
{
    if (!state)
        return;
    exec_engine_free(state);
    free(state);
}

static int python_create(tern_ctx *ctx, void **state)
{
    exec_engine *e = calloc(1, sizeof *e);
    if (!e)
        return host->fail(ctx, TERN_ENOMEM, "python: out of memory");
    e->child.fd = -1;
    const char *file = NULL, *function = NULL, *python = NULL;
    int64_t timeout_ms = 0, start_ms = 0;
    int rc = host->get_string(ctx, "file", &file);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "function", &function);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "python", &python);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "reply_timeout_ms", &timeout_ms);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "start_timeout_ms", &start_ms);
    if (rc == TERN_OK && (!*file || !*function || !*python))
        rc = host->setting_error(ctx, !*file ? "file" : !*function ? "function" : "python",
                                 "is empty");
    if (rc == TERN_OK) {
        /* -u: unbuffered; -c: runner.py; then its own arguments */
        const char *argv[] = {python, "-u", "-c", tern_python_runner, file, function, NULL};
        rc = exec_engine_start(e, host, ctx, argv,
                               TERN_HAS(host, config_dir) ? host->config_dir(ctx) : ".",
                               timeout_ms, start_ms, "file");
    }
    if (rc != TERN_OK) {
        python_destroy(e);
        return rc;
    }
    *state = e;
    return TERN_OK;
}

static int python_score(void *state, const tern_reward_item *items, tern_reward_result *results,
                        size_t n)
{
    return exec_engine_score(state, items, results, n);
}

static const tern_reward_ops python_ops = {
    .size = sizeof python_ops,
    .create = python_create,
    .destroy = python_destroy,
    .score = python_score,
};

static const tern_setting_spec python_settings[] = {
    TERN_SETTING(.name = "file", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED,
                 .aka = "module|script|path",
                 .doc = "the Python file that defines the function, relative to the config's "
                        "directory"),
    TERN_SETTING(.name = "function", .type = TERN_SETTING_STRING, .def = "\"reward\"",
                 .aka = "func|name",
                 .doc = "the function: function(response, task) returns a number, a "
                        "(reward, reason) pair or {\"reward\", \"components\", \"reason\"}"),
    TERN_SETTING(.name = "python", .type = TERN_SETTING_STRING, .def = "\"python3\"",
                 .aka = "interpreter",
                 .doc = "the interpreter: a name on PATH or a path (a venv's bin/python)"),
    TERN_SETTING(.name = "reply_timeout_ms", .type = TERN_SETTING_INT, .def = "10000", .min = 1,
                 .max = 86400000, .doc = "the longest one call may take; then the process is "
                 "killed and started again"),
    TERN_SETTING(.name = "start_timeout_ms", .type = TERN_SETTING_INT, .def = "60000", .min = 1,
                 .max = 86400000, .doc = "the longest the file may take to load (its imports, "
                 "a model it reads) before it says it is ready, at the start and at each "
                 "restart; then it is refused"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor python_descriptor = {
    .size = sizeof python_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD,
    .name = "python",
    .version = "1.0.0",
    .summary = "a reward function written in Python, run in a supervised Python process",
    .caps = 0,
    .ops = &python_ops,
    .settings = python_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &python_descriptor;
}
