/* schema.c: config checking against setting specs (see schema.h). */
#include "config/schema.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "config/suggest.h"

#define SPEC_MAX_SIZE 4096 /* an element claiming more is corrupt */
#define SPEC_MAX_DEPTH 8

const tern_setting_spec *tern_spec_next(const tern_setting_spec *s)
{
    return (const tern_setting_spec *)((const char *)s + s->size);
}

const tern_setting_spec *tern_spec_find(const tern_setting_spec *spec, const char *name)
{
    for (const tern_setting_spec *s = spec; s && s->name; s = tern_spec_next(s))
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

const tern_setting_spec *tern_spec_find_path(const tern_setting_spec *spec, const char *path)
{
    char buf[256];
    if (strlen(path) >= sizeof buf)
        return NULL;
    strcpy(buf, path);
    const tern_setting_spec *cur = NULL;
    const tern_setting_spec *level = spec;
    char *save = NULL;
    for (char *seg = strtok_r(buf, ".", &save); seg; seg = strtok_r(NULL, ".", &save)) {
        if (cur && (cur->type == TERN_SETTING_LIST || cur->type == TERN_SETTING_STRINGS) &&
            (seg[0] == '[' || (seg[0] >= '0' && seg[0] <= '9')))
            continue; /* an element index: stay on the list's element spec */
        cur = tern_spec_find(level, seg);
        if (!cur)
            return NULL;
        level = cur->children;
    }
    return cur;
}

static const char *spec_type_name(uint32_t type)
{
    switch (type) {
    case TERN_SETTING_INT: return "an integer";
    case TERN_SETTING_FLOAT: return "a float";
    case TERN_SETTING_BOOL: return "a boolean (true or false)";
    case TERN_SETTING_STRING: return "a string";
    case TERN_SETTING_GROUP: return "a group { ... }";
    case TERN_SETTING_LIST: return "a list of groups ( { ... }, ... )";
    case TERN_SETTING_STRINGS: return "a list of strings [ \"...\", ... ]";
    default: return "an unknown type";
    }
}

/* Parse a default literal into a number / bool / string. */
static int parse_default(const tern_setting_spec *sp, long long *i, double *f, int *b,
                         char *str, size_t strn)
{
    const char *t = sp->def;
    char *end = NULL;
    errno = 0;
    switch (sp->type) {
    case TERN_SETTING_INT:
        *i = strtoll(t, &end, 0);
        return (*t && *end == '\0' && errno == 0) ? 0 : -1;
    case TERN_SETTING_FLOAT:
        *f = strtod(t, &end);
        return (*t && *end == '\0' && errno == 0 && isfinite(*f)) ? 0 : -1;
    case TERN_SETTING_BOOL:
        if (strcmp(t, "true") == 0)
            *b = 1;
        else if (strcmp(t, "false") == 0)
            *b = 0;
        else
            return -1;
        return 0;
    case TERN_SETTING_STRING: {
        size_t len = strlen(t);
        if (len < 2 || t[0] != '"' || t[len - 1] != '"' || len - 1 > strn)
            return -1;
        memcpy(str, t + 1, len - 2);
        str[len - 2] = '\0';
        return strchr(str, '"') ? -1 : 0;
    }
    default:
        return -1;
    }
}

/* Does `value` appear in the '|'-separated list `choices`? */
static int in_choices(const char *value, const char *choices)
{
    size_t vlen = strlen(value);
    for (const char *p = choices; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vlen && strncmp(p, value, len) == 0)
            return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

/* A TERN_SETTING_IN_RUN_DIR spec: a top-level string whose default (parsed
 * already) is a file name a run can put in its directory. */
static int in_run_dir_ok(const tern_setting_spec *s, int depth)
{
    if (depth != 0 || s->type != TERN_SETTING_STRING || !s->def)
        return 0;
    char name[256];
    if (tern_spec_run_file_name(s, name, sizeof name) != TERN_OK)
        return 0;
    return *name && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

int tern_spec_run_file_name(const tern_setting_spec *s, char *name, size_t n)
{
    long long i;
    double f;
    int b;
    if (!(s->flags & TERN_SETTING_IN_RUN_DIR) || s->type != TERN_SETTING_STRING || !s->def ||
        parse_default(s, &i, &f, &b, name, n) != 0)
        return TERN_EINVAL;
    return TERN_OK;
}

static int spec_validate_level(const tern_setting_spec *spec, int depth, const char *prefix)
{
    if (depth > SPEC_MAX_DEPTH)
        return tern_errorf(TERN_EINVAL, "settings nested deeper than %d levels", SPEC_MAX_DEPTH);
    size_t count = 0;
    for (const tern_setting_spec *s = spec;; s = tern_spec_next(s)) {
        if (s->size < sizeof(tern_setting_spec) || s->size > SPEC_MAX_SIZE)
            return tern_errorf(TERN_EINVAL,
                               "settings entry %zu%s%s has size %zu, expected at least %zu "
                               "(build it with TERN_SETTING())",
                               count, *prefix ? " under " : "", prefix, s->size,
                               sizeof(tern_setting_spec));
        if (!s->name)
            break;
        if (++count > 1000)
            return tern_errorf(TERN_EINVAL, "settings array has no TERN_SETTINGS_END");
        const char *n = s->name;
        int ok = n[0] >= 'a' && n[0] <= 'z';
        for (const char *p = n; ok && *p; p++)
            ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
        if (!ok)
            return tern_errorf(TERN_EINVAL, "setting name '%s%s%s' is not [a-z][a-z0-9_]*",
                               prefix, *prefix ? "." : "", n);
        if (s->type < TERN_SETTING_INT || s->type > TERN_SETTING_STRINGS)
            return tern_errorf(TERN_EINVAL, "setting '%s' has unknown type %u", n, s->type);
        if (s->def) {
            long long i;
            double f;
            int b;
            char str[256];
            if (s->flags & TERN_SETTING_REQUIRED)
                return tern_errorf(TERN_EINVAL, "setting '%s' is required and has a default", n);
            if (parse_default(s, &i, &f, &b, str, sizeof str) != 0)
                return tern_errorf(TERN_EINVAL, "default of setting '%s' (%s) is not %s%s", n,
                                   s->def, spec_type_name(s->type),
                                   s->type == TERN_SETTING_STRING ? " in double quotes" : "");
            if (s->type == TERN_SETTING_STRING && s->choices && !in_choices(str, s->choices))
                return tern_errorf(TERN_EINVAL, "default of setting '%s' is not one of %s", n,
                                   s->choices);
        }
        if (s->min > s->max)
            return tern_errorf(TERN_EINVAL, "setting '%s' has min %g > max %g", n, s->min, s->max);
        if ((s->flags & TERN_SETTING_IN_RUN_DIR) && !in_run_dir_ok(s, depth))
            return tern_errorf(TERN_EINVAL, "setting '%s%s%s' is TERN_SETTING_IN_RUN_DIR, which "
                               "needs a top-level string whose default is a bare file name "
                               "(e.g. .def = \"\\\"buffer.sqlite\\\"\")", prefix,
                               *prefix ? "." : "", n);
        if ((s->type == TERN_SETTING_GROUP || s->type == TERN_SETTING_LIST) && s->children) {
            int rc = spec_validate_level(s->children, depth + 1, n);
            if (rc != TERN_OK)
                return rc;
        }
    }
    return TERN_OK;
}

int tern_spec_validate(const tern_setting_spec *spec)
{
    return spec ? spec_validate_level(spec, 0, "") : TERN_OK;
}

/* ---- checking a config group ------------------------------------------- */

typedef struct check {
    tern_config *c;
    tern_diag *d;
    size_t errors;
} check;

#define WHERE_MAX 600
#define PATH_MAX_LEN 256

static void report(check *k, const config_setting_t *s, const char *fmt, ...) TERN_PRINTF(3, 4);
static void report(check *k, const config_setting_t *s, const char *fmt, ...)
{
    char where[WHERE_MAX], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tern_diag_addf(k->d, "%s: %s", tern_config_where(k->c, s, where, sizeof where), msg);
    k->errors++;
}

static void describe_value(const config_setting_t *s, char *buf, size_t n)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        snprintf(buf, n, " (%lld)", config_setting_get_int64(s));
        break;
    case CONFIG_TYPE_FLOAT:
        snprintf(buf, n, " (%g)", config_setting_get_float(s));
        break;
    case CONFIG_TYPE_STRING:
        snprintf(buf, n, " (\"%.40s\")", config_setting_get_string(s));
        break;
    case CONFIG_TYPE_BOOL:
        snprintf(buf, n, " (%s)", config_setting_get_bool(s) ? "true" : "false");
        break;
    default:
        buf[0] = '\0';
    }
}

static int type_matches(const tern_setting_spec *sp, const config_setting_t *s)
{
    int t = config_setting_type(s);
    switch (sp->type) {
    case TERN_SETTING_INT: return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
    case TERN_SETTING_FLOAT:
        return t == CONFIG_TYPE_FLOAT || t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
    case TERN_SETTING_BOOL: return t == CONFIG_TYPE_BOOL;
    case TERN_SETTING_STRING: return t == CONFIG_TYPE_STRING;
    case TERN_SETTING_GROUP: return t == CONFIG_TYPE_GROUP;
    case TERN_SETTING_LIST:
        return t == CONFIG_TYPE_LIST || (t == CONFIG_TYPE_ARRAY && config_setting_length(s) == 0);
    case TERN_SETTING_STRINGS:
        if (t != CONFIG_TYPE_LIST && t != CONFIG_TYPE_ARRAY)
            return 0;
        for (int i = 0; i < config_setting_length(s); i++)
            if (config_setting_type(config_setting_get_elem(s, (unsigned)i)) != CONFIG_TYPE_STRING)
                return 0;
        return 1;
    default: return 0;
    }
}

static void check_group(check *k, config_setting_t *group, const tern_setting_spec *const *specs,
                        size_t nspecs, unsigned flags, int depth);

static void check_value(check *k, config_setting_t *s, const tern_setting_spec *sp, int depth)
{
    char path[PATH_MAX_LEN];
    tern_config_path(s, path, sizeof path);
    if (!type_matches(sp, s)) {
        char val[64];
        describe_value(s, val, sizeof val);
        report(k, s, "%s: expected %s, found %s%s", path, spec_type_name(sp->type),
               tern_config_type_name(config_setting_type(s)), val);
        return;
    }
    int range = sp->min != 0 || sp->max != 0; /* both 0: no range declared */
    if (sp->type == TERN_SETTING_INT && range) {
        long long v = config_setting_get_int64(s);
        /* as integers where the bounds fit: (double)v would round 2^53 + 1
         * down to 2^53 and let it pass a bound of 2^53 */
        int low = sp->min > -9.2e18 ? v < (long long)ceil(sp->min) : (double)v < sp->min;
        int high = sp->max < 9.2e18 ? v > (long long)floor(sp->max) : (double)v > sp->max;
        if (low || high)
            /* %.0f: an integer bound such as 2^53 in full, not 9.00719925474099e+15 */
            report(k, s, "%s: %lld is out of range [%.0f, %.0f]", path, v, sp->min, sp->max);
    } else if (sp->type == TERN_SETTING_FLOAT) {
        int t = config_setting_type(s);
        double v = t == CONFIG_TYPE_FLOAT ? config_setting_get_float(s)
                                          : (double)config_setting_get_int64(s);
        if (!isfinite(v))
            report(k, s, "%s: %g is not a finite number", path, v);
        else if (range && (v < sp->min || v > sp->max))
            report(k, s, "%s: %g is out of range [%.15g, %.15g]", path, v, sp->min, sp->max);
    } else if (sp->type == TERN_SETTING_STRING && sp->choices) {
        const char *v = config_setting_get_string(s);
        if (!in_choices(v, sp->choices)) {
            tern_suggest sg;
            tern_suggest_init(&sg, v);
            tern_suggest_offer_choices(&sg, sp->choices);
            const char *best = tern_suggest_best(&sg);
            if (best)
                report(k, s, "%s: '%s' is not one of %s (did you mean '%s'?)", path, v,
                       sp->choices, best);
            else
                report(k, s, "%s: '%s' is not one of %s", path, v, sp->choices);
        }
    } else if (sp->type == TERN_SETTING_GROUP && sp->children) {
        check_group(k, s, &sp->children, 1, 0, depth + 1);
    } else if (sp->type == TERN_SETTING_LIST) {
        for (int i = 0; i < config_setting_length(s); i++) {
            config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
            if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
                report(k, e, "%s[%d]: expected a group { ... }, found %s", path, i,
                       tern_config_type_name(config_setting_type(e)));
                continue;
            }
            if (sp->children)
                check_group(k, e, &sp->children, 1, 0, depth + 1);
        }
    }
}

