/* value.c: Python's semantics over jansson values (value.h). */
#include "jinja/value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jv_is_number(const json_t *v)
{
    return v && (json_is_integer(v) || json_is_real(v) || json_is_boolean(v));
}

double jv_number(const json_t *v)
{
    if (!v)
        return 0;
    if (json_is_integer(v))
        return (double)json_integer_value(v);
    if (json_is_real(v))
        return json_real_value(v);
    if (json_is_boolean(v))
        return json_is_true(v);
    return 0;
}

int jv_truthy(const json_t *v)
{
    if (!v)
        return 0;
    switch (json_typeof(v)) {
    case JSON_NULL: case JSON_FALSE: return 0;
    case JSON_TRUE: return 1;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0;
    case JSON_STRING: return json_string_length(v) != 0;
    case JSON_ARRAY: return json_array_size(v) != 0;
    case JSON_OBJECT: return json_object_size(v) != 0;
    }
    return 0;
}

const char *jv_type(const json_t *v)
{
    if (!v)
        return "undefined";
    switch (json_typeof(v)) {
    case JSON_NULL: return "none";
    case JSON_TRUE: case JSON_FALSE: return "boolean";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "float";
    case JSON_STRING: return "string";
    case JSON_ARRAY: return "list";
    case JSON_OBJECT: return "dict";
    }
    return "value";
}

/* float.__repr__: the shortest digits that read back as d, in fixed
 * notation for exponents -4..15 and as 1e+16 beyond. `json` writes the
 * non-finite values as json.dumps does. */
static void put_float(tern_text_buf *b, double d, int json)
{
    char s[64];
    if (isnan(d)) {
        tern_text_puts(b, json ? "NaN" : "nan");
        return;
    }
    if (isinf(d)) {
        tern_text_puts(b, d < 0 ? (json ? "-Infinity" : "-inf") : (json ? "Infinity" : "inf"));
        return;
    }
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*e", prec - 1, d);
        if (strtod(s, NULL) == d)
            break;
    }
    /* s is [-]D[.DDD]e[+-]XX */
    char digits[32];
    size_t nd = 0;
    const char *p = s;
    int neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && nd < sizeof digits - 1)
            digits[nd++] = *p;
    digits[nd] = '\0';
    int exp = *p == 'e' ? atoi(p + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0') /* %e pads with zeros */
        digits[--nd] = '\0';
    if (neg)
        tern_text_puts(b, "-");
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            tern_text_puts(b, "0.");
            for (int k = -1; k > exp; k--)
                tern_text_puts(b, "0");
            tern_text_put(b, digits, nd);
        } else {
            size_t whole = (size_t)exp + 1;
            for (size_t k = 0; k < whole; k++)
                tern_text_put(b, k < nd ? &digits[k] : "0", 1);
            tern_text_puts(b, ".");
            if (nd > whole)
                tern_text_put(b, digits + whole, nd - whole);
            else
                tern_text_puts(b, "0");
        }
    } else {
        tern_text_put(b, digits, 1);
        if (nd > 1) {
            tern_text_puts(b, ".");
            tern_text_put(b, digits + 1, nd - 1);
        }
        snprintf(s, sizeof s, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        tern_text_puts(b, s);
    }
}

static void put_int(tern_text_buf *b, json_int_t i)
{
    char s[32];
    snprintf(s, sizeof s, "%" JSON_INTEGER_FORMAT, i);
    tern_text_puts(b, s);
}

static void repr_string(tern_text_buf *b, const char *s, size_t n)
{
    int has_single = memchr(s, '\'', n) != NULL, has_double = memchr(s, '"', n) != NULL;
    char q = has_single && !has_double ? '"' : '\'';
    tern_text_put(b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[8];
        if (c == '\\') tern_text_puts(b, "\\\\");
        else if (c == (unsigned char)q) { e[0] = '\\'; e[1] = q; tern_text_put(b, e, 2); }
        else if (c == '\n') tern_text_puts(b, "\\n");
        else if (c == '\r') tern_text_puts(b, "\\r");
        else if (c == '\t') tern_text_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f) { snprintf(e, sizeof e, "\\x%02x", c); tern_text_puts(b, e); }
        else tern_text_put(b, &s[i], 1);
    }
    tern_text_put(b, &q, 1);
}

