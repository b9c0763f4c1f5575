/* session.c: config + plugins + instances (see session.h). */
#include "host/session.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "base/op_watch.h"
#include "config/schema.h"
#include "tern/sync.h"

/* Each kind's create/destroy sit first after `size` in every ops table. */
typedef struct ops_head {
    size_t size;
    int (*create)(tern_ctx *ctx, void **state);
    void (*destroy)(void *state);
} ops_head;

static const ops_head *head_of(const tern_instance *in)
{
    return (const ops_head *)in->entry->plugin->desc->ops;
}

/* Rules of the run section the schema cannot say. */
static void check_run_section(tern_session *s, tern_diag *d)
{
    config_setting_t *ns = config_lookup(&s->config.cfg, "run.name");
    const char *name = ns ? config_setting_get_string(ns) : NULL;
    if (name && (!*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
                 strcmp(name, "..") == 0)) {
        char where[600];
        tern_diag_addf(d, "%s: run.name: '%s' cannot name a directory: use letters, digits, "
                       "'-', '_' or '.' without '/'",
                       tern_config_where(&s->config, ns, where, sizeof where), name);
    }
}

static int add_instance(tern_session *s, const tern_slot_def *slot, config_setting_t *group,
                        int index)
{
    tern_instance *ni = realloc(s->inst, (s->n_inst + 1) * sizeof *ni);
    if (!ni)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    s->inst = ni;
    tern_instance *in = &s->inst[s->n_inst++];
    memset(in, 0, sizeof *in);
    in->slot = slot;
    in->group = group;
    if (index >= 0)
        snprintf(in->label, sizeof in->label, "%s[%d]", slot->section, index);
    else
        snprintf(in->label, sizeof in->label, "%s", slot->section);
    return TERN_OK;
}

/* Log a warning once and keep it for log.txt (tern_session.warnings). */
static void session_warn(tern_session *s, const char *fmt, ...)
{
    char *line = NULL;
    va_list ap;
    va_start(ap, fmt);
    int w = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    for (size_t i = 0; i < s->n_warnings; i++)
        if (strcmp(s->warnings[i], line) == 0) {
            free(line);
            return; /* two instances of one plugin: said once */
        }
    tern_logf(TERN_LOG_WARN, "plugins", "%s", line);
    char **nw = realloc(s->warnings, (s->n_warnings + 1) * sizeof *nw);
    if (!nw) {
        free(line);
        return;
    }
    s->warnings = nw;
    s->warnings[s->n_warnings++] = line;
}

/* No silent fallback: a copy of the plugin that was refused earlier on the
 * search path (a rebuild in --plugin-dir with the wrong ABI, say) is named
 * with its reason every time the older copy is used instead. */
static void warn_shadowed(tern_session *s, const tern_registry_entry *e)
{
    for (const tern_registry_entry *sh = NULL;
         (sh = tern_registry_next_shadow(&s->registry, e, sh)) != NULL;)
        session_warn(s, "plugin '%s': using %s, because the copy before it on the search path "
                     "was refused: %s", e->name, e->path, sh->refusal);
}

/* Find the plugin an instance names and check its group. */
static void resolve_instance(tern_session *s, tern_instance *in, tern_diag *d)
{
    char where[600];
    config_setting_t *ps = config_setting_get_member(in->group, "plugin");
    const char *name = ps ? config_setting_get_string(ps) : NULL;
    const tern_setting_spec *specs[2] = {in->slot->keys, NULL};

    if (strcmp(in->slot->section, "reference") == 0) {
        config_setting_t *same = config_setting_get_member(in->group, "same_as");
        if (same && ps) {
            tern_diag_addf(d, "%s: reference: give either plugin or same_as, not both",
                           tern_config_where(&s->config, in->group, where, sizeof where));
            name = NULL;
        } else if (!same && !ps) {
            tern_diag_addf(d, "%s: reference: missing 'plugin' (or same_as = \"model\" for a "
                           "frozen copy of the policy)",
                           tern_config_where(&s->config, in->group, where, sizeof where));
        }
        if (same && !config_setting_get_member(config_root_setting(&s->config.cfg), "model"))
            tern_diag_addf(d, "%s: reference.same_as = \"model\", but there is no model section",
                           tern_config_where(&s->config, same, where, sizeof where));
    }

    if (name) {
        const tern_registry_entry *e = NULL;
        if (tern_registry_resolve(&s->registry, name, in->slot->kind, in->label, &e) == TERN_OK) {
            in->entry = e;
            specs[1] = e->plugin->desc->settings;
            warn_shadowed(s, e);
        } else {
            tern_diag_addf(d, "%s: %s.plugin: %s",
                           tern_config_where(&s->config, ps, where, sizeof where), in->label,
                           tern_error_message());
        }
    }
    /* Without the plugin its keys are unknown to us: check only the core's. */
    unsigned flags = in->entry ? 0 : TERN_SCHEMA_ALLOW_UNKNOWN;
    size_t nspecs = in->entry && specs[1] ? 2 : 1;
    tern_schema_check(&s->config, in->group, specs, nspecs, flags, d);
}

