/* builtins.c: the filters, tests, methods and global functions templates
 * call (eval.h), with the meanings Jinja2 and Python give them and
 * transformers' own tojson, raise_exception and strftime_now. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* newlocale, strftime_l */
#endif
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja/eval.h"
#include "jinja/value.h"
#include "tern/support/utf8.h"

static int oom(jinja_ev *e, const jinja_node *at)
{
    return jinja_fail(e, at, "out of memory");
}

static int new_string(jinja_ev *e, const jinja_node *at, const char *s, size_t n, json_t **out)
{
    if (n > e->lim.max_output)
        return jinja_fail(e, at, "the string would exceed %zu bytes", e->lim.max_output);
    *out = json_stringn_nocheck(s, n);
    return *out ? 0 : oom(e, at);
}

static int from_buf(jinja_ev *e, const jinja_node *at, tern_text_buf *b, json_t **out)
{
    int rc = b->oom ? oom(e, at) : new_string(e, at, b->p ? b->p : "", b->n, out);
    free(b->p);
    return rc;
}

static int need_string(jinja_ev *e, const jinja_node *at, const char *what, const json_t *v)
{
    if (v && json_is_string(v))
        return 0;
    return jinja_fail(e, at, "%s needs a string, not %s", what, jv_type(v));
}

/* ---- Python's str methods ------------------------------------------------------ */

/* Python's str.isspace() for one character. */
static int py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

/* The character at s[i..n): its code point and byte length (1 for a stray byte). */
static size_t char_at(const char *s, size_t n, size_t i, uint32_t *c)
{
    size_t k = tern_utf8_decode((const unsigned char *)s + i, n - i, c);
    if (!k) {
        *c = (unsigned char)s[i];
        k = 1;
    }
    return k;
}

static int in_chars(uint32_t c, const char *set, size_t setn)
{
    if (!set)
        return py_space(c);
    for (size_t i = 0; i < setn;) {
        uint32_t d;
        i += char_at(set, setn, i, &d);
        if (d == c)
            return 1;
    }
    return 0;
}

/* str.strip/lstrip/rstrip(chars): [*a, *z) of s that remains. */
static void strip_span(const char *s, size_t n, const char *set, size_t setn, int left, int right,
                       size_t *a, size_t *z)
{
    size_t i = 0, end = n;
    uint32_t c;
    while (left && i < end) {
        size_t k = char_at(s, end, i, &c);
        if (!in_chars(c, set, setn))
            break;
        i += k;
    }
    while (right && end > i) {
        size_t lead = end - 1;
        while (lead > i && end - lead < 4 && ((unsigned char)s[lead] & 0xc0) == 0x80)
            lead--;
        size_t k = char_at(s, end, lead, &c);
        if (lead + k != end)
            lead = end - 1, c = (unsigned char)s[end - 1];
        if (!in_chars(c, set, setn))
            break;
        end = lead;
    }
    *a = i;
    *z = end;
}

static int do_strip(jinja_ev *e, const jinja_node *at, json_t *x, json_t *chars, int left,
                    int right, json_t **out)
{
    if (need_string(e, at, "strip", x))
        return -1;
    if (chars && !json_is_null(chars) && need_string(e, at, "strip's characters", chars))
        return -1;
    const char *set = chars && json_is_string(chars) ? json_string_value(chars) : NULL;
    size_t a, z;
    strip_span(json_string_value(x), json_string_length(x), set,
               set ? json_string_length(chars) : 0, left, right, &a, &z);
    return new_string(e, at, json_string_value(x) + a, z - a, out);
}

/* ASCII case mapping (Python maps all of Unicode; the templates map ASCII). */
static int do_case(jinja_ev *e, const jinja_node *at, json_t *x, int mode, json_t **out)
{
    if (need_string(e, at, mode == 'u' ? "upper" : mode == 'l' ? "lower" : "capitalize", x))
        return -1;
    size_t n = json_string_length(x);
    char *s = malloc(n + 1);
    if (!s)
        return oom(e, at);
    memcpy(s, json_string_value(x), n + 1);
    int start = 1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int up = mode == 'u' || ((mode == 'c' || mode == 't') && start);
        if (up && c >= 'a' && c <= 'z')
            s[i] = (char)(c - 32);
        else if (!up && c >= 'A' && c <= 'Z')
            s[i] = (char)(c + 32);
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        start = mode == 't' ? !alpha : 0;
    }
    int rc = new_string(e, at, s, n, out);
    free(s);
    return rc;
}

