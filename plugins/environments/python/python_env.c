/* python_env.c: the `python` environment plugin (docs/plugins.md,
 * "Environment plugins"; docs/config.md, "environment"): an environment
 * written in Python, a class in the file `file` (relative to the config's
 * directory),
 *
 *     class Env:
 *         def reset(self, task):       # the task line as a dict
 *             return "first observation"
 *         def step(self, action):      # the model's turn as text
 *             return observation, reward, done
 *
 * one instance per episode (Env(seed) when __init__ takes an argument
 * besides self, else Env()). Every live episode is an instance in one
 * Python worker (env_worker.h, env_runner.py embedded here), started with
 * the configured interpreter and supervised: an exception, garbage, a
 * crash or a hang ends that episode with its failure and reason, a dead or
 * hung worker is started again for the next episode, and the episodes it
 * held end (crash, timeout) at their next step. A file that does not load
 * is refused at create, with Python's message. The class's `tools` (a list
 * of functions, or methods of the episode's instance) are the
 * environment's tools (docs/agents.md, "Tools"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_protocol.h"
#include "env_runner_py.h"
#include "env_worker.h"
#include "tern/environment.h"
#include "tern/plugin.h"

/* The name configs use: "python" once plugin names are unique per kind
 * (today the `python` reward holds it). */
#define PYTHON_ENV_NAME "python"

static const tern_host *host;

typedef struct episode {
    uint64_t id;          /* the worker's key for its instance */
    uint64_t generation;  /* of the worker that holds it */
    uint32_t turns;       /* steps answered */
    int ended;            /* it said done, or failed: a step now is after_done */
    uint32_t lost;        /* its worker died: the failure its next step reports */
    char lost_reason[TERN_ENV_REASON_MAX];
    char *observation;    /* the last one handed out, owned until the next call */
    struct episode *prev, *next; /* the instance's live episodes */
} episode;

typedef struct python_env {
    tern_ctx *ctx;
    env_worker worker;
    uint64_t next_id;
    episode *live; /* every episode not closed yet */
} python_env;

static void set_reason(tern_env_result *out, const char *reason)
{
    snprintf(out->reason, sizeof out->reason, "%s", reason);
}

/* The episode ends with failure `why`. */
static void end_failed(episode *ep, tern_env_result *out, uint32_t why, const char *reason)
{
    ep->ended = 1;
    out->observation = NULL;
    out->reward = 0;
    out->done = 0;
    out->failure = why;
    set_reason(out, reason);
}

/* The worker of generation `gen` is gone (`why`, `reason`): every other
 * episode it held fails with the same cause at its next step. */
static void worker_lost(python_env *s, const episode *cause, uint64_t gen, uint32_t why,
                        const char *reason)
{
    for (episode *ep = s->live; ep; ep = ep->next)
        if (ep != cause && ep->generation == gen && !ep->ended && !ep->lost) {
            ep->lost = why;
            snprintf(ep->lost_reason, sizeof ep->lost_reason,
                     "its worker ended in episode %" PRIu64 ": %s", cause ? cause->id : 0,
                     reason);
        }
    host->log(s->ctx, TERN_LOG_WARN, "the Python worker ended (%s); the next episode starts "
              "a new one", reason);
}

/* Send request[0..n) for ep and hand its answer to *out. */
static void ask(python_env *s, episode *ep, const char *request, size_t n, int step,
                tern_env_result *out)
{
    const char *line = NULL;
    size_t len = 0;
    char why[TERN_ENV_REASON_MAX];
    uint64_t gen = s->worker.generation;
    uint32_t f = env_worker_call(&s->worker, request, n, &line, &len, why, sizeof why);
    if (f != TERN_ENV_OK) {
        worker_lost(s, ep, gen, f, why);
        end_failed(ep, out, f, why);
        return;
    }
    env_answer a;
    if (env_parse_reply(line, len, step, &a) == ENV_NOT_A_REPLY) {
        env_worker_kill(&s->worker); /* out of step: what it says next means nothing */
        worker_lost(s, ep, gen, TERN_ENV_GARBAGE, a.reason);
        end_failed(ep, out, TERN_ENV_GARBAGE, a.reason);
        return;
    }
    if (a.failure != TERN_ENV_OK) {
        end_failed(ep, out, a.failure, a.reason);
        env_answer_free(&a);
        return;
    }
    ep->observation = a.observation; /* ours now */
    out->observation = ep->observation;
    out->reward = a.reward;
    out->done = a.done;
    set_reason(out, a.reason);
    if (a.done)
        ep->ended = 1;
}