static int collect_instances(tern_session *s)
{
    config_setting_t *root = config_root_setting(&s->config.cfg);
    for (size_t i = 0; i < tern_n_slots; i++) {
        const tern_slot_def *slot = &tern_slots[i];
        config_setting_t *sec = config_setting_get_member(root, slot->section);
        if (!sec)
            continue;
        int t = config_setting_type(sec);
        if (slot->is_list) {
            if (t != CONFIG_TYPE_LIST)
                continue; /* the core schema reported it */
            for (int j = 0; j < config_setting_length(sec); j++) {
                config_setting_t *g = config_setting_get_elem(sec, (unsigned)j);
                if (config_setting_type(g) == CONFIG_TYPE_GROUP &&
                    add_instance(s, slot, g, j) != TERN_OK)
                    return TERN_ENOMEM;
            }
        } else if (t == CONFIG_TYPE_GROUP) {
            if (add_instance(s, slot, sec, -1) != TERN_OK)
                return TERN_ENOMEM;
        }
    }
    return TERN_OK;
}

/* Does a TERN_SETTING_IN_RUN_DIR key of the instance's plugin lack a value? */
static int waits_for_run_dir(const tern_instance *in)
{
    for (const tern_setting_spec *sp = in->entry->plugin->desc->settings; sp && sp->name;
         sp = tern_spec_next(sp))
        if ((sp->flags & TERN_SETTING_IN_RUN_DIR) &&
            !config_setting_get_member(in->group, sp->name))
            return 1;
    return 0;
}

/* Run the create() of one resolved instance; a failure is one line in d.
 * TERN_OK, TERN_ECONFIG for a config problem, or the runtime failure. */
static int start_one(tern_session *s, tern_instance *in, tern_diag *d)
{
    if (!in->ctx)
        in->ctx = tern_ctx_new(in->label, &s->config, in->group,
                               in->entry->plugin->desc->settings, s->seed, s->metrics, s->trace);
    if (!in->ctx) {
        tern_diag_addf(d, "%s: out of memory", in->label);
        return TERN_ENOMEM;
    }
    uint64_t span = tern_trace_begin(s->trace, "start_plugin");
    tern_error_clear();
    int rc = head_of(in)->create(in->ctx, &in->state);
    char args[160];
    snprintf(args, sizeof args, "{\"instance\":\"%s\",\"plugin\":\"%s\"}", in->label,
             in->entry->name);
    tern_trace_end(s->trace, span, args);
    if (rc != TERN_OK) {
        const char *msg = tern_error_message();
        tern_diag_addf(d, "%s: plugin '%s' (%s) failed to start: %s", in->label,
                       in->entry->name, in->entry->path,
                       *msg ? msg : "it gave no reason (a bug in the plugin)");
        in->state = NULL;
        int config_problem = rc == TERN_ECONFIG || rc == TERN_EINVAL || rc == TERN_ENOTFOUND;
        return config_problem ? TERN_ECONFIG : (rc < 0 ? rc : TERN_ERR);
    }
    in->created = 1;
    tern_logf(TERN_LOG_DEBUG, in->label, "started plugin '%s' from %s", in->entry->name,
              in->entry->path);
    return TERN_OK;
}

static int start_instances(tern_session *s, tern_diag *d)
{
    int status = TERN_OK;
    for (size_t i = 0; i < s->n_inst; i++) {
        tern_instance *in = &s->inst[i];
        if (!in->entry)
            continue;
        if (waits_for_run_dir(in)) {
            /* its file belongs in a run directory that does not exist yet */
            in->waits_for_run_dir = 1;
            continue;
        }
        int rc = start_one(s, in, d);
        if (rc == TERN_ENOMEM)
            return rc;
        if (rc != TERN_OK && (status == TERN_OK || rc != TERN_ECONFIG))
            status = rc;
    }
    return status;
}