static int do_replace(jinja_ev *e, const jinja_node *at, json_t *x, json_t *old, json_t *new,
                      json_t *count, json_t **out)
{
    if (need_string(e, at, "replace", x) || need_string(e, at, "replace's old text", old) ||
        need_string(e, at, "replace's new text", new))
        return -1;
    long long left = count && json_is_integer(count) ? json_integer_value(count) : -1;
    const char *s = json_string_value(x), *o = json_string_value(old);
    size_t n = json_string_length(x), on = json_string_length(old);
    tern_text_buf b = {0};
    tern_text_puts(&b, "");
    size_t i = 0;
    if (on == 0) { /* Python puts the new text between characters */
        while (left != 0 && i <= n && !b.oom && b.n <= e->lim.max_output) {
            tern_text_put(&b, json_string_value(new), json_string_length(new));
            if (i == n)
                break;
            uint32_t c;
            size_t k = char_at(s, n, i, &c);
            tern_text_put(&b, s + i, k);
            i += k;
            left--;
        }
        tern_text_put(&b, s + i, n - i);
        return from_buf(e, at, &b, out);
    }
    while (i < n && !b.oom && b.n <= e->lim.max_output) {
        if (left != 0 && i + on <= n && memcmp(s + i, o, on) == 0) {
            tern_text_put(&b, json_string_value(new), json_string_length(new));
            i += on;
            left--;
        } else {
            tern_text_put(&b, s + i, 1);
            i++;
        }
    }
    return from_buf(e, at, &b, out);
}

/* str.split(sep=None, maxsplit=-1) */
static int do_split(jinja_ev *e, const jinja_node *at, json_t *x, json_t *sep, json_t *maxsplit,
                    json_t **out)
{
    if (need_string(e, at, "split", x))
        return -1;
    if (sep && !json_is_null(sep) && need_string(e, at, "split's separator", sep))
        return -1;
    long long left = maxsplit && json_is_integer(maxsplit) ? json_integer_value(maxsplit) : -1;
    const char *s = json_string_value(x);
    size_t n = json_string_length(x);
    json_t *arr = json_array();
    if (!arr)
        return oom(e, at);
    int bad = 0;
    if (sep && json_is_string(sep)) {
        const char *p = json_string_value(sep);
        size_t pn = json_string_length(sep), start = 0, i = 0;
        if (pn == 0) {
            json_decref(arr);
            return jinja_fail(e, at, "split's separator is empty");
        }
        while (i + pn <= n) {
            if (left != 0 && memcmp(s + i, p, pn) == 0) {
                bad |= json_array_append_new(arr, json_stringn_nocheck(s + start, i - start));
                i += pn;
                start = i;
                left--;
            } else {
                i++;
            }
        }
        bad |= json_array_append_new(arr, json_stringn_nocheck(s + start, n - start));
    } else { /* runs of whitespace, none at the ends */
        size_t i = 0;
        uint32_t c;
        for (;;) {
            while (i < n) {
                size_t k = char_at(s, n, i, &c);
                if (!py_space(c))
                    break;
                i += k;
            }
            if (i >= n)
                break;
            size_t start = i;
            if (left == 0) { /* the rest, trailing whitespace and all, as Python keeps it */
                bad |= json_array_append_new(arr, json_stringn_nocheck(s + start, n - start));
                break;
            }
            while (i < n) {
                size_t k = char_at(s, n, i, &c);
                if (py_space(c))
                    break;
                i += k;
            }
            bad |= json_array_append_new(arr, json_stringn_nocheck(s + start, i - start));
            left--;
        }
    }
    if (bad) {
        json_decref(arr);
        return oom(e, at);
    }
    *out = arr;
    return 0;
}