static void forget(python_env *s, episode *ep)
{
    if (ep->prev)
        ep->prev->next = ep->next;
    else
        s->live = ep->next;
    if (ep->next)
        ep->next->prev = ep->prev;
    free(ep->observation);
    free(ep);
}

static int python_env_reset(void *state, const tern_task *task, uint64_t seed, void **handle,
                            tern_env_result *out)
{
    python_env *s = state;
    episode *ep = calloc(1, sizeof *ep);
    if (!ep)
        return host->fail(s->ctx, TERN_ENOMEM, "python_env: out of memory opening an episode");
    ep->id = ++s->next_id;
    ep->next = s->live;
    if (s->live)
        s->live->prev = ep;
    s->live = ep;
    char why[TERN_ENV_REASON_MAX];
    if (env_worker_ensure(&s->worker, why, sizeof why) != 0) {
        host->log(s->ctx, TERN_LOG_WARN, "the Python worker did not start again: %s", why);
        end_failed(ep, out, TERN_ENV_START, why);
        *handle = ep;
        return TERN_OK;
    }
    ep->generation = s->worker.generation;
    char *task_json = host->task_json(task, "");
    size_t n = 0;
    char *request = task_json ? env_request_reset(ep->id, seed, task_json, &n) : NULL;
    host->free(task_json);
    if (!request) {
        forget(s, ep);
        return host->fail(s->ctx, TERN_ENOMEM, "python_env: out of memory writing a reset");
    }
    ask(s, ep, request, n, 0, out);
    free(request);
    *handle = ep;
    return TERN_OK;
}

static int python_env_step(void *state, void *handle, const tern_env_action *action,
                           tern_env_result *out)
{
    python_env *s = state;
    episode *ep = handle;
    free(ep->observation); /* the last one is the core's no more */
    ep->observation = NULL;
    if (ep->ended) {
        char why[TERN_ENV_REASON_MAX];
        snprintf(why, sizeof why, "stepped after the episode ended (after turn %" PRIu32 ")",
                 ep->turns);
        out->failure = TERN_ENV_AFTER_DONE;
        set_reason(out, why);
        return TERN_OK;
    }
    if (!ep->lost && (ep->generation != s->worker.generation || !env_worker_running(&s->worker))) {
        ep->lost = TERN_ENV_CRASH; /* not seen die: said so anyway */
        snprintf(ep->lost_reason, sizeof ep->lost_reason, "its worker is gone");
    }
    if (ep->lost) {
        end_failed(ep, out, ep->lost, ep->lost_reason);
        return TERN_OK;
    }
    ep->turns++;
    size_t n = 0;
    char *request = env_request_step(ep->id, action->text ? action->text : "",
                                     action->text ? action->text_len : 0, &n);
    if (!request)
        return host->fail(s->ctx, TERN_ENOMEM, "python_env: out of memory writing a step");
    ask(s, ep, request, n, 1, out);
    free(request);
    return TERN_OK;
}

static void python_env_close(void *state, void *handle)
{
    python_env *s = state;
    episode *ep = handle;
    if (!ep)
        return;
    /* its instance is dropped with the next request (a dead worker took it along) */
    if (!ep->lost && ep->generation == s->worker.generation && env_worker_running(&s->worker) &&
        env_worker_close_later(&s->worker, ep->id) != 0)
        host->log(s->ctx, TERN_LOG_WARN, "out of memory: episode %" PRIu64 " stays in the "
                  "worker until it ends", ep->id);
    forget(s, ep);
}

static int python_env_tools(void *state, const char **schemas)
{
    python_env *s = state;
    *schemas = s->worker.tools;
    return TERN_OK;
}

/* A call of one of the class's tools on the episode's instance. A worker
 * that dies or hangs meanwhile ends the episodes it held, as a step does;
 * the call is then a failed one, which the model reads. */
