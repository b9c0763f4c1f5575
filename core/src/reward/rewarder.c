/* rewarder.c: reward routing by domain, in process or isolated (see
 * rewarder.h). */
#include "reward/rewarder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/op_watch.h"
#include "base/log.h"
#include "data/task.h"
#include "tern/plugin.h"
#include "tern/support/utf8.h"

/* Isolated responses get this long unless `timeout_ms` says otherwise. */
#define DEFAULT_TIMEOUT_MS 10000

static int setting_bool(config_setting_t *g, const char *key)
{
    config_setting_t *s = config_setting_get_member(g, key);
    return s && config_setting_type(s) == CONFIG_TYPE_BOOL && config_setting_get_bool(s);
}

/* "FILE:LINE: " of a setting, for messages ("" for generated text, whose
 * lines mean nothing to the user). */
static void where(config_setting_t *s, char *buf, size_t cap)
{
    const char *file = config_setting_source_file(s);
    if (file)
        snprintf(buf, cap, "%s:%u: ", file, config_setting_source_line(s));
    else
        buf[0] = '\0';
}

/* A FLOAT setting's value (an integer literal is accepted for it too), or
 * `def` when the group does not have it. */
static double setting_number(const config_setting_t *group, const char *name, double def)
{
    config_setting_t *s = config_setting_get_member(group, name);
    if (!s)
        return def;
    return config_setting_type(s) == CONFIG_TYPE_FLOAT ? config_setting_get_float(s)
                                                      : (double)config_setting_get_int64(s);
}

static int open_route(tern_reward_route *r, tern_instance *in)
{
    config_setting_t *d = config_setting_get_member(in->group, "domain");
    config_setting_t *t = config_setting_get_member(in->group, "timeout_ms");
    r->domain = d ? config_setting_get_string(d) : "";
    r->weight = setting_number(in->group, "weight", 1.0);
    r->label = in->label;
    r->instance = in;
    r->ops = in->entry->plugin->desc->ops;
    r->state = in->state;
    r->ctx = in->ctx;
    r->thread_safe = (in->entry->plugin->desc->caps & TERN_CAP_THREAD_SAFE) != 0;
    int isolate = setting_bool(in->group, "isolate");
    if (t && !isolate) {
        char at[512];
        where(t, at, sizeof at);
        return tern_errorf(TERN_ECONFIG, "%s%s.timeout_ms: a timeout needs isolate = true "
                           "(a call inside tern cannot be stopped); add isolate = true; or "
                           "remove timeout_ms", at, in->label);
    }
    r->timeout_ms = t ? config_setting_get_int64(t) : DEFAULT_TIMEOUT_MS;
    r->watchdog_ns = (uint64_t)(setting_number(in->group, "watchdog_s", 60) * 1e9);
    if (isolate)
        return tern_reward_worker_start(&r->worker, r->ops, r->ctx, r->label);
    return TERN_OK;
}

int tern_rewarder_open(tern_rewarder *rw, tern_session *s)
{
    memset(rw, 0, sizeof *rw);
    size_t n = 0;
    for (size_t i = 0; i < s->n_inst; i++)
        n += s->inst[i].slot->kind == TERN_KIND_REWARD && s->inst[i].created;
    rw->routes = calloc(n ? n : 1, sizeof *rw->routes);
    if (!rw->routes)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->n_inst; i++) {
        tern_instance *in = &s->inst[i];
        if (in->slot->kind != TERN_KIND_REWARD || !in->created)
            continue;
        tern_reward_route *r = &rw->routes[rw->n++];
        pthread_mutex_init(&r->lock, NULL);
        int rc = open_route(r, in);
        if (rc != TERN_OK)
            return rc;
    }
    return TERN_OK;
}

void tern_rewarder_close(tern_rewarder *rw)
{
    for (size_t i = 0; i < rw->n; i++) {
        tern_reward_worker_stop(rw->routes[i].worker);
        pthread_mutex_destroy(&rw->routes[i].lock);
    }
    free(rw->routes);
    memset(rw, 0, sizeof *rw);
}