/* startswith/endswith(prefix or tuple of prefixes) */
static int do_affix(jinja_ev *e, const jinja_node *at, json_t *x, json_t *p, int end, json_t **out)
{
    const char *what = end ? "endswith" : "startswith";
    if (need_string(e, at, what, x))
        return -1;
    size_t n = json_string_length(x);
    int yes = 0;
    for (size_t i = 0; i < (json_is_array(p) ? json_array_size(p) : 1) && !yes; i++) {
        json_t *q = json_is_array(p) ? json_array_get(p, i) : p;
        if (need_string(e, at, what, q))
            return -1;
        size_t m = json_string_length(q);
        yes = m <= n && memcmp(json_string_value(x) + (end ? n - m : 0), json_string_value(q), m) == 0;
    }
    *out = json_boolean(yes);
    return 0;
}

/* ---- tests --------------------------------------------------------------------- */

int jinja_test(jinja_ev *e, const jinja_node *at, const char *name, json_t *x, const jinja_args *a,
               int *yes)
{
    json_t *arg = jinja_arg(a, 0, NULL);
    int cmp;
    if (!strcmp(name, "defined")) *yes = x != NULL;
    else if (!strcmp(name, "undefined")) *yes = x == NULL;
    else if (!strcmp(name, "none")) *yes = x && json_is_null(x);
    else if (!strcmp(name, "boolean")) *yes = x && json_is_boolean(x);
    else if (!strcmp(name, "true")) *yes = x && json_is_true(x);
    else if (!strcmp(name, "false")) *yes = x && json_is_false(x);
    else if (!strcmp(name, "string")) *yes = x && json_is_string(x);
    else if (!strcmp(name, "number")) *yes = jv_is_number(x);
    else if (!strcmp(name, "integer")) *yes = x && json_is_integer(x);
    else if (!strcmp(name, "float")) *yes = x && json_is_real(x);
    else if (!strcmp(name, "mapping")) *yes = x && json_is_object(x);
    else if (!strcmp(name, "iterable")) /* Undefined iterates as empty in Jinja2 */
        *yes = !x || json_is_string(x) || json_is_array(x) || json_is_object(x);
    else if (!strcmp(name, "sequence"))
        *yes = x && (json_is_string(x) || json_is_array(x) || json_is_object(x));
    else if (!strcmp(name, "callable")) *yes = 0;
    else if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "==")) *yes = jv_equal(x, arg);
    else if (!strcmp(name, "ne") || !strcmp(name, "!=")) *yes = !jv_equal(x, arg);
    else if (!strcmp(name, "sameas")) /* identity: the same singleton, or an equal scalar of the same type */
        *yes = x && arg && json_typeof(x) == json_typeof(arg) &&
               (json_is_null(x) || json_is_boolean(x) || x == arg);
    else if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        *yes = x && json_is_string(x);
        for (const char *s = *yes ? json_string_value(x) : ""; *s && *yes; s++)
            *yes = name[0] == 'l' ? !(*s >= 'A' && *s <= 'Z') : !(*s >= 'a' && *s <= 'z');
    } else if (!strcmp(name, "odd") || !strcmp(name, "even") || !strcmp(name, "divisibleby")) {
        long long d = name[0] == 'd' ? (arg && json_is_integer(arg) ? json_integer_value(arg) : 0) : 2;
        if (!x || !json_is_integer(x) || d == 0)
            return jinja_fail(e, at, "test %s needs integers (and a divisor other than 0)", name);
        long long r = d == -1 ? 0 : json_integer_value(x) % d;
        *yes = name[0] == 'o' ? r != 0 : r == 0;
    } else if (!strcmp(name, "in")) {
        *yes = 0;
        if (arg && json_is_array(arg))
            for (size_t i = 0; i < json_array_size(arg) && !*yes; i++)
                *yes = jv_equal(x, json_array_get(arg, i));
        else if (arg && json_is_object(arg))
            *yes = x && json_is_string(x) && json_object_get(arg, json_string_value(x));
        else if (arg && json_is_string(arg) && x && json_is_string(x))
            *yes = strstr(json_string_value(arg), json_string_value(x)) != NULL;
        else
            return jinja_fail(e, at, "test in needs a list, dict or string");
    } else if (!strcmp(name, "gt") || !strcmp(name, "lt") || !strcmp(name, "ge") ||
               !strcmp(name, "le") || !strcmp(name, ">") || !strcmp(name, "<") ||
               !strcmp(name, ">=") || !strcmp(name, "<=")) {
        if (jv_order(x, arg, &cmp))
            return jinja_fail(e, at, "test %s cannot compare %s with %s", name, jv_type(x),
                              jv_type(arg));
        int gt = name[0] == 'g' || name[0] == '>', eq = name[1] == 'e' || name[1] == '=';
        *yes = cmp == 0 ? eq : gt ? cmp > 0 : cmp < 0;
    } else {
        return jinja_fail(e, at, "unknown test '%s'; the tests are defined, undefined, none, "
                                 "boolean, true, false, string, number, integer, float, mapping, "
                                 "iterable, sequence, callable, equalto (eq), ne, sameas, lower, "
                                 "upper, odd, even, divisibleby, in, gt, lt, ge, le", name);
    }
    return 0;
}

