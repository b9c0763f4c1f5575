/* config_diff.c: the first setting in which two configs differ (see
 * config_diff.h). */
#include "config/config_diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tern_config_to_text(const config_t *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    config_write(c, f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* s's value as text (a scalar's, or what it is). */
static void value_text(const config_setting_t *s, char *out, size_t n)
{
    if (!s) {
        snprintf(out, n, "(none)");
        return;
    }
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        snprintf(out, n, "%lld", config_setting_get_int64(s));
        break;
    case CONFIG_TYPE_FLOAT: { /* the shortest text that reads back the same */
        double v = config_setting_get_float(s);
        for (int digits = 6; digits <= 17; digits++) {
            snprintf(out, n, "%.*g", digits, v);
            if (strtod(out, NULL) == v)
                break;
        }
        break;
    }
    case CONFIG_TYPE_BOOL:
        snprintf(out, n, "%s", config_setting_get_bool(s) ? "true" : "false");
        break;
    case CONFIG_TYPE_STRING:
        snprintf(out, n, "\"%s\"", config_setting_get_string(s));
        break;
    case CONFIG_TYPE_GROUP:
        snprintf(out, n, "a group of %d", config_setting_length(s));
        break;
    default:
        snprintf(out, n, "a list of %d", config_setting_length(s));
        break;
    }
}

static int is_number(int t)
{
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64 || t == CONFIG_TYPE_FLOAT;
}

/* 1 when the scalars differ: the same value whatever its integer width. */
static int scalar_differs(const config_setting_t *a, const config_setting_t *b)
{
    int ta = config_setting_type(a), tb = config_setting_type(b);
    if (ta == CONFIG_TYPE_FLOAT || tb == CONFIG_TYPE_FLOAT)
        return ta != tb || config_setting_get_float(a) != config_setting_get_float(b);
    if (is_number(ta) && is_number(tb))
        return config_setting_get_int64(a) != config_setting_get_int64(b);
    if (ta != tb)
        return 1;
    if (ta == CONFIG_TYPE_BOOL)
        return config_setting_get_bool(a) != config_setting_get_bool(b);
    return strcmp(config_setting_get_string(a), config_setting_get_string(b)) != 0;
}

static int is_aggregate(int t)
{
    return t == CONFIG_TYPE_GROUP || t == CONFIG_TYPE_LIST || t == CONFIG_TYPE_ARRAY;
}

/* The first difference under a and b (either may be NULL), whose path is
 * path[0..at). */
static int differ(const config_setting_t *a, const config_setting_t *b, char *path, size_t pn,
                  size_t at, char *va, char *vb, size_t vn)
{
    int ta = a ? config_setting_type(a) : -1, tb = b ? config_setting_type(b) : -1;
    int found = 0;
    if (!a || !b || is_aggregate(ta) != is_aggregate(tb) ||
        (is_aggregate(ta) && ta != tb)) {
        found = 1;
    } else if (ta == CONFIG_TYPE_GROUP) {
        /* every member of a in b, then what b has beyond */
        for (int pass = 0; pass < 2 && !found; pass++) {
            const config_setting_t *from = pass ? b : a, *other = pass ? a : b;
            for (int i = 0; i < config_setting_length(from) && !found; i++) {
                const config_setting_t *m = config_setting_get_elem(from, (unsigned)i);
                const char *name = config_setting_name(m);
                const config_setting_t *o = config_setting_get_member(other, name);
                if (pass && o)
                    continue; /* compared in the first pass */
                size_t k = at + (size_t)snprintf(path + at, pn > at ? pn - at : 0, "%s%s",
                                                  at ? "." : "", name);
                if (k >= pn)
                    k = pn - 1;
                found = pass ? differ(NULL, m, path, pn, k, va, vb, vn)
                             : differ(m, o, path, pn, k, va, vb, vn);
                if (!found)
                    path[at] = '\0';
            }
        }
        return found;
    } else if (is_aggregate(ta)) {
        int na = config_setting_length(a), nb = config_setting_length(b);
        for (int i = 0; i < na && i < nb && !found; i++) {
            size_t k = at + (size_t)snprintf(path + at, pn > at ? pn - at : 0, "%s[%d]",
                                              at ? "." : "", i);
            if (k >= pn)
                k = pn - 1;
            found = differ(config_setting_get_elem(a, (unsigned)i),
                           config_setting_get_elem(b, (unsigned)i), path, pn, k, va, vb, vn);
            if (!found)
                path[at] = '\0';
        }
        if (!found && na != nb)
            found = 1;
        else
            return found;
    } else {
        found = scalar_differs(a, b);
    }
    if (found) {
        value_text(a, va, vn);
        value_text(b, vb, vn);
    }
    return found;
}

int tern_config_first_difference(const config_t *a, const config_t *b, char *path, size_t pn,
                                 char *va, char *vb, size_t vn)
{
    path[0] = va[0] = vb[0] = '\0';
    return differ(config_root_setting(a), config_root_setting(b), path, pn, 0, va, vb, vn);
}