int tern_session_start_in_run_dir(tern_session *s, const char *dir)
{
    for (size_t i = 0; i < s->n_inst; i++) {
        tern_instance *in = &s->inst[i];
        if (!in->waits_for_run_dir)
            continue;
        for (const tern_setting_spec *sp = in->entry->plugin->desc->settings; sp && sp->name;
             sp = tern_spec_next(sp)) {
            char name[256], *path = NULL;
            if (!(sp->flags & TERN_SETTING_IN_RUN_DIR) ||
                config_setting_get_member(in->group, sp->name) ||
                tern_spec_run_file_name(sp, name, sizeof name) != TERN_OK)
                continue;
            if (asprintf(&path, "%s/%s", dir, name) < 0)
                return tern_errorf(TERN_ENOMEM, "out of memory");
            config_setting_t *v = config_setting_add(in->group, sp->name, CONFIG_TYPE_STRING);
            int ok = v && config_setting_set_string(v, path) == CONFIG_TRUE;
            free(path);
            if (!ok)
                return tern_errorf(TERN_ENOMEM, "out of memory");
        }
        tern_diag d;
        tern_diag_init(&d);
        int rc = start_one(s, in, &d);
        if (rc != TERN_OK)
            tern_errorf(rc, "%s", d.n ? d.msgs[0] : "out of memory");
        tern_diag_free(&d);
        if (rc != TERN_OK)
            return rc;
        in->waits_for_run_dir = 0;
    }
    return TERN_OK;
}

/* The body of tern_session_open and tern_session_open_text: the config comes
 * from the file `path`, or from `text` (named `label`) when text is not NULL. */
static int session_open(tern_session *s, const char *path, const char *text, const char *label,
                        const char *const *overrides, size_t n_overrides, int start,
                        tern_diag *d)
{
    memset(s, 0, sizeof *s);
    s->metrics = tern_metrics_new();
    s->trace = tern_trace_new();
    if (!s->metrics || !s->trace) {
        tern_diag_addf(d, "out of memory");
        return TERN_ENOMEM;
    }
    int read = text ? tern_config_read_string(&s->config, text, label, d)
                    : tern_config_read_file(&s->config, path, d);
    if (read != TERN_OK)
        return read == TERN_ENOMEM ? TERN_ENOMEM : TERN_ECONFIG;
    s->have_config = 1;
    size_t before = d->n;
    for (size_t i = 0; i < n_overrides; i++)
        tern_config_override(&s->config, overrides[i], d);
    if (d->n > before)
        return TERN_ECONFIG; /* a broken override makes the rest unreliable */

    config_setting_t *root = config_root_setting(&s->config.cfg);
    const tern_setting_spec *core = tern_core_schema;
    tern_schema_check(&s->config, root, &core, 1, 0, d);
    check_run_section(s, d);

    long long seed = 1;
    config_lookup_int64(&s->config.cfg, "run.seed", &seed);
    s->seed = (uint64_t)seed;
    const char *level = NULL;
    if (config_lookup_string(&s->config.cfg, "run.log_level", &level) && level &&
        tern_log_level_parse(level) >= 0)
        tern_log_set_level((tern_log_level)tern_log_level_parse(level));

    char **dirs = NULL;
    size_t ndirs = 0;
    int rc = tern_config_plugin_dirs(&s->config, &dirs, &ndirs);
    if (rc == TERN_OK)
        rc = tern_registry_init(&s->registry, (const char *const *)dirs, ndirs);
    tern_config_free_dirs(dirs, ndirs);
    if (rc == TERN_OK) {
        uint64_t span = tern_trace_begin(s->trace, "scan_plugins");
        rc = tern_registry_scan(&s->registry, tern_host_table());
        tern_trace_end(s->trace, span, NULL);
    }
    if (rc == TERN_OK)
        rc = collect_instances(s);
    if (rc != TERN_OK) {
        tern_diag_addf(d, "%s", tern_error_message());
        return rc;
    }
    for (size_t i = 0; i < s->n_inst; i++)
        resolve_instance(s, &s->inst[i], d);
    if (d->n > before)
        return TERN_ECONFIG;
    if (!start)
        return TERN_OK;
    /* a plugin that crashes from here on is named (base/op_watch.h) */
    tern_crash_report_install();
    return start_instances(s, d);
}

int tern_session_open(tern_session *s, const char *path, const char *const *overrides,
                      size_t n_overrides, int start, tern_diag *d)
{
    return session_open(s, path, NULL, NULL, overrides, n_overrides, start, d);
}