/* ---- filters ------------------------------------------------------------------- */

static json_t *attr_of(json_t *item, const char *path)
{
    /* "a.b" walks dicts; an integer part indexes a list */
    json_t *v = item;
    char part[128];
    while (v && *path) {
        size_t k = strcspn(path, ".");
        if (k >= sizeof part)
            return NULL;
        memcpy(part, path, k);
        part[k] = '\0';
        path += k + (path[k] == '.');
        if (json_is_object(v))
            v = json_object_get(v, part);
        else if (json_is_array(v) && part[0] >= '0' && part[0] <= '9')
            v = json_array_get(v, (size_t)strtoul(part, NULL, 10));
        else
            v = NULL;
    }
    return v;
}

static int items_of(jinja_ev *e, const jinja_node *at, json_t *x, const char *filter, json_t **out)
{
    json_t *arr = json_array();
    if (!arr)
        return oom(e, at);
    int bad = 0;
    if (!x) {
        /* Undefined: no items */
    } else if (json_is_array(x)) {
        bad = json_array_extend(arr, x);
    } else if (json_is_object(x)) {
        const char *k;
        json_t *v;
        json_object_foreach(x, k, v) bad |= json_array_append_new(arr, json_string(k));
    } else if (json_is_string(x)) {
        const char *s = json_string_value(x);
        size_t n = json_string_length(x);
        uint32_t c;
        for (size_t i = 0; i < n && !bad;) {
            size_t k = char_at(s, n, i, &c);
            bad |= json_array_append_new(arr, json_stringn_nocheck(s + i, k));
            i += k;
        }
    } else {
        json_decref(arr);
        return jinja_fail(e, at, "filter %s needs a list, dict or string, not %s", filter,
                          jv_type(x));
    }
    if (bad) {
        json_decref(arr);
        return oom(e, at);
    }
    *out = arr;
    return 0;
}

/* select/reject/selectattr/rejectattr: the items (or their attribute) that
 * pass the test named by the first argument (truthiness when there is none). */
static int do_select(jinja_ev *e, const jinja_node *at, const char *name, json_t *x,
                     const jinja_args *a, json_t **out)
{
    int by_attr = strstr(name, "attr") != NULL, keep = name[0] == 's';
    json_t *all;
    if (items_of(e, at, x, name, &all))
        return -1;
    json_t *attr = by_attr ? jinja_arg(a, 0, NULL) : NULL;
    if (by_attr && (!attr || !json_is_string(attr))) {
        json_decref(all);
        return jinja_fail(e, at, "filter %s needs an attribute name first", name);
    }
    size_t t0 = by_attr ? 1 : 0;
    json_t *test = a->npos > t0 ? a->pos[t0] : NULL;
    if (test && !json_is_string(test)) {
        json_decref(all);
        return jinja_fail(e, at, "filter %s needs a test's name", name);
    }
    jinja_args rest = {.pos = a->pos + (a->npos > t0 + 1 ? t0 + 1 : a->npos),
                       .npos = a->npos > t0 + 1 ? a->npos - t0 - 1 : 0};
    json_t *arr = json_array();
    int rc = arr ? 0 : oom(e, at);
    for (size_t i = 0; i < json_array_size(all) && rc == 0; i++) {
        json_t *item = json_array_get(all, i);
        json_t *v = by_attr ? attr_of(item, json_string_value(attr)) : item;
        int yes = 0;
        if (test)
            rc = jinja_test(e, at, json_string_value(test), v, &rest, &yes);
        else
            yes = jv_truthy(v);
        if (rc == 0 && yes == keep && json_array_append(arr, item))
            rc = oom(e, at);
    }
    json_decref(all);
    if (rc) {
        json_decref(arr);
        return -1;
    }
    *out = arr;
    return 0;
}

