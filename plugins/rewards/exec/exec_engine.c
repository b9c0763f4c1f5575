/* exec_engine.c: a supervised command judging responses (see exec_engine.h). */
#include "exec_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tern/support/wait_status.h"

enum { DEATHS_IN_A_ROW = 3, STOP_GRACE_MS = 1000 };

/* No verdict for r: why, and a reason for a user (cut to fit). */
static void no_verdict(tern_reward_result *r, tern_reward_failure why, const char *reason)
{
    size_t size = r->size;
    memset(r, 0, sizeof *r);
    r->size = size;
    r->failure = why;
    size_t k = strnlen(reason, sizeof r->reason - 1);
    memcpy(r->reason, reason, k);
    r->reason[k] = '\0';
}

/* Wait for the command's ready line: 0, or -1 with why[0..n) saying what
 * it said or how it ended. */
static int await_ready(exec_engine *e, char *why, size_t n)
{
    const char *line = NULL;
    size_t len = 0;
    uint64_t deadline = e->host->now_ns() + (uint64_t)e->ready_ms * 1000000ull;
    exec_io io = exec_child_ask(&e->child, "", 0, deadline, &line, &len);
    if (io == EXEC_IO_OK) {
        json_t *v = json_loadb(line, len, 0, NULL);
        json_t *err = json_object_get(v, "error");
        int ok = json_is_true(json_object_get(v, "ready"));
        if (!ok)
            snprintf(why, n, "%s", json_is_string(err) ? json_string_value(err)
                                                      : "it did not say it was ready");
        json_decref(v);
        if (ok)
            return 0;
    }
    int status = 0;
    exec_child_kill(&e->child, &status);
    if (io == EXEC_IO_TIMEOUT)
        snprintf(why, n, "it did not say it was ready within start_timeout_ms = %lld (a "
                 "file that takes longer to load needs a larger one)", (long long)e->ready_ms);
    else if (io != EXEC_IO_OK) {
        char death[64];
        tern_wait_status_text(status, death, sizeof death);
        snprintf(why, n, "it %s before it was ready (its stderr says why)", death);
    }
    return -1;
}

/* Start the command: 0, or -1 with why[0..n) saying why. */
static int start(exec_engine *e, char *why, size_t n)
{
    char what[400];
    if (exec_child_start(&e->child, e->argv, e->dir, what, sizeof what) != 0) {
        snprintf(why, n, "cannot start '%s' (in %s): %s", e->argv[0], e->dir, what);
        return -1;
    }
    if (e->ready_ms > 0 && await_ready(e, what, sizeof what) != 0) {
        snprintf(why, n, "%s", what);
        return -1;
    }
    return 0;
}

int exec_engine_start(exec_engine *e, const tern_host *host, tern_ctx *ctx,
                      const char *const *argv, const char *dir, int64_t timeout_ms,
                      int64_t ready_ms, const char *key)
{
    memset(e, 0, sizeof *e);
    e->host = host;
    e->ctx = ctx;
    e->child.fd = -1;
    e->timeout_ms = timeout_ms;
    e->ready_ms = ready_ms;
    for (size_t i = 0; argv[i] && i < EXEC_MAX_ARGS; i++)
        if (!(e->argv[i] = strdup(argv[i])))
            return host->fail(ctx, TERN_ENOMEM, "out of memory");
    if (!(e->dir = strdup(dir)))
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    char why[600];
    if (start(e, why, sizeof why) != 0)
        return host->setting_error(ctx, key, "%s", why);
    return TERN_OK;
}

void exec_engine_free(exec_engine *e)
{
    exec_child_stop(&e->child, STOP_GRACE_MS);
    for (int i = 0; e->argv[i]; i++)
        free(e->argv[i]);
    free(e->dir);
    exec_names_free(&e->names);
    memset(e, 0, sizeof *e);
    e->child.fd = -1;
}

/* Make sure the command runs; 0, or -1 with items[from..n) failed. */
static int ensure_running(exec_engine *e, tern_reward_result *res, size_t from, size_t n)
{
    if (e->child.pid != 0)
        return 0;
    char why[600];
    if (e->deaths >= DEATHS_IN_A_ROW) {
        snprintf(why, sizeof why, "the command died %d times in a row without a verdict (its "
                 "stderr says why); not started again in this batch", e->deaths);
    } else if (start(e, why, sizeof why) == 0) {
        e->host->log(e->ctx, TERN_LOG_WARN, "the command was started again (pid %ld)",
                     (long)e->child.pid);
        return 0;
    } else {
        e->host->log(e->ctx, TERN_LOG_WARN, "the command did not start again: %s", why);
        e->deaths = DEATHS_IN_A_ROW;
    }
    for (size_t k = from; k < n; k++)
        no_verdict(&res[k], TERN_REWARD_START, why);
    return -1;
}

/* No verdict for item k: the command is dead, late or out of step (io and
 * what the reply said); it is killed, to be started again for the next. */