static int python_env_call_tool(void *state, void *handle, const tern_tool_call *call,
                                tern_tool_result *out)
{
    python_env *s = state;
    episode *ep = handle;
    out->status = TERN_TOOL_FAILED;
    if (!ep || ep->ended || ep->lost || ep->generation != s->worker.generation ||
        !env_worker_running(&s->worker)) {
        snprintf(out->output, out->output_cap, "the episode's Python worker is gone");
        out->output_len = strlen(out->output);
        return TERN_OK;
    }
    size_t n = 0;
    char *request = env_request_call(ep->id, call->name, call->arguments,
                                     out->output_cap - 1, &n);
    if (!request)
        return host->fail(s->ctx, TERN_ENOMEM, "python_env: out of memory writing a call");
    const char *line = NULL;
    size_t len = 0;
    char why[TERN_ENV_REASON_MAX];
    uint64_t gen = s->worker.generation;
    uint32_t f = env_worker_call(&s->worker, request, n, &line, &len, why, sizeof why);
    free(request);
    if (f == TERN_ENV_OK && env_parse_call_reply(line, len, out, why, sizeof why) == ENV_ANSWERED)
        return TERN_OK;
    if (f == TERN_ENV_OK) { /* out of step: what it says next means nothing */
        env_worker_kill(&s->worker);
        f = TERN_ENV_GARBAGE;
    }
    worker_lost(s, ep, gen, f, why);
    ep->lost = f;
    snprintf(ep->lost_reason, sizeof ep->lost_reason, "its worker ended in a tool call: %.120s",
             why);
    out->status = TERN_TOOL_FAILED;
    snprintf(out->output, out->output_cap, "the tool's Python worker ended: %s", why);
    out->output_len = strlen(out->output);
    return TERN_OK;
}

static void python_env_destroy(void *state)
{
    python_env *s = state;
    if (!s)
        return;
    while (s->live) /* the core closed them all; a test may not have */
        forget(s, s->live);
    env_worker_free(&s->worker);
    free(s);
}

static int python_env_create(tern_ctx *ctx, void **state)
{
    python_env *s = calloc(1, sizeof *s);
    if (!s)
        return host->fail(ctx, TERN_ENOMEM, "python_env: out of memory");
    s->ctx = ctx;
    s->worker.child.fd = -1;
    const char *file = NULL, *cls = NULL, *python = NULL;
    int64_t timeout_ms = 0;
    int rc = host->get_string(ctx, "file", &file);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "class", &cls);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "python", &python);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "timeout_ms", &timeout_ms);
    if (rc == TERN_OK && (!*file || !*cls || !*python))
        rc = host->setting_error(ctx, !*file ? "file" : !*cls ? "class" : "python", "is empty");
    if (rc == TERN_OK) {
        const char *dir = TERN_HAS(host, config_dir) ? host->config_dir(ctx) : ".";
        char limit[24];
        snprintf(limit, sizeof limit, "%u", TERN_ENV_OBSERVATION_MAX);
        /* -u: unbuffered; -c: the runner; then its own arguments */
        const char *argv[] = {python, "-u", "-c", tern_env_runner, file, cls, limit, NULL};
        char why[600];
        int ran = 0;
        if (env_worker_open(&s->worker, argv, dir, timeout_ms, &ran, why, sizeof why) != 0)
            rc = ran ? host->setting_error(ctx, "file", "%s%s%s does not load: %s",
                                           file[0] == '/' ? "" : dir, file[0] == '/' ? "" : "/",
                                           file, why)
                     : host->setting_error(ctx, "python", "%s", why);
    }
    if (rc != TERN_OK) {
        python_env_destroy(s);
        return rc;
    }
    *state = s;
    return TERN_OK;
}

static const tern_environment_ops python_env_ops = {
    .size = sizeof python_env_ops,
    .create = python_env_create,
    .destroy = python_env_destroy,
    .reset = python_env_reset,
    .step = python_env_step,
    .close = python_env_close,
    .tools = python_env_tools,
    .call_tool = python_env_call_tool,
};

static const tern_setting_spec python_env_settings[] = {
    TERN_SETTING(.name = "file", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED,
                 .aka = "module|script|path",
                 .doc = "the Python file that defines the environment's class, relative to the "
                        "config's directory"),
    TERN_SETTING(.name = "class", .type = TERN_SETTING_STRING, .def = "\"Env\"",
                 .aka = "class_name|name",
                 .doc = "the class: reset(self, task) returns the first observation, "
                        "step(self, action) returns (observation, reward, done)"),
    TERN_SETTING(.name = "python", .type = TERN_SETTING_STRING, .def = "\"python3\"",
                 .aka = "interpreter",
                 .doc = "the interpreter: a name on PATH or a path (a venv's bin/python)"),
    TERN_SETTING(.name = "timeout_ms", .type = TERN_SETTING_INT, .def = "10000", .min = 1,
                 .max = 86400000, .aka = "reply_timeout_ms",
                 .doc = "the longest one reset or step may take; then that episode fails "
                        "(timeout) and the worker is killed and started again"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor python_env_descriptor = {
    .size = sizeof python_env_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_ENVIRONMENT,
    .name = PYTHON_ENV_NAME,
    .version = "1.0.0",
    .summary = "an environment written in Python (a class with reset and step), run in a "
               "supervised Python process",
    .caps = 0,
    .ops = &python_env_ops,
    .settings = python_env_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &python_env_descriptor;
}
