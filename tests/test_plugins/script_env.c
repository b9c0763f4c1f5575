/* script_env.c: a test double of an environment plugin (tern/environment.h)
 * whose episodes follow its settings, for the tests of multi-turn runs:
 *
 *   turns        the episode is done after this many steps (default 3)
 *   observation  each step's observation is "<observation> <turn>"
 *   first        reset's first observation ("" : none, the task's prompt)
 *   fail         "none", or how the episode at an odd seed fails at step
 *                fail_turn: "error" (a failure the episode reports),
 *                "nan" (a NaN reward), "silent" (no observation, not done),
 *                "first" (every episode's first observation differs),
 *                "reset" (reset reports a failure), "broken" (step returns
 *                TERN_ERR: the plugin itself is broken)
 *   trace        a file each reset and step appends a JSON line to:
 *                {"reset": SEED} and {"seed": SEED, "turn": T, "ids": [...],
 *                 "text": "..."} (the action's ids exactly as they came; bytes of
 *                 the text outside ASCII as '?', to stay JSON)
 *   delay_ms     each step sleeps this long first (a slow environment, for
 *                bench/bench_agents.c)
 *
 * Thread-safe (episodes are independent; trace lines are written whole
 * under a lock), so the core may step several episodes at once.
 *
 * Turn t's reward is t / 8, so a done episode of 3 turns returns 0.75. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/environment.h"
#include "tern/plugin.h"

static const tern_host *host;

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct env {
    int64_t turns, fail_turn, delay_ms;
    const char *observation, *first, *fail, *trace;
    tern_ctx *ctx;
} env;

typedef struct episode {
    uint64_t seed;
    uint32_t turn;
    char obs[256];
} episode;

static int env_create(tern_ctx *ctx, void **state)
{
    env *e = calloc(1, sizeof *e);
    if (!e)
        return host->fail(ctx, TERN_ENOMEM, "script_env: out of memory");
    e->ctx = ctx;
    int rc = host->get_int(ctx, "turns", &e->turns);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "fail_turn", &e->fail_turn);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "observation", &e->observation);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "first", &e->first);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "fail", &e->fail);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "trace", &e->trace);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "delay_ms", &e->delay_ms);
    if (rc != TERN_OK) {
        free(e);
        return rc;
    }
    *state = e;
    return TERN_OK;
}

static void env_destroy(void *state) { free(state); }

static int failing(const env *e, const episode *ep, const char *how)
{
    return strcmp(e->fail, how) == 0 && ep->seed % 2 == 1;
}

static void trace_line(const env *e, const char *line)
{
    if (!*e->trace)
        return;
    pthread_mutex_lock(&trace_lock);
    FILE *f = fopen(e->trace, "a");
    if (f) {
        fputs(line, f);
        fclose(f);
    }
    pthread_mutex_unlock(&trace_lock);
}

static int env_reset(void *state, const tern_task *task, uint64_t seed, void **episode_out,
                     tern_env_result *out)
{
    (void)task;
    env *e = state;
    episode *ep = calloc(1, sizeof *ep);
    if (!ep)
        return host->fail(e->ctx, TERN_ENOMEM, "script_env: out of memory");
    ep->seed = seed % 1000000007u; /* JSON integers are int64 */
    *episode_out = ep;
    char line[64];
    snprintf(line, sizeof line, "{\"reset\": %" PRIu64 "}\n", ep->seed);
    trace_line(e, line);
    if (failing(e, ep, "reset")) {
        out->failure = TERN_ENV_ERROR;
        snprintf(out->reason, sizeof out->reason, "reset told to fail at seed %" PRIu64,
                 ep->seed);
        return TERN_OK;
    }
    if (strcmp(e->fail, "first") == 0)
        snprintf(ep->obs, sizeof ep->obs, "Start %" PRIu64 ".", seed % 1000);
    else
        snprintf(ep->obs, sizeof ep->obs, "%s", e->first);
    out->observation = *ep->obs ? ep->obs : NULL;
    return TERN_OK;
}

