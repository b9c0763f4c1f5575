/* host_table.c: the services plugins reach through tern_host (see tern/host.h). */
#include "host/host_table.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errmsg.h"
#include "base/log.h"
#include "config/schema.h"
#include "data/task.h"
#include "tern/rng.h"

struct tern_ctx {
    char *label;
    tern_config *config;
    config_setting_t *group;
    const tern_setting_spec *spec;
    uint64_t run_seed;
    tern_metrics *metrics;
    tern_trace *trace;
    char config_dir[PATH_MAX]; /* host->config_dir */
};

tern_ctx *tern_ctx_new(const char *label, tern_config *config, config_setting_t *group,
                       const tern_setting_spec *spec, uint64_t run_seed, tern_metrics *metrics,
                       tern_trace *trace)
{
    tern_ctx *c = calloc(1, sizeof *c);
    if (!c || !(c->label = strdup(label))) {
        free(c);
        return NULL;
    }
    c->config = config;
    c->group = group;
    c->spec = spec;
    c->run_seed = run_seed;
    c->metrics = metrics;
    c->trace = trace;
    /* the config file's directory (a text config's label has none: ".") */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", config && config->path ? config->path : ".");
    char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(path, sizeof path, ".");
    else if (slash == path)
        path[1] = '\0'; /* "/x.cfg": the root */
    else
        *slash = '\0';
    if (!realpath(path, c->config_dir))
        snprintf(c->config_dir, sizeof c->config_dir, "%s", path);
    return c;
}

void tern_ctx_free(tern_ctx *ctx)
{
    if (!ctx)
        return;
    free(ctx->label);
    free(ctx);
}

const char *tern_ctx_label(const tern_ctx *ctx) { return ctx ? ctx->label : "plugin"; }


/* Set in an isolated reward worker (tern_host_enter_worker). */
static int in_worker;

void tern_host_enter_worker(void) { in_worker = 1; }