static int do_map(jinja_ev *e, const jinja_node *at, json_t *x, const jinja_args *a, json_t **out)
{
    json_t *all;
    if (items_of(e, at, x, "map", &all))
        return -1;
    json_t *attr = jinja_arg(a, SIZE_MAX, "attribute"), *dflt = jinja_arg(a, SIZE_MAX, "default");
    json_t *fname = a->npos ? a->pos[0] : NULL;
    if ((!attr || !json_is_string(attr)) && (!fname || !json_is_string(fname))) {
        json_decref(all);
        return jinja_fail(e, at, "map needs attribute='name' or a filter's name");
    }
    jinja_args rest = {.pos = a->pos + (a->npos ? 1 : 0), .npos = a->npos ? a->npos - 1 : 0};
    json_t *arr = json_array();
    int rc = arr ? 0 : oom(e, at);
    for (size_t i = 0; i < json_array_size(all) && rc == 0; i++) {
        json_t *item = json_array_get(all, i), *v = NULL;
        if (attr && json_is_string(attr)) {
            v = json_incref(attr_of(item, json_string_value(attr)));
            if (!v)
                v = json_incref(dflt);
        } else {
            rc = jinja_filter(e, at, json_string_value(fname), item, &rest, &v);
        }
        if (rc == 0 && !v)
            rc = jinja_fail(e, at, "map: item %zu has no such attribute (give default=)", i);
        if (rc == 0 && json_array_append_new(arr, v))
            rc = oom(e, at);
        else if (rc)
            json_decref(v);
    }
    json_decref(all);
    if (rc) {
        json_decref(arr);
        return -1;
    }
    *out = arr;
    return 0;
}

static int do_join(jinja_ev *e, const jinja_node *at, json_t *x, const jinja_args *a, json_t **out)
{
    json_t *all, *sep = jinja_arg(a, 0, "d"), *attr = jinja_arg(a, 1, "attribute");
    if (items_of(e, at, x, "join", &all))
        return -1;
    tern_text_buf b = {0};
    tern_text_puts(&b, "");
    for (size_t i = 0; i < json_array_size(all) && !b.oom && b.n <= e->lim.max_output; i++) {
        if (i && sep)
            jv_str(&b, sep);
        json_t *v = json_array_get(all, i);
        jv_str(&b, attr && json_is_string(attr) ? attr_of(v, json_string_value(attr)) : v);
    }
    json_decref(all);
    return from_buf(e, at, &b, out);
}

static int do_tojson(jinja_ev *e, const jinja_node *at, json_t *x, const jinja_args *a,
                     json_t **out)
{
    json_t *indent = jinja_arg(a, 1, "indent"), *sort = jinja_arg(a, 4, "sort_keys");
    json_t *ascii = jinja_arg(a, 0, "ensure_ascii"), *seps = jinja_arg(a, 2, "separators");
    if (ascii && jv_truthy(ascii))
        return jinja_fail(e, at, "tojson(ensure_ascii=True) is not supported");
    if (seps && !json_is_null(seps))
        return jinja_fail(e, at, "tojson(separators=...) is not supported");
    int ind = -1;
    if (indent && !json_is_null(indent)) {
        if (!json_is_integer(indent) || json_integer_value(indent) < 0 ||
            json_integer_value(indent) > 64)
            return jinja_fail(e, at, "tojson's indent must be an integer from 0 to 64");
        ind = (int)json_integer_value(indent);
    }
    tern_text_buf b = {0};
    tern_text_puts(&b, "");
    if (jv_tojson(&b, x, ind, sort && jv_truthy(sort))) {
        free(b.p);
        return jinja_fail(e, at, "tojson: the value holds something JSON cannot (undefined?)");
    }
    return from_buf(e, at, &b, out);
}