int tern_session_open_text(tern_session *s, const char *text, const char *label, int start,
                           tern_diag *d)
{
    return session_open(s, NULL, text, label, NULL, 0, start, d);
}

void tern_session_close(tern_session *s)
{
    for (size_t i = s->n_inst; i-- > 0;) {
        tern_instance *in = &s->inst[i];
        if (in->created)
            head_of(in)->destroy(in->state);
        tern_ctx_free(in->ctx);
    }
    free(s->inst);
    for (size_t i = 0; i < s->n_warnings; i++)
        free(s->warnings[i]);
    free(s->warnings);
    tern_registry_free(&s->registry);
    if (s->have_config)
        tern_config_free(&s->config);
    tern_metrics_free(s->metrics);
    tern_trace_free(s->trace);
    memset(s, 0, sizeof *s);
}

/* Print a group's settings as " k=v k=v", skipping the slot's `plugin`. */
static void print_settings(FILE *out, const config_setting_t *g, const char *prefix)
{
    for (int i = 0; i < config_setting_length(g); i++) {
        const config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
        const char *name = config_setting_name(e);
        if (!*prefix && strcmp(name, "plugin") == 0)
            continue;
        switch (config_setting_type(e)) {
        case CONFIG_TYPE_INT:
        case CONFIG_TYPE_INT64:
            fprintf(out, " %s%s=%lld", prefix, name, config_setting_get_int64(e));
            break;
        case CONFIG_TYPE_FLOAT:
            fprintf(out, " %s%s=%g", prefix, name, config_setting_get_float(e));
            break;
        case CONFIG_TYPE_BOOL:
            fprintf(out, " %s%s=%s", prefix, name, config_setting_get_bool(e) ? "true" : "false");
            break;
        case CONFIG_TYPE_STRING:
            fprintf(out, " %s%s=\"%s\"", prefix, name, config_setting_get_string(e));
            break;
        case CONFIG_TYPE_GROUP: {
            char sub[128];
            snprintf(sub, sizeof sub, "%s%s.", prefix, name);
            print_settings(out, e, sub);
            break;
        }
        default:
            fprintf(out, " %s%s=(%d items)", prefix, name, config_setting_length(e));
        }
    }
}

void tern_session_describe(tern_session *s, FILE *out)
{
    const char *name = "run", *out_dir = "runs";
    config_lookup_string(&s->config.cfg, "run.name", &name);
    config_lookup_string(&s->config.cfg, "run.out_dir", &out_dir);
    fprintf(out, "config      %s\n", s->config.path);
    fprintf(out, "run         name=\"%s\" seed=%llu -> %s/%s/\n", name,
            (unsigned long long)s->seed, out_dir, name);
    if (s->n_inst == 0)
        fprintf(out, "plugins    none named in this config\n");
    for (size_t i = 0; i < s->n_inst; i++) {
        tern_instance *in = &s->inst[i];
        if (!in->entry) {
            fprintf(out, "%-11s copy of the model (frozen)\n", in->label);
            continue;
        }
        const tern_plugin_descriptor *dsc = in->entry->plugin->desc;
        fprintf(out, "%-11s %s %s (%s)\n", in->label, dsc->name, dsc->version ? dsc->version : "",
                in->entry->path);
        fprintf(out, "%-11s", "");
        print_settings(out, in->group, "");
        for (const tern_setting_spec *sp = dsc->settings; in->waits_for_run_dir && sp && sp->name;
             sp = tern_spec_next(sp)) {
            char file[256];
            if (!config_setting_get_member(in->group, sp->name) &&
                tern_spec_run_file_name(sp, file, sizeof file) == TERN_OK)
                fprintf(out, " %s=\"%s/%s/%s\" (in the run directory, made when the run starts)",
                        sp->name, out_dir, name, file);
        }
        fprintf(out, "\n");
        if (in->slot->kind == TERN_KIND_SYNC && in->created) {
            const tern_sync_ops *ops = dsc->ops;
            tern_sync_info info = {.size = sizeof info};
            if (ops->describe(in->state, &info) == TERN_OK) {
                char stale[32] = "unbounded";
                if (info.max_staleness >= 0)
                    snprintf(stale, sizeof stale, "%lld", (long long)info.max_staleness);
                fprintf(out, "%-11s -> %u explorer%s, weights by %s, max staleness %s\n", "",
                        info.explorers, info.explorers == 1 ? "" : "s",
                        info.transport ? info.transport : "?", stale);
            }
        }
    }
}
