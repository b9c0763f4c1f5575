/* exec.c: the `exec` reward plugin (docs/rewards.md, "exec"): rewards from
 * a long-lived command in any language, which reads one JSON line per
 * response on its standard input and writes one verdict line on its
 * standard output (exec_protocol.h), supervised by exec_engine.h. The
 * command runs in the config's directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_engine.h"
#include "tern/plugin.h"
#include "tern/reward.h"

static const tern_host *host;

static void exec_destroy(void *state)
{
    if (!state)
        return;
    exec_engine_free(state);
    free(state);
}

static int exec_create(tern_ctx *ctx, void **state)
{
    exec_engine *e = calloc(1, sizeof *e);
    if (!e)
        return host->fail(ctx, TERN_ENOMEM, "exec: out of memory");
    e->child.fd = -1;
    const char *argv[EXEC_MAX_ARGS + 1] = {0};
    size_t n = 0;
    int64_t timeout_ms = 0;
    int rc = host->get_count(ctx, "command", &n);
    if (rc == TERN_OK && (n == 0 || n > EXEC_MAX_ARGS))
        rc = host->setting_error(ctx, "command", "give the program and its arguments, 1 to %d "
                                 "strings, e.g. [\"python3\", \"-u\", \"score.py\"]",
                                 EXEC_MAX_ARGS);
    for (size_t i = 0; rc == TERN_OK && i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "command.%zu", i);
        rc = host->get_string(ctx, key, &argv[i]);
    }
    if (rc == TERN_OK && !argv[0][0])
        rc = host->setting_error(ctx, "command", "the program's name is empty");
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "reply_timeout_ms", &timeout_ms);
    /* a command that cannot start is a config problem, said at once */
    if (rc == TERN_OK)
        rc = exec_engine_start(e, host, ctx, argv,
                               TERN_HAS(host, config_dir) ? host->config_dir(ctx) : ".",
                               timeout_ms, 0, "command");
    if (rc != TERN_OK) {
        exec_destroy(e);
        return rc;
    }
    *state = e;
    return TERN_OK;
}

static int exec_score(void *state, const tern_reward_item *items, tern_reward_result *results,
                      size_t n)
{
    return exec_engine_score(state, items, results, n);
}

static const tern_reward_ops exec_ops = {
    .size = sizeof exec_ops,
    .create = exec_create,
    .destroy = exec_destroy,
    .score = exec_score,
};

static const tern_setting_spec exec_settings[] = {
    TERN_SETTING(.name = "command", .type = TERN_SETTING_STRINGS,
                 .flags = TERN_SETTING_REQUIRED, .aka = "cmd|argv|program",
                 .doc = "the program and its arguments, e.g. [\"python3\", \"-u\", \"score.py\"]; "
                        "it runs in the config's directory"),
    TERN_SETTING(.name = "reply_timeout_ms", .type = TERN_SETTING_INT, .def = "10000", .min = 1,
                 .max = 86400000, .doc = "the longest the command may take over one response; "
                 "then it is killed and started again"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor exec_descriptor = {
    .size = sizeof exec_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD,
    .name = "exec",
    .version = "1.0.0",
    .summary = "rewards from a long-lived command in any language: JSON lines in, verdicts out",
    .caps = 0,
    .ops = &exec_ops,
    .settings = exec_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &exec_descriptor;
}