void jv_repr(tern_text_buf *b, const json_t *v)
{
    if (!v)
        return;
    switch (json_typeof(v)) {
    case JSON_STRING: repr_string(b, json_string_value(v), json_string_length(v)); return;
    case JSON_ARRAY: {
        tern_text_puts(b, "[");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                tern_text_puts(b, ", ");
            jv_repr(b, json_array_get(v, i));
        }
        tern_text_puts(b, "]");
        return;
    }
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        int first = 1;
        tern_text_puts(b, "{");
        json_object_foreach((json_t *)v, k, x) {
            if (!first)
                tern_text_puts(b, ", ");
            first = 0;
            repr_string(b, k, strlen(k));
            tern_text_puts(b, ": ");
            jv_repr(b, x);
        }
        tern_text_puts(b, "}");
        return;
    }
    default: jv_str(b, v);
    }
}

void jv_str(tern_text_buf *b, const json_t *v)
{
    if (!v)
        return;
    switch (json_typeof(v)) {
    case JSON_NULL: tern_text_puts(b, "None"); return;
    case JSON_TRUE: tern_text_puts(b, "True"); return;
    case JSON_FALSE: tern_text_puts(b, "False"); return;
    case JSON_INTEGER: put_int(b, json_integer_value(v)); return;
    case JSON_REAL: put_float(b, json_real_value(v), 0); return;
    case JSON_STRING: tern_text_put(b, json_string_value(v), json_string_length(v)); return;
    default: jv_repr(b, v);
    }
}

/* json.dumps' string: only '"', '\\' and control characters escaped
 * (ensure_ascii=False). */
static void json_string_out(tern_text_buf *b, const char *s, size_t n)
{
    tern_text_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[8];
        switch (c) {
        case '"': tern_text_puts(b, "\\\""); break;
        case '\\': tern_text_puts(b, "\\\\"); break;
        case '\n': tern_text_puts(b, "\\n"); break;
        case '\r': tern_text_puts(b, "\\r"); break;
        case '\t': tern_text_puts(b, "\\t"); break;
        case '\b': tern_text_puts(b, "\\b"); break;
        case '\f': tern_text_puts(b, "\\f"); break;
        default:
            if (c < 0x20) {
                snprintf(e, sizeof e, "\\u%04x", c);
                tern_text_puts(b, e);
            } else {
                tern_text_put(b, &s[i], 1);
            }
        }
    }
    tern_text_puts(b, "\"");
}

static void newline_indent(tern_text_buf *b, int indent, int level)
{
    tern_text_puts(b, "\n");
    for (long k = 0; k < (long)indent * level; k++)
        tern_text_puts(b, " ");
}

static int key_cmp(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int tojson_at(tern_text_buf *b, const json_t *v, int indent, int sort, int level)
{
    if (!v)
        return -1;
    if (level > 1000) /* deeper than Python's recursion limit lets json.dumps go */
        return -1;
    switch (json_typeof(v)) {
    case JSON_NULL: tern_text_puts(b, "null"); return 0;
    case JSON_TRUE: tern_text_puts(b, "true"); return 0;
    case JSON_FALSE: tern_text_puts(b, "false"); return 0;
    case JSON_INTEGER: put_int(b, json_integer_value(v)); return 0;
    case JSON_REAL: put_float(b, json_real_value(v), 1); return 0;
    case JSON_STRING: json_string_out(b, json_string_value(v), json_string_length(v)); return 0;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        tern_text_puts(b, "[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                tern_text_puts(b, indent >= 0 ? "," : ", ");
            if (indent >= 0)
                newline_indent(b, indent, level + 1);
            if (tojson_at(b, json_array_get(v, i), indent, sort, level + 1))
                return -1;
        }
        if (n && indent >= 0)
            newline_indent(b, indent, level);
        tern_text_puts(b, "]");
        return 0;
    }
    case JSON_OBJECT: {
        size_t n = json_object_size(v), i = 0;
        const char **keys = malloc((n ? n : 1) * sizeof *keys);
        if (!keys) {
            b->oom = 1;
            return 0;
        }
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) keys[i++] = k;
        if (sort)
            qsort(keys, n, sizeof *keys, key_cmp);
        tern_text_puts(b, "{");
        int rc = 0;
        for (i = 0; i < n && rc == 0; i++) {
            if (i)
                tern_text_puts(b, indent >= 0 ? "," : ", ");
            if (indent >= 0)
                newline_indent(b, indent, level + 1);
            json_string_out(b, keys[i], strlen(keys[i]));
            tern_text_puts(b, ": ");
            rc = tojson_at(b, json_object_get(v, keys[i]), indent, sort, level + 1);
        }
        free(keys);
        if (rc)
            return -1;
        if (n && indent >= 0)
            newline_indent(b, indent, level);
        tern_text_puts(b, "}");
        return 0;
    }
    }
    return -1;
}