/* A worker's log line: formatted on the stack, written with one write(2). */
static void worker_log(tern_ctx *ctx, tern_log_level level, const char *fmt, va_list ap)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char line[1024];
    int n = snprintf(line, sizeof line, "tern: %s: [%s worker %ld] ",
                     names[level <= TERN_LOG_DEBUG ? level : 0], tern_ctx_label(ctx),
                     (long)getpid());
    if (n < 0 || (size_t)n >= sizeof line - 2)
        return;
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = m < 0 ? (size_t)n : (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    for (size_t i = (size_t)n; i < len; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w;
}

static void host_log(tern_ctx *ctx, tern_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (in_worker) {
        if (level <= TERN_LOG_WARN)
            worker_log(ctx, level, fmt, ap);
        va_end(ap);
        return;
    }
    tern_vlogf(level, tern_ctx_label(ctx), fmt, ap);
    va_end(ap);
}

static int host_fail(tern_ctx *ctx, int status, const char *fmt, ...)
{
    (void)ctx;
    va_list ap;
    va_start(ap, fmt);
    tern_verrorf(status, fmt, ap);
    va_end(ap);
    return status;
}

/* Find the declared, present setting `key`; fail with a message otherwise. */
static int find_setting(tern_ctx *ctx, const char *key, const tern_setting_spec **sp,
                        config_setting_t **s)
{
    *sp = NULL;
    if (!ctx || !key)
        return tern_errorf(TERN_EINVAL, "setting lookup without a context or key");
    *sp = tern_spec_find_path(ctx->spec, key);
    if (!*sp)
        return tern_errorf(TERN_ENOTFOUND,
                           "%s: the plugin asked for setting '%s', which its settings spec does "
                           "not declare (a bug in the plugin)", ctx->label, key);
    *s = ctx->group ? tern_config_lookup(ctx->group, key) : NULL;
    if (!*s && ((*sp)->flags & TERN_SETTING_IN_RUN_DIR))
        return tern_errorf(TERN_ENOTFOUND, "%s.%s is not set: `tern run` puts it in the run "
                           "directory; outside a run, set %s.%s to the file to use",
                           ctx->label, key, ctx->label, key);
    if (!*s)
        return tern_errorf(TERN_ENOTFOUND, "%s.%s is not set", ctx->label, key);
    return TERN_OK;
}

#define TYPE_BIT(t) (1u << (t))
#define INTEGER_TYPES (TYPE_BIT(CONFIG_TYPE_INT) | TYPE_BIT(CONFIG_TYPE_INT64))

/* find_setting, then check its libconfig type is one of the TYPE_BITs in
 * `types` (`want` names them in the message). */
static int find_typed(tern_ctx *ctx, const char *key, unsigned types, const char *want,
                      config_setting_t **s)
{
    const tern_setting_spec *sp;
    int rc = find_setting(ctx, key, &sp, s);
    if (rc != TERN_OK)
        return rc;
    int t = config_setting_type(*s);
    if (!(types & TYPE_BIT(t)))
        return tern_errorf(TERN_EINVAL, "%s.%s is %s, not %s", ctx->label, key,
                           tern_config_type_name(t), want);
    return TERN_OK;
}

static int host_get_int(tern_ctx *ctx, const char *key, int64_t *out)
{
    config_setting_t *s;
    int rc = find_typed(ctx, key, INTEGER_TYPES, "an integer", &s);
    if (rc == TERN_OK)
        *out = config_setting_get_int64(s);
    return rc;
}

static int host_get_float(tern_ctx *ctx, const char *key, double *out)
{
    config_setting_t *s;
    /* integers widen (docs/config.md) */
    int rc = find_typed(ctx, key, TYPE_BIT(CONFIG_TYPE_FLOAT) | INTEGER_TYPES, "a float", &s);
    if (rc == TERN_OK)
        *out = config_setting_type(s) == CONFIG_TYPE_FLOAT
                   ? config_setting_get_float(s)
                   : (double)config_setting_get_int64(s);
    return rc;
}

static int host_get_bool(tern_ctx *ctx, const char *key, int *out)
{
    config_setting_t *s;
    int rc = find_typed(ctx, key, TYPE_BIT(CONFIG_TYPE_BOOL), "a boolean", &s);
    if (rc == TERN_OK)
        *out = config_setting_get_bool(s);
    return rc;
}

static int host_get_string(tern_ctx *ctx, const char *key, const char **out)
{
    config_setting_t *s;
    int rc = find_typed(ctx, key, TYPE_BIT(CONFIG_TYPE_STRING), "a string", &s);
    if (rc == TERN_OK)
        *out = config_setting_get_string(s);
    return rc;
}

static int host_get_count(tern_ctx *ctx, const char *key, size_t *out)
{
    config_setting_t *s;
    *out = 0;
    int rc = find_typed(ctx, key, TYPE_BIT(CONFIG_TYPE_LIST) | TYPE_BIT(CONFIG_TYPE_ARRAY),
                        "a list", &s);
    if (rc == TERN_OK)
        *out = (size_t)config_setting_length(s);
    else if (rc == TERN_ENOTFOUND && tern_spec_find_path(ctx->spec, key))
        rc = TERN_OK; /* declared but absent: a list with no elements */
    return rc;
}

static int host_setting_error(tern_ctx *ctx, const char *key, const char *fmt, ...)
{
    char msg[1024], where[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    config_setting_t *s = NULL;
    if (ctx && ctx->group)
        s = key ? tern_config_lookup(ctx->group, key) : NULL;
    const config_setting_t *at = s ? s : (ctx ? ctx->group : NULL);
    if (ctx && ctx->config && at)
        tern_config_where(ctx->config, at, where, sizeof where);
    else
        snprintf(where, sizeof where, "config");
    return tern_errorf(TERN_ECONFIG, "%s: %s%s%s: %s", where, tern_ctx_label(ctx),
                       key ? "." : "", key ? key : "", msg);
}

static void host_metric(tern_ctx *ctx, const char *name, double value)
{
    tern_metrics *to = ctx ? ctx->metrics : NULL;
    if (in_worker || !ctx || !to || !name)
        return;
    char full[160];
    snprintf(full, sizeof full, "%s.%s", ctx->label, name);
    tern_metrics_observe(to, full, value);
}

static uint64_t host_span_begin(tern_ctx *ctx, const char *name)
{
    return !in_worker && ctx && ctx->trace ? tern_trace_begin(ctx->trace, name) : 0;
}

static void host_span_end(tern_ctx *ctx, uint64_t token, const char *args_json)
{
    if (!in_worker && ctx && ctx->trace)
        tern_trace_end(ctx->trace, token, args_json);
}

/* FNV-1a over the instance label and the stream name, mixed with the run
 * seed: stable across runs and platforms, distinct per (instance, stream). */
static uint64_t host_rng_seed(tern_ctx *ctx, const char *stream)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const char *parts[2] = {tern_ctx_label(ctx), stream ? stream : ""};
    for (int i = 0; i < 2; i++) {
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
            h = (h ^ *p) * 0x100000001b3ull;
        h = (h ^ 0xff) * 0x100000001b3ull; /* separator: ("ab","c") != ("a","bc") */
    }
    uint64_t x = (ctx ? ctx->run_seed : 0) ^ h;
    return tern_splitmix64(&x);
}

static void host_free(void *p) { free(p); }

static void host_note(tern_ctx *ctx, const char *key, const char *value)
{
    if (in_worker || !ctx || !ctx->metrics || !key || !value)
        return;
    size_t n = strlen(key);
    if (n == 0 || n > 63 || strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_.") != n)
        return;
    char v[256];
    snprintf(v, sizeof v, "%s", value);
    v[strcspn(v, "\r\n")] = 0; /* one line */
    tern_metrics_note(ctx->metrics, ctx->label, key, v);
    tern_logf(TERN_LOG_DEBUG, ctx->label, "%s: %s", key, v);
}

static const char *host_config_dir(tern_ctx *ctx) { return ctx ? ctx->config_dir : "."; }

static const tern_host host_table = {
    .size = sizeof(tern_host),
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .version = TERN_VERSION_STRING,
    .log = host_log,
    .fail = host_fail,
    .get_int = host_get_int,
    .get_float = host_get_float,
    .get_bool = host_get_bool,
    .get_string = host_get_string,
    .get_count = host_get_count,
    .setting_error = host_setting_error,
    .metric = host_metric,
    .span_begin = host_span_begin,
    .span_end = host_span_end,
    .now_ns = tern_mono_ns,
    .rng_seed = host_rng_seed,
    .task_string = tern_task_string,
    .task_number = tern_task_number,
    .task_json = tern_task_json,
    .free = host_free,
    .task_origin = tern_task_origin,
    .note = host_note,
    .config_dir = host_config_dir,
};

const tern_host *tern_host_table(void) { return &host_table; }
