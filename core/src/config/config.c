/* config.c: reading the libconfig file, overrides, and naming settings. */
#include "config/config.h"

#include <ctype.h>
#include <libgen.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "config/config_text.h"
#include "tern/abi.h"

static void config_begin(tern_config *c, const char *label)
{
    memset(c, 0, sizeof *c);
    config_init(&c->cfg);
    c->live = 1;
    c->path = strdup(label);
}

/* Give every setting the file and line it was written on: libconfig read
 * one string (config_text.h) and knows only its lines. The fields are
 * libconfig's public ones, read by config_setting_source_file/_line. */
static void relocate(const tern_config_text *t, config_setting_t *s)
{
    if (s->line > 0) {
        const char *file;
        unsigned line;
        tern_config_text_where(t, s->line, &file, &line);
        s->file = file;
        s->line = line;
    }
    int type = config_setting_type(s);
    if (type == CONFIG_TYPE_GROUP || type == CONFIG_TYPE_LIST || type == CONFIG_TYPE_ARRAY)
        for (int i = 0; i < config_setting_length(s); i++)
            relocate(t, config_setting_get_elem(s, (unsigned)i));
}

/* Parse the text of `t` into a fresh *c named `label`; *t is freed, its
 * file names passed to *c. */
static int parse_text(tern_config *c, tern_config_text *t, const char *label, tern_diag *d)
{
    config_begin(c, label);
    c->files = t->files;
    c->n_files = t->n_files;
    t->files = NULL;
    t->n_files = 0;
    int rc = TERN_OK;
    if (!c->path) {
        tern_diag_addf(d, "%s: out of memory", label);
        rc = TERN_ENOMEM;
    } else if (config_read_string(&c->cfg, t->text) != CONFIG_TRUE) {
        const char *file;
        unsigned line;
        tern_config_text_where(t, (unsigned)config_error_line(&c->cfg), &file, &line);
        tern_diag_addf(d, "%s:%u: %s", file ? file : label, line, config_error_text(&c->cfg));
        rc = TERN_ECONFIG;
    } else {
        relocate(t, config_root_setting(&c->cfg));
    }
    tern_config_text_free_text(t);
    if (rc != TERN_OK)
        tern_config_free(c);
    return rc;
}

int tern_config_read_file(tern_config *c, const char *path, tern_diag *d)
{
    memset(c, 0, sizeof *c);
    tern_config_text t;
    int rc = tern_config_text_load(&t, path, NULL, NULL, 0, d);
    return rc != TERN_OK ? rc : parse_text(c, &t, path, d);
}

int tern_config_read_string(tern_config *c, const char *text, const char *label, tern_diag *d)
{
    memset(c, 0, sizeof *c);
    tern_config_text t;
    int rc = tern_config_text_load(&t, NULL, text, label, 0, d);
    return rc != TERN_OK ? rc : parse_text(c, &t, label, d);
}

void tern_config_free(tern_config *c)
{
    if (c->live)
        config_destroy(&c->cfg);
    for (size_t i = 0; i < c->n_overrides; i++)
        free(c->overrides[i]);
    free(c->overrides);
    free(c->path);
    tern_config_text_free_files(c->files, c->n_files);
    memset(c, 0, sizeof *c);
}

/* Element index of a path segment "3" or "[3]", or -1 if it is a name. */
static long segment_index(const char *seg)
{
    const char *p = seg;
    int bracket = *p == '[';
    if (bracket)
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    char *end;
    long v = strtol(p, &end, 10);
    if (bracket && *end++ != ']')
        return -1;
    return *end == '\0' ? v : -1;
}

config_setting_t *tern_config_lookup(const config_setting_t *root, const char *path)
{
    char buf[512];
    if (!root || strlen(path) >= sizeof buf)
        return NULL;
    strcpy(buf, path);
    config_setting_t *s = (config_setting_t *)root;
    char *save = NULL;
    for (char *seg = strtok_r(buf, ".", &save); seg && s; seg = strtok_r(NULL, ".", &save)) {
        long idx = segment_index(seg);
        if (idx >= 0) {
            int t = config_setting_type(s);
            if (t != CONFIG_TYPE_LIST && t != CONFIG_TYPE_ARRAY)
                return NULL;
            s = config_setting_get_elem(s, (unsigned)idx);
        } else {
            if (config_setting_type(s) != CONFIG_TYPE_GROUP)
                return NULL;
            s = config_setting_get_member(s, seg);
        }
    }
    return s;
}

/* Copy the scalar or aggregate value of `src` into `dst` (a fresh setting of
 * the same type). */