int jv_tojson(tern_text_buf *b, const json_t *v, int indent, int sort)
{
    return tojson_at(b, v, indent, sort, 0);
}

int jv_equal(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return !a && !b;
    if (jv_is_number(a) && jv_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return jv_number(a) == jv_number(b);
    }
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_NULL: return 1;
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return 0;
        for (size_t i = 0; i < n; i++)
            if (!jv_equal(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)a, k, x) {
            if (!jv_equal(x, json_object_get(b, k)))
                return 0;
        }
        return 1;
    }
    default: return 0;
    }
}

int jv_order(const json_t *a, const json_t *b, int *cmp)
{
    if (jv_is_number(a) && jv_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b)) {
            json_int_t x = json_integer_value(a), y = json_integer_value(b);
            *cmp = x < y ? -1 : x > y;
        } else {
            double x = jv_number(a), y = jv_number(b);
            *cmp = x < y ? -1 : x > y;
        }
        return 0;
    }
    if (json_is_string(a) && json_is_string(b)) {
        size_t n = json_string_length(a), m = json_string_length(b);
        int c = memcmp(json_string_value(a), json_string_value(b), n < m ? n : m);
        *cmp = c ? c : n < m ? -1 : n > m;
        return 0;
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t n = json_array_size(a), m = json_array_size(b);
        for (size_t i = 0; i < n && i < m; i++) {
            if (jv_equal(json_array_get(a, i), json_array_get(b, i)))
                continue;
            return jv_order(json_array_get(a, i), json_array_get(b, i), cmp);
        }
        *cmp = n < m ? -1 : n > m;
        return 0;
    }
    return -1;
}

size_t jv_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

size_t jv_char_offset(const char *s, size_t n, size_t k)
{
    size_t c = 0, i = 0;
    for (; i < n; i++) {
        if (((unsigned char)s[i] & 0xc0) != 0x80) {
            if (c == k)
                return i;
            c++;
        }
    }
    return n;
}

size_t jv_depth(const json_t *v, size_t limit, size_t *budget)
{
    if (!v || !(json_is_array(v) || json_is_object(v)))
        return 0;
    if (limit == 0 || *budget == 0)
        return limit + 1;
    (*budget)--;
    size_t deepest = 0;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v) && deepest < limit; i++) {
            size_t d = jv_depth(json_array_get(v, i), limit - 1, budget);
            if (d > deepest)
                deepest = d;
        }
    } else {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            size_t d = jv_depth(x, limit - 1, budget);
            if (d > deepest)
                deepest = d;
            if (deepest >= limit)
                break;
        }
    }
    return deepest + 1;
}

int jv_reaches(const json_t *v, const json_t *target, size_t *budget)
{
    if (!v || !(json_is_array(v) || json_is_object(v)))
        return 0;
    if (v == target || *budget == 0)
        return 1;
    (*budget)--;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (jv_reaches(json_array_get(v, i), target, budget))
                return 1;
        return 0;
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        if (jv_reaches(x, target, budget))
            return 1;
    }
    return 0;
}