static int env_step(void *state, void *episode_in, const tern_env_action *a,
                    tern_env_result *out)
{
    env *e = state;
    episode *ep = episode_in;
    if (e->delay_ms > 0) {
        struct timespec d = {e->delay_ms / 1000, (long)(e->delay_ms % 1000) * 1000000L};
        while (nanosleep(&d, &d) != 0)
            ;
    }
    ep->turn++;
    /* the action, as it came: ids and text */
    size_t cap = 64 + 12 * a->n_tokens + 6 * a->text_len, n = 0;
    char *line = malloc(cap);
    if (!line)
        return host->fail(e->ctx, TERN_ENOMEM, "script_env: out of memory");
    n += (size_t)snprintf(line + n, cap - n, "{\"seed\": %" PRIu64 ", \"turn\": %u, \"ids\": [",
                          ep->seed, a->turn);
    for (size_t k = 0; k < a->n_tokens; k++)
        n += (size_t)snprintf(line + n, cap - n, "%s%d", k ? ", " : "", a->tokens[k]);
    n += (size_t)snprintf(line + n, cap - n, "], \"text\": \"");
    for (size_t k = 0; k < a->text_len; k++) {
        unsigned char c = (unsigned char)a->text[k];
        if (c == '"' || c == '\\')
            n += (size_t)snprintf(line + n, cap - n, "\\%c", c);
        else if (c < 0x20)
            n += (size_t)snprintf(line + n, cap - n, "\\u%04x", c);
        else if (c >= 0x80) /* model output is any bytes: the trace stays JSON */
            line[n++] = '?';
        else
            line[n++] = (char)c;
    }
    snprintf(line + n, cap - n, "\"}\n");
    trace_line(e, line);
    free(line);
    if (ep->turn == (uint32_t)e->fail_turn) {
        if (failing(e, ep, "broken"))
            return host->fail(e->ctx, TERN_ERR, "script_env: told to break");
        if (failing(e, ep, "error")) {
            out->failure = TERN_ENV_ERROR;
            snprintf(out->reason, sizeof out->reason, "told to fail at turn %u", ep->turn);
            return TERN_OK;
        }
        if (failing(e, ep, "nan")) {
            out->reward = NAN;
            snprintf(ep->obs, sizeof ep->obs, "%s %u", e->observation, ep->turn);
            out->observation = ep->obs;
            return TERN_OK;
        }
        if (failing(e, ep, "silent"))
            return TERN_OK; /* no observation, not done */
    }
    out->reward = ep->turn / 8.0;
    if (ep->turn >= (uint32_t)e->turns) {
        out->done = 1;
        snprintf(out->reason, sizeof out->reason, "done after %u turns", ep->turn);
        return TERN_OK;
    }
    snprintf(ep->obs, sizeof ep->obs, "%s %u", e->observation, ep->turn);
    out->observation = ep->obs;
    return TERN_OK;
}

static void env_close(void *state, void *ep) { (void)state, free(ep); }

static const tern_environment_ops ops = {
    .size = sizeof ops, .create = env_create, .destroy = env_destroy,
    .reset = env_reset, .step = env_step, .close = env_close};

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "turns", .type = TERN_SETTING_INT, .def = "3", .min = 1, .max = 1000,
                 .doc = "done after this many steps"),
    TERN_SETTING(.name = "fail_turn", .type = TERN_SETTING_INT, .def = "1", .min = 1,
                 .max = 1000, .doc = "the step at which an odd-seeded episode fails"),
    TERN_SETTING(.name = "observation", .type = TERN_SETTING_STRING, .def = "\"go on\"",
                 .doc = "each step's observation, then the turn"),
    TERN_SETTING(.name = "first", .type = TERN_SETTING_STRING, .def = "\"\"",
                 .doc = "reset's first observation; empty: the task's prompt"),
    TERN_SETTING(.name = "fail", .type = TERN_SETTING_STRING, .def = "\"none\"",
                 .choices = "none|error|nan|silent|first|reset|broken",
                 .doc = "how an odd-seeded episode fails"),
    TERN_SETTING(.name = "trace", .type = TERN_SETTING_STRING, .def = "\"\"",
                 .doc = "a file of every reset and step, JSON lines"),
    TERN_SETTING(.name = "delay_ms", .type = TERN_SETTING_INT, .def = "0", .min = 0,
                 .max = 60000, .doc = "each step sleeps this long first"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor desc = {
    .size = sizeof desc, .abi_major = TERN_ABI_MAJOR, .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_ENVIRONMENT, .name = "script_env", .version = "1.0.0",
    .summary = "a test environment whose episodes follow its settings", .ops = &ops,
    .caps = TERN_CAP_THREAD_SAFE,
    .settings = settings};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &desc;
}