int jinja_filter(jinja_ev *e, const jinja_node *at, const char *name, json_t *x,
                 const jinja_args *a, json_t **out)
{
    json_t *a0 = jinja_arg(a, 0, NULL);
    *out = NULL;
    if (!strcmp(name, "trim"))
        return do_strip(e, at, x, jinja_arg(a, 0, "chars"), 1, 1, out);
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "capitalize") ||
        !strcmp(name, "title"))
        return do_case(e, at, x, name[0] == 'u' ? 'u' : name[0] == 'l' ? 'l' : name[0], out);
    if (!strcmp(name, "replace"))
        return do_replace(e, at, x, a0, jinja_arg(a, 1, NULL), jinja_arg(a, 2, "count"), out);
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        size_t n = 0;
        if (x && json_is_string(x)) n = jv_chars(json_string_value(x), json_string_length(x));
        else if (x && json_is_array(x)) n = json_array_size(x);
        else if (x && json_is_object(x)) n = json_object_size(x);
        else if (x) return jinja_fail(e, at, "a %s has no length", jv_type(x));
        *out = json_integer((json_int_t)n);
        return *out ? 0 : oom(e, at);
    }
    if (!strcmp(name, "tojson"))
        return do_tojson(e, at, x, a, out);
    if (!strcmp(name, "join"))
        return do_join(e, at, x, a, out);
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        json_t *boolean = jinja_arg(a, 1, "boolean");
        int use_default = !x || (boolean && jv_truthy(boolean) && !jv_truthy(x));
        json_t *d = jinja_arg(a, 0, "default_value");
        *out = use_default ? (d ? json_incref(d) : json_string("")) : json_incref(x);
        return *out ? 0 : oom(e, at);
    }
    if (!strcmp(name, "list"))
        return items_of(e, at, x, name, out);
    if (!strcmp(name, "items")) {
        if (x && !json_is_object(x))
            return jinja_fail(e, at, "filter items needs a dict, not %s", jv_type(x));
        json_t *arr = json_array();
        const char *k;
        json_t *v;
        int bad = !arr;
        if (x && arr)
            json_object_foreach(x, k, v) bad |= json_array_append_new(arr, json_pack("[sO]", k, v));
        if (bad) {
            json_decref(arr);
            return oom(e, at);
        }
        *out = arr;
        return jinja_check_nesting(e, at, arr);
    }
    if (!strcmp(name, "string"))
        return jinja_str_value(e, at, x, out);
    if (!strcmp(name, "safe"))
        return (*out = json_incref(x)), 0;
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        json_t *all;
        if (items_of(e, at, x, name, &all))
            return -1;
        size_t n = json_array_size(all);
        if (n)
            *out = json_incref(json_array_get(all, name[0] == 'f' ? 0 : n - 1));
        json_decref(all);
        return 0;
    }
    if (!strcmp(name, "reverse")) {
        json_t *all, *arr = json_array();
        if (!arr || items_of(e, at, x, name, &all)) {
            json_decref(arr);
            return arr ? -1 : oom(e, at);
        }
        int bad = 0;
        for (size_t i = json_array_size(all); i-- > 0;)
            bad |= json_array_append(arr, json_array_get(all, i));
        json_decref(all);
        if (x && json_is_string(x) && !bad) {
            json_t *empty = json_string(""), *s = NULL;
            jinja_args none = {0};
            bad = !empty || do_join(e, at, arr, &none, &s);
            json_decref(empty);
            json_decref(arr);
            *out = s;
            return bad ? -1 : 0;
        }
        if (bad) {
            json_decref(arr);
            return oom(e, at);
        }
        *out = arr;
        return 0;
    }
    if (!strcmp(name, "select") || !strcmp(name, "reject") || !strcmp(name, "selectattr") ||
        !strcmp(name, "rejectattr"))
        return do_select(e, at, name, x, a, out);
    if (!strcmp(name, "map"))
        return do_map(e, at, x, a, out);
    if (!strcmp(name, "int")) {
        if (json_is_integer(x) || (x && json_is_boolean(x)))
            *out = json_integer(json_is_integer(x) ? json_integer_value(x) : json_is_true(x));
        else if (x && json_is_real(x) && json_real_value(x) > -9.2e18 && json_real_value(x) < 9.2e18)
            *out = json_integer((json_int_t)json_real_value(x));
        else if (x && json_is_string(x)) {
            char *end;
            long long v = strtoll(json_string_value(x), &end, 10);
            *out = json_integer(*end ? 0 : v);
        } else
            *out = json_integer(0);
        return *out ? 0 : oom(e, at);
    }
    if (!strcmp(name, "float")) {
        double d = x && json_is_string(x) ? strtod(json_string_value(x), NULL) : jv_number(x);
        if (!isfinite(d))
            return jinja_fail(e, at, "filter float: inf and nan are not values tern holds");
        *out = json_real(d);
        return *out ? 0 : oom(e, at);
    }
    if (!strcmp(name, "abs")) {
        if (x && json_is_integer(x) && json_integer_value(x) > INT64_MIN)
            *out = json_integer(json_integer_value(x) < 0 ? -json_integer_value(x) : json_integer_value(x));
        else if (jv_is_number(x))
            *out = json_real(jv_number(x) < 0 ? -jv_number(x) : jv_number(x));
        else
            return jinja_fail(e, at, "filter abs needs a number, not %s", jv_type(x));
        return *out ? 0 : oom(e, at);
    }
    return jinja_fail(e, at, "unknown filter '%s'; the filters are trim, upper, lower, "
                             "capitalize, title, replace, length (count), tojson, join, default "
                             "(d), list, items, string, safe, first, last, reverse, select, reject, "
                             "selectattr, rejectattr, map, int, float, abs", name);
}

