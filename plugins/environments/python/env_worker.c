/* env_worker.c: the python environment's supervised worker (see env_worker.h). */
#include "env_worker.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env_protocol.h"
#include "tern/support/wait_status.h"

/* How long a starting worker may take to load the user's file (python3 and
 * its imports: numpy alone takes a while on a busy machine), how long a
 * finishing one is given before it is killed. */
enum { READY_MS = 60000, STOP_GRACE_MS = 1000 };
/* The longest answer line: an observation at TERN_ENV_OBSERVATION_MAX whose
 * every byte JSON escapes (\u00XX), and room for the rest of the answer. */
#define ANSWER_LINE_MAX (6 * (size_t)TERN_ENV_OBSERVATION_MAX + 65536)

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t deadline_after(int64_t ms)
{
    return ms > 0 ? now_ns() + (uint64_t)ms * 1000000ull : 0;
}

/* Kill the worker: *death (NULL is fine) gets how it ended. */
static void kill_worker(env_worker *w, char *death, size_t n)
{
    int status = 0;
    exec_child_kill(&w->child, &status);
    if (death)
        tern_wait_status_text(status, death, n);
    w->closes_len = 0; /* they were for that worker's episodes */
}

/* Wait for the worker's ready line: 0, or -1 with why[0..n). */
static int await_ready(env_worker *w, char *why, size_t n)
{
    const char *line = NULL;
    size_t len = 0;
    exec_io io = exec_child_ask(&w->child, "", 0, deadline_after(READY_MS), &line, &len);
    if (io == EXEC_IO_OK) {
        json_t *v = json_loadb(line, len, 0, NULL);
        json_t *err = json_object_get(v, "error");
        int ok = json_is_true(json_object_get(v, "ready"));
        json_t *tools = json_object_get(v, "tools");
        if (ok && json_is_array(tools) && json_array_size(tools)) {
            /* the class's tools: the same file each start, so the last is kept */
            free(w->tools);
            w->tools = json_dumps(tools, JSON_COMPACT | JSON_ENSURE_ASCII);
        }
        if (!ok)
            snprintf(why, n, "%s", json_is_string(err) ? json_string_value(err)
                                                      : "it did not say it was ready");
        json_decref(v);
        if (ok)
            return 0;
    }
    char death[64];
    kill_worker(w, death, sizeof death);
    if (io == EXEC_IO_TIMEOUT)
        snprintf(why, n, "it did not say it was ready within %d s", READY_MS / 1000);
    else if (io != EXEC_IO_OK)
        snprintf(why, n, "it %s before it was ready (its stderr says why)", death);
    return -1;
}

/* Start a worker: 0, or -1 with why; *ran 0 when the program did not run. */
static int start(env_worker *w, int *ran, char *why, size_t n)
{
    char what[400];
    *ran = 0;
    if (exec_child_start(&w->child, w->argv, w->dir, what, sizeof what) != 0) {
        snprintf(why, n, "cannot start '%s' (in %s): %s", w->argv[0], w->dir, what);
        return -1;
    }
    *ran = 1;
    w->child.max_line = ANSWER_LINE_MAX;
    w->generation++;
    return await_ready(w, why, n);
}

int env_worker_open(env_worker *w, const char *const *argv, const char *dir, int64_t timeout_ms,
                    int *started_at_all, char *why, size_t n)
{
    memset(w, 0, sizeof *w);
    w->child.fd = -1;
    w->timeout_ms = timeout_ms;
    *started_at_all = 0;
    for (size_t i = 0; argv[i] && i < ENV_WORKER_ARGS; i++)
        if (!(w->argv[i] = strdup(argv[i]))) {
            snprintf(why, n, "out of memory");
            return -1;
        }
    if (!(w->dir = strdup(dir))) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    return start(w, started_at_all, why, n);
}

int env_worker_running(const env_worker *w) { return w->child.pid != 0; }

int env_worker_ensure(env_worker *w, char *why, size_t n)
{
    int ran;
    return env_worker_running(w) ? 0 : start(w, &ran, why, n);
}

/* request[0..n) after the pending closes, in one buffer: a malloc'd copy,
 * or `request` itself when none is pending (*owned 0). */
static const char *with_closes(env_worker *w, const char *request, size_t n, size_t *total,
                               char **owned)
{
    *owned = NULL;
    *total = n;
    if (!w->closes_len)
        return request;
    char *all = malloc(w->closes_len + n);
    if (!all)
        return request; /* the closes wait for the next call */
    memcpy(all, w->closes, w->closes_len);
    memcpy(all + w->closes_len, request, n);
    *total = w->closes_len + n;
    w->closes_len = 0;
    *owned = all;
    return all;
}

uint32_t env_worker_call(env_worker *w, const char *request, size_t n, const char **line,
                         size_t *len, char *why, size_t cap)
{
    char *owned;
    size_t total;
    const char *out = with_closes(w, request, n, &total, &owned);
    exec_io io = exec_child_ask(&w->child, out, total, deadline_after(w->timeout_ms), line, len);
    free(owned);
    if (io == EXEC_IO_OK)
        return TERN_ENV_OK;
    char death[64];
    kill_worker(w, death, sizeof death);
    switch (io) {
    case EXEC_IO_TIMEOUT:
        snprintf(why, cap, "no answer within %lld ms (timeout_ms): the worker was killed",
                 (long long)w->timeout_ms);
        return TERN_ENV_TIMEOUT;
    case EXEC_IO_TOO_LONG:
        snprintf(why, cap, "the worker's answer is over %zu bytes without a newline",
                 ANSWER_LINE_MAX);
        return TERN_ENV_GARBAGE;
    default:
        snprintf(why, cap, "the worker %s (its stderr says why)", death);
        return TERN_ENV_CRASH;
    }
}

void env_worker_kill(env_worker *w) { kill_worker(w, NULL, 0); }

int env_worker_close_later(env_worker *w, uint64_t id)
{
    char line[64];
    size_t k = env_request_close(id, line, sizeof line);
    if (w->closes_cap - w->closes_len < k) {
        size_t cap = w->closes_cap ? 2 * w->closes_cap : 1024;
        char *b = realloc(w->closes, cap);
        if (!b)
            return -1;
        w->closes = b;
        w->closes_cap = cap;
    }
    memcpy(w->closes + w->closes_len, line, k);
    w->closes_len += k;
    return 0;
}

void env_worker_free(env_worker *w)
{
    exec_child_stop(&w->child, STOP_GRACE_MS);
    for (int i = 0; w->argv[i]; i++)
        free(w->argv[i]);
    free(w->dir);
    free(w->closes);
    free(w->tools);
    memset(w, 0, sizeof *w);
    w->child.fd = -1;
}