static void add_default(check *k, config_setting_t *group, const tern_setting_spec *sp)
{
    long long i = 0;
    double f = 0;
    int b = 0;
    char str[256];
    if (parse_default(sp, &i, &f, &b, str, sizeof str) != 0)
        return; /* specs are validated at load time; nothing sensible to add */
    /* small integers stay plain ints, so config.cfg reads like the input */
    int small = i >= INT32_MIN && i <= INT32_MAX;
    int ctype = sp->type == TERN_SETTING_INT ? (small ? CONFIG_TYPE_INT : CONFIG_TYPE_INT64)
                : sp->type == TERN_SETTING_FLOAT ? CONFIG_TYPE_FLOAT
                : sp->type == TERN_SETTING_BOOL  ? CONFIG_TYPE_BOOL
                                                 : CONFIG_TYPE_STRING;
    config_setting_t *s = config_setting_add(group, sp->name, ctype);
    if (!s) {
        report(k, group, "cannot add the default of '%s'", sp->name);
        return;
    }
    switch (sp->type) {
    case TERN_SETTING_INT:
        if (small)
            config_setting_set_int(s, (int)i);
        else
            config_setting_set_int64(s, i);
        break;
    case TERN_SETTING_FLOAT: config_setting_set_float(s, f); break;
    case TERN_SETTING_BOOL: config_setting_set_bool(s, b); break;
    case TERN_SETTING_STRING: config_setting_set_string(s, str); break;
    default: break;
    }
}

