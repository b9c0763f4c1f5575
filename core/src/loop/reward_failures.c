/* reward_failures.c: the run's reward_failures.jsonl (see reward_failures.h). */
#include "loop/reward_failures.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/append_file.h"
#include "base/errmsg.h"
#include "rundir/jsonl_append.h"
#include "base/log.h"
#include "tern/support/utf8.h"

#define FILE_NAME "reward_failures.jsonl"

int tern_failure_log_open(tern_failure_log *fl, const char *dir, const tern_rewarder *rw)
{
    memset(fl, 0, sizeof *fl);
    snprintf(fl->path, sizeof fl->path, "%s/" FILE_NAME, dir);
    fl->n_routes = rw->n;
    fl->said = calloc(rw->n ? rw->n : 1, 1);
    if (!fl->said)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    pthread_mutex_init(&fl->lock, NULL);
    return TERN_OK;
}

void tern_failure_log_close(tern_failure_log *fl)
{
    if (!fl->said)
        return; /* never opened */
    if (fl->f)
        fclose(fl->f);
    free(fl->said);
    pthread_mutex_destroy(&fl->lock);
    memset(fl, 0, sizeof *fl);
}

/* `s` as one shell word ('...', a ' inside as '\''). */
static void shell_word(FILE *mem, const char *s)
{
    fputc('\'', mem);
    for (; *s; s++)
        if (*s == '\'')
            fputs("'\\''", mem);
        else
            fputc(*s, mem);
    fputc('\'', mem);
}

/* The value of setting e as libconfig text, or 0 for a list or group (which
 * -o cannot give). */
static int setting_text(FILE *mem, const config_setting_t *e)
{
    switch (config_setting_type(e)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        fprintf(mem, "%lld", config_setting_get_int64(e));
        return 1;
    case CONFIG_TYPE_FLOAT:
        fprintf(mem, "%.17g", config_setting_get_float(e));
        return 1;
    case CONFIG_TYPE_BOOL:
        fputs(config_setting_get_bool(e) ? "true" : "false", mem);
        return 1;
    case CONFIG_TYPE_STRING:
        fputc('"', mem);
        for (const char *c = config_setting_get_string(e); *c; c++) {
            if (*c == '"' || *c == '\\')
                fputc('\\', mem);
            fputc(*c, mem);
        }
        fputc('"', mem);
        return 1;
    default:
        return 0;
    }
}

/* The command that scores the file again with route rt's plugin and
 * settings (plugin, domain and weight are the route's, not the plugin's).
 * A new string, or NULL without memory. */
static char *reproduce_command(const tern_reward_route *rt, const char *path)
{
    char *cmd = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&cmd, &len);
    if (!mem)
        return NULL;
    const config_setting_t *g = rt->instance->group;
    fprintf(mem, "tern reward score --plugin %s", rt->instance->entry->name);
    int skipped = 0;
    for (int i = 0; i < config_setting_length(g); i++) {
        const config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
        const char *name = config_setting_name(e);
        if (strcmp(name, "plugin") == 0 || strcmp(name, "domain") == 0 ||
            strcmp(name, "weight") == 0)
            continue;
        char *value = NULL;
        size_t vlen = 0;
        FILE *v = open_memstream(&value, &vlen);
        if (!v)
            break;
        int ok = setting_text(v, e);
        fclose(v);
        if (ok) {
            char *kv = NULL;
            if (asprintf(&kv, "%s=%s", name, value) >= 0) {
                fputs(" -o ", mem);
                shell_word(mem, kv);
                free(kv);
            }
        } else {
            skipped++;
        }
        free(value);
    }
    fputs(" < ", mem);
    shell_word(mem, path);
    if (skipped)
        fprintf(mem, " (and the list or group setting%s of %s in config.cfg, which -o cannot "
                "give)", skipped == 1 ? "" : "s", rt->label);
    fclose(mem);
    return cmd;
}

/* One line: the task, the response, and what went wrong. */
static json_t *failure_line(const tern_rewarder *rw, const tern_task *t, const char *text,
                            uint32_t ntok, const tern_verdict *v, const char *stage, int64_t at)
{
    json_t *o = json_deep_copy(tern_task_object(t));
    /* model output is any bytes; a JSON string holds UTF-8 only */
    char *shown = tern_utf8_clean(text), *reason = tern_utf8_clean(v->reason);
    if (!o || !shown || !reason) {
        json_decref(o), free(shown), free(reason);
        return NULL;
    }
    const tern_reward_route *rt = &rw->routes[v->failed_route];
    json_t *why = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "reward", rt->label, "plugin",
                            rt->instance->entry->name, "failure", v->failure ? v->failure : "?",
                            "reason", reason, "stage", stage,
                            strcmp(stage, "eval") == 0 ? "version" : "batch", (json_int_t)at);
    int ok = why && json_object_set_new(o, "response", json_string(shown)) == 0 &&
             json_object_set_new(o, "response_tokens", json_integer(ntok)) == 0 &&
             json_object_set_new(o, "tern_failure", why) == 0;
    free(shown), free(reason);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