static int routes_domain(const tern_reward_route *r, const char *domain)
{
    return !r->domain || (domain && strcmp(r->domain, domain) == 0);
}

static int has_route(const tern_rewarder *rw, const char *domain)
{
    for (size_t i = 0; i < rw->n; i++)
        if (routes_domain(&rw->routes[i], domain))
            return 1;
    return 0;
}

int tern_rewarder_check_domains(const tern_rewarder *rw, const tern_task_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        const char *dom = tern_task_string(set->tasks[i], "domain");
        if (!dom || has_route(rw, dom))
            continue;
        size_t count = 0;
        for (size_t j = 0; j < set->n; j++) {
            const char *o = tern_task_string(set->tasks[j], "domain");
            count += o && strcmp(o, dom) == 0;
        }
        return tern_errorf(TERN_ECONFIG, "%s: %zu task%s of domain \"%s\" but no reward plugin "
                           "scores that domain: add { domain = \"%s\"; plugin = \"...\"; } to "
                           "rewards (`tern plugins` lists the reward plugins)",
                           set->path, count, count == 1 ? " is" : "s are", dom, dom);
    }
    return TERN_OK;
}

/* Copy a plugin's reason into a verdict: bytes that are not printable ASCII
 * or part of valid UTF-8 (utf8.h: no overlongs or surrogates, which JSON
 * writers refuse) become '?', so that logs and JSON stay sound. */
static void keep_reason(char *dst, const char *src)
{
    size_t n = strnlen(src, TERN_REWARD_REASON_MAX - 1), o = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char *u = (const unsigned char *)src + i;
        size_t len = u[0] < 0x80 ? 1 : tern_utf8_len(u, n - i);
        int ok = len > 1 || (len == 1 && u[0] >= 0x20 && u[0] != 0x7f);
        if (ok) {
            memcpy(dst + o, src + i, len);
            o += len, i += len;
        } else {
            dst[o++] = '?';
            i++;
        }
    }
    dst[o] = '\0';
}

/* The bytes of a tern_reward_result a plugin built for ABI minor `minor`
 * knows: `failure` came in 1.10. */
#define RESULT_FAILURE_MINOR 10
static size_t result_bytes(uint32_t minor)
{
    return minor < RESULT_FAILURE_MINOR ? offsetof(tern_reward_result, failure)
                                        : sizeof(tern_reward_result);
}

/* ops->score on res[0..m), handed to a plugin built for an older minor as an
 * array of the results it knows, at its own stride (tern/abi.h: structs grow
 * at the end, so an array of today's would be misread from its second
 * element on), and copied back. */
static int score_at_plugin_stride(const tern_reward_route *rt, const tern_reward_item *items,
                                  tern_reward_result *res, size_t m)
{
    size_t known = result_bytes(rt->instance->entry->plugin->desc->abi_minor);
    if (known >= sizeof *res)
        return rt->ops->score(rt->state, items, res, m);
    char *old = calloc(m ? m : 1, known);
    if (!old)
        return tern_errorf(TERN_ENOMEM, "%s: out of memory scoring %zu responses", rt->label, m);
    for (size_t k = 0; k < m; k++)
        memcpy(old + k * known, &known, sizeof known); /* size: the first member */
    int st = rt->ops->score(rt->state, items, (tern_reward_result *)(void *)old, m);
    for (size_t k = 0; k < m; k++) {
        memcpy(&res[k], old + k * known, known);
        res[k].size = sizeof res[k];
        res[k].failure = TERN_REWARD_OK;
    }
    free(old);
    return st;
}

/* Run one route over its m items: in process (the whole batch in one call)
 * or in its worker. fail[k] says which items got no verdict. */