static int copy_value(config_setting_t *dst, const config_setting_t *src)
{
    switch (config_setting_type(src)) {
    case CONFIG_TYPE_INT:
        return config_setting_set_int(dst, config_setting_get_int(src));
    case CONFIG_TYPE_INT64:
        return config_setting_set_int64(dst, config_setting_get_int64(src));
    case CONFIG_TYPE_FLOAT:
        return config_setting_set_float(dst, config_setting_get_float(src));
    case CONFIG_TYPE_BOOL:
        return config_setting_set_bool(dst, config_setting_get_bool(src));
    case CONFIG_TYPE_STRING:
        return config_setting_set_string(dst, config_setting_get_string(src));
    default:
        break;
    }
    /* group, array or list: copy the members in order */
    int n = config_setting_length(src);
    for (int i = 0; i < n; i++) {
        config_setting_t *e = config_setting_get_elem(src, (unsigned)i);
        const char *name = config_setting_type(dst) == CONFIG_TYPE_GROUP ? config_setting_name(e)
                                                                          : NULL;
        config_setting_t *ne = config_setting_add(dst, name, config_setting_type(e));
        if (!ne || copy_value(ne, e) != CONFIG_TRUE)
            return CONFIG_FALSE;
    }
    return CONFIG_TRUE;
}

int tern_config_override(tern_config *c, const char *spec, tern_diag *d)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) {
        tern_diag_addf(d, "-o %s: expected section.key=value (e.g. -o run.seed=2)", spec);
        return TERN_ECONFIG;
    }
    char path[512];
    size_t plen = (size_t)(eq - spec);
    if (plen >= sizeof path) {
        tern_diag_addf(d, "-o %s: the key path is too long", spec);
        return TERN_ECONFIG;
    }
    memcpy(path, spec, plen);
    path[plen] = '\0';
    /* strtok_r below would pass over an empty name: ".=1", "run..seed=1" */
    if (path[0] == '.' || path[plen - 1] == '.' || strstr(path, "..")) {
        tern_diag_addf(d, "-o %s: the key path '%s' has an empty name; give section.key=value "
                       "(e.g. -o run.seed=2)", spec, path);
        return TERN_ECONFIG;
    }
    const char *value = eq + 1;

    /* Read the value as libconfig would read it in the file, through the
     * same text checks (an integer past 64 bits is refused, one past 32 bits
     * kept whole). */
    config_t lit;
    config_init(&lit);
    char *text = NULL, *label = NULL;
    if (asprintf(&text, "v = %s;", value) < 0 || asprintf(&label, "-o %s", spec) < 0) {
        free(text);
        config_destroy(&lit);
        tern_diag_addf(d, "-o %s: out of memory", spec);
        return TERN_ENOMEM;
    }
    const config_setting_t *v = NULL;
    int is_literal = 0, rc = TERN_OK;
    if (!strchr(value, '\n')) {
        tern_config_text t;
        tern_diag why;
        tern_diag_init(&why);
        rc = tern_config_text_load(&t, NULL, text, label, TERN_CONFIG_TEXT_NO_LINES, &why);
        if (rc == TERN_OK) {
            is_literal = config_read_string(&lit, t.text) == CONFIG_TRUE &&
                         (v = config_lookup(&lit, "v")) != NULL;
            tern_config_text_free_text(&t);
            tern_config_text_free_files(t.files, t.n_files);
        } else if (rc == TERN_ECONFIG) {
            /* A literal libconfig would misread (99999999999999999999999) is
             * refused; text that is no literal at all is a string. */
            config_t raw;
            config_init(&raw);
            if (config_read_string(&raw, text) == CONFIG_TRUE)
                for (size_t i = 0; i < why.n; i++)
                    tern_diag_addf(d, "%s", why.msgs[i]);
            else
                rc = TERN_OK;
            config_destroy(&raw);
        } else {
            tern_diag_addf(d, "-o %s: out of memory", spec);
        }
        tern_diag_free(&why);
    }
    free(text);
    free(label);
    if (rc != TERN_OK) {
        config_destroy(&lit);
        return rc;
    }

    /* Walk to the parent, creating groups as needed. */
    config_setting_t *s = config_root_setting(&c->cfg);
    char *save = NULL;
    char *seg = strtok_r(path, ".", &save);
    int status = TERN_OK;
    while (seg) {
        char *next = strtok_r(NULL, ".", &save);
        long idx = segment_index(seg);
        int type = config_setting_type(s);
        config_setting_t *child = NULL;
        if (idx >= 0) {
            if (type != CONFIG_TYPE_LIST && type != CONFIG_TYPE_ARRAY) {
                tern_diag_addf(d, "-o %s: '%s' is an index, but what it indexes is not a list",
                               spec, seg);
                status = TERN_ECONFIG;
                break;
            }
            child = config_setting_get_elem(s, (unsigned)idx);
            if (!child) {
                tern_diag_addf(d, "-o %s: there is no element %ld (the list has %d)", spec, idx,
                               config_setting_length(s));
                status = TERN_ECONFIG;
                break;
            }
        } else {
            if (type != CONFIG_TYPE_GROUP) {
                tern_diag_addf(d, "-o %s: cannot set '%s' inside a setting that is not a group",
                               spec, seg);
                status = TERN_ECONFIG;
                break;
            }
            if (!isalpha((unsigned char)seg[0]) && seg[0] != '*') {
                tern_diag_addf(d, "-o %s: '%s' is not a valid setting name", spec, seg);
                status = TERN_ECONFIG;
                break;
            }
            child = config_setting_get_member(s, seg);
        }
        if (!next) {
            /* Replace the leaf. */
            int want = is_literal ? config_setting_type(v) : CONFIG_TYPE_STRING;
            if (child) {
                if (idx >= 0) {
                    if (config_setting_type(child) != want) {
                        tern_diag_addf(d, "-o %s: element %ld is %s, not %s", spec, idx,
                                       tern_config_type_name(config_setting_type(child)),
                                       tern_config_type_name(want));
                        status = TERN_ECONFIG;
                        break;
                    }
                } else {
                    config_setting_remove(s, seg);
                    child = NULL;
                }
            }
            if (!child)
                child = config_setting_add(s, idx >= 0 ? NULL : seg, want);
            int ok = child != NULL;
            if (ok)
                ok = is_literal ? copy_value(child, v) == CONFIG_TRUE
                                : config_setting_set_string(child, value) == CONFIG_TRUE;
            if (!ok) {
                tern_diag_addf(d, "-o %s: cannot set this value here", spec);
                status = TERN_ECONFIG;
                break;
            }
            /* Remember the override so messages about this setting cite it. */
            char **o = realloc(c->overrides, (c->n_overrides + 1) * sizeof *o);
            char *copy = strdup(spec);
            if (!o || !copy) {
                free(copy);
                if (o)
                    c->overrides = o;
                tern_diag_addf(d, "-o %s: out of memory", spec);
                status = TERN_ENOMEM;
                break;
            }
            c->overrides = o;
            c->overrides[c->n_overrides++] = copy;
            config_setting_set_hook(child, copy);
            break;
        }
        if (!child) {
            child = config_setting_add(s, seg, CONFIG_TYPE_GROUP);
            if (!child) {
                tern_diag_addf(d, "-o %s: cannot create group '%s'", spec, seg);
                status = TERN_ECONFIG;
                break;
            }
        }
        s = child;
        seg = next;
    }
    config_destroy(&lit);
    return status;
}