void tern_failure_log_keep(tern_failure_log *fl, const tern_rewarder *rw,
                          const tern_task *const *tasks, const char *const *texts,
                          const uint32_t *ntok, const tern_verdict *v, size_t n,
                          const char *stage, int64_t at)
{
    if (!fl->said)
        return; /* not opened: a run that failed before its directory existed */
    int rc = TERN_OK;
    pthread_mutex_lock(&fl->lock);
    for (size_t i = 0; i < n && rc == TERN_OK && !fl->broken; i++) {
        if (!v[i].failed || v[i].failed_route >= fl->n_routes)
            continue;
        if (!fl->f && !(fl->f = tern_append_open(fl->path, FILE_NAME))) {
            rc = tern_errorf(TERN_EIO, "%s; the responses that got no verdict are not kept",
                             tern_error_message());
            break;
        }
        json_t *o = failure_line(rw, tasks[i], texts[i], ntok[i], &v[i], stage, at);
        rc = o ? tern_jsonl_append(fl->f, o, FILE_NAME)
               : tern_errorf(TERN_ENOMEM, "out of memory keeping a reward failure");
        json_decref(o);
        if (rc != TERN_OK)
            break;
        fl->kept++;
        size_t r = v[i].failed_route;
        if (!fl->said[r]) {
            fl->said[r] = 1;
            char *cmd = reproduce_command(&rw->routes[r], fl->path);
            tern_logf(TERN_LOG_WARN, rw->routes[r].label,
                      "a response got no verdict from '%s' (%s: %s); it and every later one "
                      "are kept in %s; score them again with: %s", rw->routes[r].instance->entry->name,
                      v[i].failure ? v[i].failure : "?", v[i].reason, fl->path,
                      cmd ? cmd : "tern reward score (out of memory writing the command)");
            free(cmd);
        }
    }
    if (rc != TERN_OK && !fl->broken) {
        fl->broken = 1;
        tern_logf(TERN_LOG_WARN, "reward", "%s; the run goes on without keeping them",
                  tern_error_message());
    }
    pthread_mutex_unlock(&fl->lock);
}

void tern_failure_log_keep_episode(tern_failure_log *fl, const char *source, const char *plugin,
                                   const tern_task *task, const char *text, uint32_t ntok,
                                   const char *failure, const char *reason, uint32_t turns,
                                   const char *stage, int64_t at)
{
    if (!fl->said)
        return; /* not opened: a run that failed before its directory existed */
    pthread_mutex_lock(&fl->lock);
    int rc = TERN_OK;
    if (!fl->broken && !fl->f && !(fl->f = tern_append_open(fl->path, FILE_NAME)))
        rc = tern_errorf(TERN_EIO, "%s; the trajectories their environment failed are not kept",
                         tern_error_message());
    if (rc == TERN_OK && !fl->broken) {
        json_t *o = json_deep_copy(tern_task_object(task));
        char *shown = tern_utf8_clean(text ? text : ""), *why = tern_utf8_clean(reason ? reason
                                                                                 : "");
        json_t *f = o && shown && why
                        ? json_pack("{s:s, s:s, s:s, s:i, s:s, s:I}", source, plugin,
                                    "failure", failure, "reason", why, "turns", (int)turns,
                                    "stage", stage,
                                    strcmp(stage, "eval") == 0 ? "version" : "batch",
                                    (json_int_t)at)
                        : NULL;
        int ok = f && json_object_set_new(o, "response", json_string(shown)) == 0 &&
                 json_object_set_new(o, "response_tokens", json_integer(ntok)) == 0;
        if (ok)
            ok = json_object_set_new(o, "tern_failure", f) == 0; /* takes f, even failing */
        else
            json_decref(f);
        rc = ok ? tern_jsonl_append(fl->f, o, FILE_NAME)
                : tern_errorf(TERN_ENOMEM, "out of memory keeping an environment failure");
        if (rc == TERN_OK) {
            fl->kept++;
            if (!fl->said_episode) {
                fl->said_episode = 1;
                tern_logf(TERN_LOG_WARN, source,
                          "'%s' ended a trajectory with a failure (%s: %s); it and every later "
                          "one are kept in %s, and the run goes on", plugin, failure,
                          why ? why : "", fl->path);
            }
        }
        json_decref(o);
        free(shown), free(why);
    }
    if (rc != TERN_OK && !fl->broken) {
        fl->broken = 1;
        tern_logf(TERN_LOG_WARN, "environment", "%s; the run goes on without keeping them",
                  tern_error_message());
    }
    pthread_mutex_unlock(&fl->lock);
}