/* ---- methods ------------------------------------------------------------------- */

int jinja_method(jinja_ev *e, const jinja_node *at, json_t *obj, const char *name,
                 const jinja_args *a, json_t **out)
{
    json_t *a0 = jinja_arg(a, 0, NULL), *a1 = jinja_arg(a, 1, NULL);
    *out = NULL;
    if (obj && json_is_string(obj)) {
        if (!strcmp(name, "strip")) return do_strip(e, at, obj, a0, 1, 1, out);
        if (!strcmp(name, "lstrip")) return do_strip(e, at, obj, a0, 1, 0, out);
        if (!strcmp(name, "rstrip")) return do_strip(e, at, obj, a0, 0, 1, out);
        if (!strcmp(name, "split"))
            return do_split(e, at, obj, jinja_arg(a, 0, "sep"), jinja_arg(a, 1, "maxsplit"), out);
        if (!strcmp(name, "startswith") || !strcmp(name, "endswith"))
            return do_affix(e, at, obj, a0, name[0] == 'e', out);
        if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "capitalize") ||
            !strcmp(name, "title"))
            return do_case(e, at, obj, name[0] == 'u' ? 'u' : name[0] == 'l' ? 'l' : name[0], out);
        if (!strcmp(name, "replace")) return do_replace(e, at, obj, a0, a1, jinja_arg(a, 2, NULL), out);
        if (!strcmp(name, "find")) {
            if (need_string(e, at, "find", a0))
                return -1;
            const char *s = json_string_value(obj), *hit = NULL;
            size_t n = json_string_length(obj), m = json_string_length(a0);
            for (size_t i = 0; i + m <= n && !hit; i++)
                if (memcmp(s + i, json_string_value(a0), m) == 0)
                    hit = s + i;
            *out = json_integer(hit ? (json_int_t)jv_chars(s, (size_t)(hit - s)) : -1);
            return *out ? 0 : oom(e, at);
        }
    }
    if (obj && json_is_object(obj)) {
        if (!strcmp(name, "get")) {
            if (need_string(e, at, "get", a0))
                return -1;
            json_t *v = json_object_get(obj, json_string_value(a0));
            *out = json_incref(v ? v : a1 ? a1 : json_null());
            return 0;
        }
        if (!strcmp(name, "items") || !strcmp(name, "keys") || !strcmp(name, "values")) {
            json_t *arr = json_array();
            const char *k;
            json_t *v;
            int bad = !arr;
            if (arr)
                json_object_foreach(obj, k, v) bad |= json_array_append_new(
                    arr, name[0] == 'i' ? json_pack("[sO]", k, v) : name[0] == 'k' ? json_string(k)
                                                                         : json_incref(v));
            if (bad) {
                json_decref(arr);
                return oom(e, at);
            }
            *out = arr;
            return jinja_check_nesting(e, at, arr);
        }
    }
    return jinja_fail(e, at, "a %s has no method '%s' tern knows (strings: strip, lstrip, rstrip, "
                             "split, startswith, endswith, upper, lower, capitalize, title, "
                             "replace, find; dicts: get, items, keys, values)",
                      jv_type(obj), name);
}