static void check_group(check *k, config_setting_t *group, const tern_setting_spec *const *specs,
                        size_t nspecs, unsigned flags, int depth)
{
    if (depth > SPEC_MAX_DEPTH)
        return;
    char path[PATH_MAX_LEN];
    tern_config_path(group, path, sizeof path);
    int is_root = config_setting_parent(group) == NULL;

    /* 1. every key present must be known */
    for (int i = 0; i < config_setting_length(group); i++) {
        config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(s);
        const tern_setting_spec *sp = NULL;
        for (size_t j = 0; j < nspecs && !sp; j++)
            sp = tern_spec_find(specs[j], name);
        if (sp) {
            check_value(k, s, sp, depth);
            continue;
        }
        if (flags & TERN_SCHEMA_ALLOW_UNKNOWN)
            continue;
        tern_suggest sg;
        tern_suggest_init(&sg, name);
        for (size_t j = 0; j < nspecs; j++)
            for (const tern_setting_spec *q = specs[j]; q && q->name; q = tern_spec_next(q))
                tern_suggest_offer_akas(&sg, q->name, q->aka);
        const char *best = tern_suggest_best(&sg);
        const char *what = is_root ? "section" : "key";
        if (best) {
            if (is_root)
                report(k, s, "unknown section '%s' (did you mean '%s'?)", name, best);
            else
                report(k, s, "unknown key '%s' in %s (did you mean '%s'?)", name, path, best);
        } else {
            char valid[512];
            size_t off = 0;
            valid[0] = '\0';
            for (size_t j = 0; j < nspecs; j++)
                for (const tern_setting_spec *q = specs[j]; q && q->name; q = tern_spec_next(q)) {
                    int w = snprintf(valid + off, sizeof valid - off, "%s%s", off ? ", " : "",
                                     q->name);
                    if (w < 0 || (size_t)w >= sizeof valid - off)
                        break;
                    off += (size_t)w;
                }
            if (is_root)
                report(k, s, "unknown %s '%s' (sections: %s)", what, name, off ? valid : "none");
            else
                report(k, s, "unknown %s '%s' in %s (valid keys: %s)", what, name, path,
                       off ? valid : "none: this group takes no settings");
        }
    }

    /* 2. every key absent gets its default, or is reported if required */
    for (size_t j = 0; j < nspecs; j++) {
        for (const tern_setting_spec *sp = specs[j]; sp && sp->name; sp = tern_spec_next(sp)) {
            if (config_setting_get_member(group, sp->name))
                continue;
            if (sp->flags & TERN_SETTING_REQUIRED) {
                const char *doc = sp->doc ? sp->doc : "";
                if (is_root)
                    report(k, group, "missing required section '%s'%s%s%s", sp->name,
                           *doc ? " (" : "", doc, *doc ? ")" : "");
                else
                    report(k, group, "%s: missing required key '%s'%s%s%s", path, sp->name,
                           *doc ? " (" : "", doc, *doc ? ")" : "");
            } else if (sp->def && !(sp->flags & TERN_SETTING_IN_RUN_DIR)) {
                /* an IN_RUN_DIR default names a file in the run directory,
                 * which the run fills in once the directory exists */
                add_default(k, group, sp);
            } else if (sp->type == TERN_SETTING_GROUP && sp->children) {
                /* An absent group whose keys have defaults: create it, so
                 * nested defaults and required keys are handled uniformly. */
                int needed = 0;
                for (const tern_setting_spec *q = sp->children; q->name; q = tern_spec_next(q))
                    needed |= q->def != NULL || (q->flags & TERN_SETTING_REQUIRED);
                if (needed) {
                    config_setting_t *g = config_setting_add(group, sp->name, CONFIG_TYPE_GROUP);
                    if (g)
                        check_group(k, g, &sp->children, 1, 0, depth + 1);
                }
            }
        }
    }
}

size_t tern_schema_check(tern_config *c, config_setting_t *group,
                         const tern_setting_spec *const *specs, size_t nspecs, unsigned flags,
                         tern_diag *d)
{
    check k = {.c = c, .d = d, .errors = 0};
    check_group(&k, group, specs, nspecs, flags, 0);
    return k.errors;
}