static int call_route(tern_rewarder *rw, tern_reward_route *rt, const tern_reward_item *items,
                      tern_reward_result *res, tern_reward_failure *fail, size_t m, int here)
{
    int rc = TERN_OK;
    if (rw->remote && !here) {
        rc = rw->remote(rw->remote_arg, (size_t)(rt - rw->routes), items, res, fail, m);
        goto judged;
    }
    int locked = rt->worker || !rt->thread_safe;
    if (locked)
        pthread_mutex_lock(&rt->lock);
    if (rt->worker) {
        uint64_t before = rw->restarts;
        rc = tern_reward_worker_score(rt->worker, items, res, fail, m, rt->timeout_ms,
                                      &rw->restarts);
        if (rw->restarts > before)
            tern_logf(TERN_LOG_WARN, rt->label, "reward worker restarted %llu time%s",
                      (unsigned long long)(rw->restarts - before),
                      rw->restarts - before == 1 ? "" : "s");
    } else {
        /* named if it crashes (SIGSEGV...) or runs past watchdog_s */
        char task[128];
        tern_op_mark mark = {
            .who = rt->label, .plugin = rt->instance->entry->name,
            .path = rt->instance->entry->path, .op = "score",
            .task = m && *tern_task_id_text(items[0].task, task, sizeof task) ? task : NULL,
            .items = m,
            .fix = "with isolate = true in its config group (`-o isolate=true` for `tern reward "
                   "score`) a crash or a hang costs only its response, which a run keeps in "
                   "reward_failures.jsonl",
            .limit_ns = rt->watchdog_ns};
        tern_error_clear();
        tern_op_enter(&mark);
        int st = score_at_plugin_stride(rt, items, res, m);
        tern_op_leave(&mark);
        if (st != TERN_OK) {
            const char *msg = tern_error_message();
            tern_logf(TERN_LOG_WARN, rt->label, "the reward plugin failed on %zu responses, "
                      "scored 0: %s", m, *msg ? msg : "it gave no reason");
            for (size_t k = 0; k < m; k++) {
                fail[k] = TERN_REWARD_ERROR;
                snprintf(res[k].reason, sizeof res[k].reason, "the plugin failed: %s",
                         *msg ? msg : "it gave no reason");
            }
        } else {
            /* a response the plugin says it could not judge fails alone */
            for (size_t k = 0; k < m; k++) {
                fail[k] = tern_reward_failure_of(res[k].failure);
                if (fail[k] != TERN_REWARD_OK)
                    res[k].n_components = 0;
            }
        }
    }
    if (locked)
        pthread_mutex_unlock(&rt->lock);
judged:
    for (size_t k = 0; k < m; k++)
        if (fail[k] == TERN_REWARD_OK && !isfinite(res[k].reward)) {
            fail[k] = TERN_REWARD_NONFINITE;
            snprintf(res[k].reason, sizeof res[k].reason, "the plugin gave a non-finite "
                     "reward");
        } else if (fail[k] == TERN_REWARD_OK &&
                   fabs(res[k].reward) > TERN_REWARD_MAGNITUDE_MAX) {
            fail[k] = TERN_REWARD_NONFINITE; /* its sums would overflow the figures */
            snprintf(res[k].reason, sizeof res[k].reason, "the plugin gave a reward of %g, "
                     "beyond the %g either way the core takes (TERN_REWARD_MAGNITUDE_MAX)",
                     res[k].reward, TERN_REWARD_MAGNITUDE_MAX);
        }
    return rc;
}