/* ---- global functions ---------------------------------------------------------- */

static const char *const globals[] = {"raise_exception", "strftime_now", "namespace", "range",
                                      "dict", NULL};

int jinja_is_global(const char *name)
{
    for (int i = 0; globals[i]; i++)
        if (!strcmp(name, globals[i]))
            return 1;
    return 0;
}

/* strftime_now(fmt): datetime.now().strftime(fmt), in the C locale as
 * Python formats it (English names whatever the environment says). */
static int do_strftime(jinja_ev *e, const jinja_node *at, json_t *fmt, json_t **out)
{
    if (need_string(e, at, "strftime_now", fmt))
        return -1;
    time_t now = time(NULL);
    struct tm tm;
    char buf[512];
    locale_t c = newlocale(LC_TIME_MASK, "C", (locale_t)0);
    if (!c)
        return oom(e, at);
    size_t n = localtime_r(&now, &tm) ? strftime_l(buf, sizeof buf, json_string_value(fmt), &tm, c)
                                      : 0;
    freelocale(c);
    if (n == 0 && json_string_length(fmt) > 0)
        return jinja_fail(e, at, "strftime_now: the format gives nothing or more than %zu bytes",
                          sizeof buf - 1);
    return new_string(e, at, buf, n, out);
}

int jinja_call_global(jinja_ev *e, const jinja_node *at, const char *name, const jinja_args *a,
                      json_t **out)
{
    json_t *a0 = jinja_arg(a, 0, NULL);
    *out = NULL;
    if (!strcmp(name, "raise_exception")) {
        tern_text_buf b = {0};
        tern_text_puts(&b, "");
        jv_str(&b, a0);
        jinja_fail(e, at, "the template raised an error: %s", b.p ? b.p : "");
        free(b.p);
        return -1;
    }
    if (!strcmp(name, "strftime_now"))
        return do_strftime(e, at, a0, out);
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        json_t *o = a0 && json_is_object(a0) ? json_deep_copy(a0) : json_object();
        int bad = !o;
        for (size_t i = 0; i < a->nkw && !bad; i++)
            if (a->kwv[i])
                bad = json_object_set(o, a->kw[i], a->kwv[i]);
        if (!bad && name[0] == 'n') {
            if (e->nns == e->capns) {
                size_t cap = e->capns ? e->capns * 2 : 8;
                json_t **p = realloc(e->namespaces, cap * sizeof *p);
                bad = !p;
                if (p) {
                    e->namespaces = p;
                    e->capns = cap;
                }
            }
            if (!bad)
                e->namespaces[e->nns++] = json_incref(o);
        }
        if (bad) {
            json_decref(o);
            return oom(e, at);
        }
        *out = o;
        return jinja_check_nesting(e, at, o);
    }
    if (!strcmp(name, "range")) {
        long long v[3] = {0, 0, 1};
        if (a->npos < 1 || a->npos > 3)
            return jinja_fail(e, at, "range takes 1 to 3 integers");
        for (size_t i = 0; i < a->npos; i++) {
            if (!json_is_integer(a->pos[i]))
                return jinja_fail(e, at, "range takes integers, not %s", jv_type(a->pos[i]));
            v[a->npos == 1 ? 1 : i] = json_integer_value(a->pos[i]);
        }
        if (v[2] == 0)
            return jinja_fail(e, at, "range's step cannot be zero");
        json_t *arr = json_array();
        if (!arr)
            return oom(e, at);
        for (long long i = v[0]; v[2] > 0 ? i < v[1] : i > v[1];) {
            if (jinja_count_iteration(e, at) || json_array_append_new(arr, json_integer(i))) {
                json_decref(arr);
                return e->failed ? -1 : oom(e, at);
            }
            if (__builtin_add_overflow(i, v[2], &i))
                break;
        }
        *out = arr;
        return 0;
    }
    return 1;
}