static void lost(exec_engine *e, tern_reward_result *r, exec_io io, int garbage)
{
    char msg[TERN_REWARD_REASON_MAX];
    int status = 0;
    if (garbage)
        snprintf(msg, sizeof msg, "%s", r->reason);
    /* its output closed: how it ended is its own unless tern had to stop it */
    int ended_by_tern = 0;
    if (!garbage && io != EXEC_IO_TIMEOUT && io != EXEC_IO_TOO_LONG)
        ended_by_tern = exec_child_end(&e->child, 200, &status);
    else
        exec_child_kill(&e->child, &status);
    e->deaths++;
    if (garbage) {
        no_verdict(r, TERN_REWARD_GARBAGE, msg);
    } else if (io == EXEC_IO_TIMEOUT) {
        snprintf(msg, sizeof msg, "no verdict within %lld ms: the command was killed",
                 (long long)e->timeout_ms);
        no_verdict(r, TERN_REWARD_TIMEOUT, msg);
    } else if (io == EXEC_IO_TOO_LONG) {
        snprintf(msg, sizeof msg, "the command's reply is longer than %u bytes without a "
                 "newline", EXEC_MAX_LINE);
        no_verdict(r, TERN_REWARD_GARBAGE, msg);
    } else if (ended_by_tern) {
        snprintf(msg, sizeof msg, "the command closed its output without a verdict and was "
                 "still running; tern stopped it");
        no_verdict(r, TERN_REWARD_CRASH, msg);
    } else {
        char death[64];
        tern_wait_status_text(status, death, sizeof death);
        snprintf(msg, sizeof msg, "the command %s", death);
        no_verdict(r, TERN_REWARD_CRASH, msg);
    }
}

/* The requests of items[0..n) back to back, at[k] where item k's starts
 * (at[n] the end); NULL at[k] - at[k+1] empty for an item whose request
 * could not be written (res[k] says why). */
static char *requests(exec_engine *e, const tern_reward_item *items, tern_reward_result *res,
                      size_t n, size_t *at)
{
    size_t len = 0, cap = 0;
    char *all = NULL;
    for (size_t k = 0; k < n; k++) {
        at[k] = len;
        char *task = e->host->task_json(items[k].task, "");
        size_t m = 0;
        char *req = task ? exec_request(task, items[k].response, items[k].response_len,
                                        items[k].response_tokens, &m)
                         : NULL;
        e->host->free(task);
        if (!req) {
            no_verdict(&res[k], TERN_REWARD_ERROR, "out of memory writing the request");
            continue;
        }
        if (len + m > cap) {
            size_t nc = (len + m) * 2;
            char *b = realloc(all, nc);
            if (!b) {
                free(req);
                no_verdict(&res[k], TERN_REWARD_ERROR, "out of memory writing the request");
                continue;
            }
            all = b;
            cap = nc;
        }
        memcpy(all + len, req, m);
        len += m;
        free(req);
    }
    at[n] = len;
    return all;
}

int exec_engine_score(exec_engine *e, const tern_reward_item *items, tern_reward_result *results,
                      size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!TERN_HAS(&results[i], failure))
            return e->host->fail(e->ctx, TERN_EINVAL, "this reward needs a tern with ABI 1.10 "
                                 "or newer (per-response failures)");
    e->deaths = 0; /* each batch gives the command its chances again */
    size_t *at = calloc(n + 1, sizeof *at);
    char *all = at ? requests(e, items, results, n, at) : NULL;
    if (!at || (n && at[n] && !all)) {
        free(at);
        return e->host->fail(e->ctx, TERN_ENOMEM, "out of memory writing the requests");
    }
    /* every request of the batch goes out while the verdicts come back, in
     * order; after a lost verdict the command is started again and the
     * requests after it are sent again */
    size_t k = 0;
    while (k < n) {
        if (at[k + 1] == at[k]) { /* its request could not be written */
            k++;
            continue;
        }
        if (ensure_running(e, results, k, n) != 0)
            break;
        size_t base = at[k], sent = 0, total = at[n] - base;
        for (; k < n; k++) {
            if (at[k + 1] == at[k])
                continue;
            /* each verdict within the timeout of the one before it */
            uint64_t deadline =
                e->timeout_ms > 0 ? e->host->now_ns() + (uint64_t)e->timeout_ms * 1000000ull : 0;
            const char *line = NULL;
            size_t len = 0;
            exec_io io = exec_child_pump(&e->child, all + base, total, &sent, deadline, &line,
                                         &len);
            tern_reward_result *r = &results[k];
            if (io != EXEC_IO_OK) {
                lost(e, r, io, 0);
                k++;
                break;
            }
            exec_reply kind = exec_parse_reply(line, len, r, &e->names);
            if (kind == EXEC_GARBAGE) {
                lost(e, r, io, 1);
                k++;
                break;
            }
            e->deaths = 0;
            if (kind == EXEC_ERROR) {
                r->failure = TERN_REWARD_ERROR;
                r->n_components = 0;
            }
        }
    }
    free(all);
    free(at);
    return TERN_OK;
}