/* Fold one route's result into a verdict. */
static void add_result(tern_verdict *v, int *have_acc, int first, const tern_reward_route *rt,
                       size_t route, const tern_reward_result *r, tern_reward_failure fail,
                       tern_metrics *observe)
{
    if (first || (fail != TERN_REWARD_OK && !v->failed))
        keep_reason(v->reason, r->reason);
    if (fail != TERN_REWARD_OK) {
        if (!v->failed) {
            v->failure = tern_reward_failure_name(fail);
            v->failure_code = (uint32_t)fail;
            v->failed_route = route;
        }
        v->failed = 1;
        if (observe) {
            char name[64];
            snprintf(name, sizeof name, "reward/failed/%s", tern_reward_failure_name(fail));
            tern_metrics_observe(observe, name, 1);
        }
        return;
    }
    v->reward += rt->weight * r->reward;
    for (uint32_t c = 0; c < r->n_components && c < TERN_REWARD_MAX_COMPONENTS; c++) {
        const tern_reward_component *rc = &r->components[c];
        if (!rc->name || !isfinite(rc->value))
            continue;
        size_t nl = strnlen(rc->name, TERN_EXPERIENCE_NAME_MAX + 1);
        if (!tern_reward_name_ok(rc->name, nl))
            continue;
        if (observe) {
            char name[96];
            snprintf(name, sizeof name, "reward/%s", rc->name);
            tern_metrics_observe(observe, name, rc->value);
        }
        if (v->n_parts < TERN_EXPERIENCE_MAX_PARTS) {
            memcpy(v->part_name[v->n_parts], rc->name, nl);
            v->part_name[v->n_parts][nl] = '\0';
            v->part_value[v->n_parts++] = rc->value;
        }
        if (!*have_acc && strcmp(rc->name, "accuracy") == 0) {
            v->accuracy = rc->value >= 0.5;
            *have_acc = 1;
        }
    }
}

int tern_rewarder_route_score(tern_rewarder *rw, size_t route, const tern_reward_item *items,
                              tern_reward_result *res, tern_reward_failure *fail, size_t m)
{
    return call_route(rw, &rw->routes[route], items, res, fail, m, 1);
}

int tern_rewarder_score(tern_rewarder *rw, const tern_task *const *tasks,
                        const char *const *texts, const uint32_t *ntok, size_t n,
                        tern_verdict *out, uint64_t *failures, tern_metrics *observe)
{
    size_t cap = n ? n : 1;
    tern_reward_item *items = calloc(cap, sizeof *items);
    tern_reward_result *res = calloc(cap, sizeof *res);
    tern_reward_failure *fail = calloc(cap, sizeof *fail);
    size_t *which = calloc(cap, sizeof *which);
    int *have_acc = calloc(cap, sizeof *have_acc);
    int *scored = calloc(cap, sizeof *scored);
    int rc = TERN_OK;
    if (!items || !res || !fail || !which || !have_acc || !scored) {
        rc = tern_errorf(TERN_ENOMEM, "out of memory scoring rewards");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (tern_verdict){0};
    for (size_t r = 0; r < rw->n && rc == TERN_OK; r++) {
        tern_reward_route *rt = &rw->routes[r];
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (!routes_domain(rt, tern_task_string(tasks[i], "domain")))
                continue;
            items[m] = (tern_reward_item){.size = sizeof items[m], .task = tasks[i],
                                          .response = texts[i], .response_len = strlen(texts[i]),
                                          .response_tokens = ntok[i]};
            memset(&res[m], 0, sizeof res[m]);
            res[m].size = sizeof res[m];
            which[m++] = i;
        }
        if (!m)
            continue;
        rc = call_route(rw, rt, items, res, fail, m, 0);
        for (size_t k = 0; k < m && rc == TERN_OK; k++) {
            size_t i = which[k];
            add_result(&out[i], &have_acc[i], !scored[i], rt, r, &res[k], fail[k], observe);
            scored[i] = 1;
        }
    }
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        if (out[i].failed) {
            (*failures)++;
            out[i].reward = 0; /* what the other routes gave is not a verdict alone */
        }
        /* only a plugin's "accuracy" says right: a reward above 0 alone is
         * no verdict (accuracy_tally.h) */
        out[i].judged = have_acc[i];
        if (!have_acc[i] || out[i].failed)
            out[i].accuracy = 0;
    }
done:
    free(items), free(res), free(fail), free(which), free(have_acc), free(scored);
    return rc;
}