const char *tern_config_where(const tern_config *c, const config_setting_t *s, char *buf,
                              size_t n)
{
    for (const config_setting_t *p = s; p; p = config_setting_parent(p)) {
        const char *hook = config_setting_get_hook(p);
        if (hook) {
            snprintf(buf, n, "-o %s", hook);
            return buf;
        }
    }
    const char *file = s ? config_setting_source_file(s) : NULL;
    unsigned line = s ? config_setting_source_line(s) : 0;
    if (line > 0)
        snprintf(buf, n, "%s:%u", file ? file : c->path, line);
    else
        snprintf(buf, n, "%s", c->path);
    return buf;
}

const char *tern_config_path(const config_setting_t *s, char *buf, size_t n)
{
    /* Collect the chain root..s, then print it forwards. */
    const config_setting_t *chain[32];
    size_t depth = 0;
    for (const config_setting_t *p = s; p && config_setting_parent(p) && depth < 32;
         p = config_setting_parent(p))
        chain[depth++] = p;
    size_t off = 0;
    buf[0] = '\0';
    while (depth-- > 0 && off < n) {
        const config_setting_t *p = chain[depth];
        const char *name = config_setting_name(p);
        int w;
        if (name)
            w = snprintf(buf + off, n - off, "%s%s", off ? "." : "", name);
        else
            w = snprintf(buf + off, n - off, "[%d]", config_setting_index(p));
        if (w < 0)
            break;
        off += (size_t)w;
    }
    return buf;
}

const char *tern_config_type_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: return "an integer";
    case CONFIG_TYPE_FLOAT: return "a float";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_GROUP: return "a group { ... }";
    case CONFIG_TYPE_ARRAY: return "an array [ ... ]";
    case CONFIG_TYPE_LIST: return "a list ( ... )";
    default: return "no value";
    }
}

int tern_config_plugin_dirs(const tern_config *c, char ***dirs, size_t *n)
{
    *dirs = NULL;
    *n = 0;
    config_setting_t *pp = config_setting_get_member(config_root_setting(&c->cfg), "plugin_path");
    int t = pp ? config_setting_type(pp) : 0;
    int len = pp ? config_setting_length(pp) : 0;
    if ((t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) || len <= 0)
        return TERN_OK;
    char cfgdir[PATH_MAX];
    snprintf(cfgdir, sizeof cfgdir, "%s", c->path);
    const char *base = dirname(cfgdir);
    *dirs = calloc((size_t)len, sizeof **dirs);
    if (!*dirs)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    for (int i = 0; i < len; i++) {
        const char *d = config_setting_get_string_elem(pp, i);
        if (!d)
            continue; /* not a string: the schema check reports it */
        char *full = NULL;
        int w = d[0] == '/' ? asprintf(&full, "%s", d) : asprintf(&full, "%s/%s", base, d);
        if (w < 0) {
            tern_config_free_dirs(*dirs, *n);
            *dirs = NULL;
            *n = 0;
            return tern_errorf(TERN_ENOMEM, "out of memory");
        }
        (*dirs)[(*n)++] = full;
    }
    return TERN_OK;
}

void tern_config_free_dirs(char **dirs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    free(dirs);
}
