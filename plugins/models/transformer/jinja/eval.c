/* eval.c: running the tree (ast.h) over jansson values, as Jinja2 runs it:
 * scopes (a for loop's or a macro's variables end with it; `set` in an
 * `if` does not), Undefined for what is missing, `and`/`or` giving an
 * operand, and the limits of jinja_limits checked as it goes. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/eval.h"
#include "jinja/value.h"

enum { EXEC_OK = 0, EXEC_BREAK = 1, EXEC_CONTINUE = 2 };

int jinja_fail(jinja_ev *e, const jinja_node *at, const char *fmt, ...)
{
    if (e->failed) /* the first error is the one to report */
        return -1;
    e->failed = 1;
    if (!e->err || !e->errn)
        return -1;
    int k = at ? snprintf(e->err, e->errn, "template %d:%d: ", at->line, at->col)
               : snprintf(e->err, e->errn, "template: ");
    if (k >= 0 && (size_t)k < e->errn) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->err + k, e->errn - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

json_t *jinja_arg(const jinja_args *a, size_t i, const char *name)
{
    if (name)
        for (size_t k = 0; k < a->nkw; k++)
            if (strcmp(a->kw[k], name) == 0)
                return a->kwv[k];
    return i < a->npos ? a->pos[i] : NULL;
}

int jinja_check_nesting(jinja_ev *e, const jinja_node *at, const json_t *v)
{
    size_t budget = e->lim.max_steps > e->steps ? e->lim.max_steps - e->steps : 0;
    size_t before = budget;
    size_t d = jv_depth(v, JINJA_MAX_NESTING, &budget);
    e->steps += before - budget;
    if (d > JINJA_MAX_NESTING)
        return jinja_fail(e, at, budget ? "a value nests more than %d lists or dicts deep"
                                        : "the template ran more than its step limit (%d)",
                          JINJA_MAX_NESTING);
    return 0;
}

int jinja_count_iteration(jinja_ev *e, const jinja_node *at)
{
    if (++e->iterations > e->lim.max_iterations)
        return jinja_fail(e, at, "more than %zu loop iterations; the template loops too long",
                          e->lim.max_iterations);
    return 0;
}

static int enter(jinja_ev *e, const jinja_node *at)
{
    if (++e->steps > e->lim.max_steps)
        return jinja_fail(e, at, "the template ran more than %zu steps; it loops too long",
                          e->lim.max_steps);
    if (++e->depth > e->lim.max_depth)
        return jinja_fail(e, at, "nested more than %zu deep (recursion?)", e->lim.max_depth);
    return 0;
}

static int oom(jinja_ev *e, const jinja_node *at)
{
    return jinja_fail(e, at, "out of memory");
}

static int write_out(jinja_ev *e, const jinja_node *at, const char *s, size_t n)
{
    if (n > e->lim.max_output - e->written)
        return jinja_fail(e, at, "the output would exceed %zu bytes", e->lim.max_output);
    e->written += n;
    tern_text_put(e->out, s, n);
    return e->out->oom ? oom(e, at) : 0;
}

/* ---- scopes ----------------------------------------------------------------- */

static json_t *lookup(const jinja_ev *e, const char *name)
{
    for (size_t i = e->nframes; i-- > 0;) {
        json_t *v = json_object_get(e->frames[i], name);
        if (v)
            return json_incref(v);
    }
    return json_incref(json_object_get(e->ctx, name));
}

static int push_frame(jinja_ev *e, const jinja_node *at)
{
    if (e->nframes >= e->lim.max_depth + 1)
        return jinja_fail(e, at, "nested more than %zu deep", e->lim.max_depth);
    if (!(e->frames[e->nframes] = json_object()))
        return oom(e, at);
    e->nframes++;
    return 0;
}

static void pop_frame(jinja_ev *e)
{
    json_decref(e->frames[--e->nframes]);
}

/* Bind name to v (borrowed; Undefined removes it) in the innermost scope. */
static int assign(jinja_ev *e, const jinja_node *at, const char *name, json_t *v)
{
    json_t *f = e->frames[e->nframes - 1];
    if (!v) {
        json_object_del(f, name);
        return 0;
    }
    return json_object_set(f, name, v) == 0 ? 0 : oom(e, at);
}

static int is_namespace(const jinja_ev *e, const json_t *v)
{
    for (size_t i = 0; i < e->nns; i++)
        if (e->namespaces[i] == v)
            return 1;
    return 0;
}

static const jinja_node *find_macro(const jinja_ev *e, const char *name)
{
    for (size_t i = e->nmacros; i-- > 0;)
        if (strcmp(e->macros[i]->s, name) == 0)
            return e->macros[i];
    return NULL;
}

/* ---- expressions ------------------------------------------------------------- */

static int eval(jinja_ev *e, const jinja_node *n, json_t **out);
static int exec(jinja_ev *e, const jinja_node *n);

static void free_args(jinja_args *a)
{
    for (size_t i = 0; i < a->npos; i++)
        json_decref(a->pos[i]);
    for (size_t i = 0; i < a->nkw; i++)
        json_decref(a->kwv[i]);
    free(a->pos);
    free(a->kw);
    free(a->kwv);
}

static int eval_args(jinja_ev *e, const jinja_node *at, jinja_node **kids, size_t n,
                     jinja_args *a)
{
    memset(a, 0, sizeof *a);
    a->pos = calloc(n ? n : 1, sizeof *a->pos);
    a->kw = calloc(n ? n : 1, sizeof *a->kw);
    a->kwv = calloc(n ? n : 1, sizeof *a->kwv);
    if (!a->pos || !a->kw || !a->kwv) {
        free_args(a);
        return oom(e, at);
    }
    for (size_t i = 0; i < n; i++) {
        int rc;
        if (kids[i]->kind == E_KWARG) {
            a->kw[a->nkw] = kids[i]->s;
            rc = eval(e, kids[i]->a, &a->kwv[a->nkw]);
            a->nkw++;
        } else {
            rc = eval(e, kids[i], &a->pos[a->npos]);
            a->npos++;
        }
        if (rc) {
            free_args(a);
            return -1;
        }
    }
    return 0;
}

static int str_of(jinja_ev *e, const jinja_node *at, const json_t *v, json_t **out)
{
    tern_text_buf b = {0};
    tern_text_puts(&b, "");
    jv_str(&b, v);
    if (b.oom) {
        free(b.p);
        return oom(e, at);
    }
    *out = json_stringn_nocheck(b.p, b.n);
    free(b.p);
    return *out ? 0 : oom(e, at);
}

/* Python's index into n items: negative from the end; -1 when outside. */
static long long norm_index(long long i, size_t n)
{
    if (i < 0)
        i += (long long)n;
    return i < 0 || (size_t)i >= n ? -1 : i;
}

static int eval_item(jinja_ev *e, const jinja_node *at, json_t *obj, json_t *key, json_t **out)
{
    *out = NULL;
    if (!obj)
        return jinja_fail(e, at, "indexing an undefined value; check that it is defined first");
    if (json_is_object(obj)) {
        if (json_is_string(key))
            *out = json_incref(json_object_get(obj, json_string_value(key)));
        return 0;
    }
    if (!json_is_integer(key) && !json_is_boolean(key)) {
        if (json_is_array(obj) || json_is_string(obj))
            return jinja_fail(e, at, "a %s index must be an integer, not a %s", jv_type(obj),
                              jv_type(key));
        return 0;
    }
    long long i = json_is_integer(key) ? json_integer_value(key) : json_is_true(key);
    if (json_is_array(obj)) {
        long long k = norm_index(i, json_array_size(obj));
        if (k >= 0)
            *out = json_incref(json_array_get(obj, (size_t)k));
    } else if (json_is_string(obj)) {
        const char *s = json_string_value(obj);
        size_t n = json_string_length(obj);
        long long k = norm_index(i, jv_chars(s, n));
        if (k >= 0) {
            size_t a = jv_char_offset(s, n, (size_t)k), z = jv_char_offset(s, n, (size_t)k + 1);
            if (!(*out = json_stringn_nocheck(s + a, z - a)))
                return oom(e, at);
        }
    }
    return 0;
}

static int slice_bound(jinja_ev *e, const jinja_node *at, json_t *v, long long dflt,
                       long long *out)
{
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v))
        return jinja_fail(e, at, "slice bounds must be integers, not %s", jv_type(v));
    *out = json_integer_value(v);
    return 0;
}

/* Python's slice obj[a:b:c] over lists and strings (by characters). */
static int eval_slice(jinja_ev *e, const jinja_node *n, json_t *obj, json_t **out)
{
    *out = NULL;
    json_t *part[3] = {NULL, NULL, NULL};
    int rc = 0;
    for (int k = 0; k < 3 && rc == 0; k++)
        if (n->kids[k])
            rc = eval(e, n->kids[k], &part[k]);
    long long step = 1, len = 0, start = 0, stop = 0;
    int is_str = obj && json_is_string(obj);
    const char *s = is_str ? json_string_value(obj) : NULL;
    size_t sn = is_str ? json_string_length(obj) : 0;
    if (rc == 0 && !(obj && (json_is_array(obj) || is_str)))
        rc = jinja_fail(e, n, "cannot slice a %s", jv_type(obj));
    if (rc == 0)
        rc = slice_bound(e, n, part[2], 1, &step);
    if (rc == 0 && step == 0)
        rc = jinja_fail(e, n, "a slice step cannot be zero");
    if (rc == 0) {
        len = is_str ? (long long)jv_chars(s, sn) : (long long)json_array_size(obj);
        rc = slice_bound(e, n, part[0], step > 0 ? 0 : len - 1, &start);
    }
    if (rc == 0)
        rc = slice_bound(e, n, part[1], step > 0 ? len : -len - 1, &stop);
    for (int k = 0; k < 3; k++)
        json_decref(part[k]);
    if (rc)
        return -1;
    /* clamp as Python's slice.indices() */
    if (start < 0)
        start = start + len < 0 ? (step > 0 ? 0 : -1) : start + len;
    else if (start >= len)
        start = step > 0 ? len : len - 1;
    if (stop < 0)
        stop = stop + len < 0 ? (step > 0 ? 0 : -1) : stop + len;
    else if (stop >= len)
        stop = step > 0 ? len : len - 1;
    json_t *arr = is_str ? NULL : json_array();
    tern_text_buf b = {0};
    tern_text_puts(&b, "");
    if (!is_str && !arr) {
        free(b.p);
        return oom(e, n);
    }
    for (long long i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (is_str) {
            size_t a = jv_char_offset(s, sn, (size_t)i), z = jv_char_offset(s, sn, (size_t)i + 1);
            tern_text_put(&b, s + a, z - a);
        } else if (json_array_append(arr, json_array_get(obj, (size_t)i))) {
            b.oom = 1;
        }
        if (b.oom || (step > 0 && i > LLONG_MAX - step) || (step < 0 && i < LLONG_MIN - step))
            break;
    }
    if (b.oom) {
        free(b.p);
        json_decref(arr);
        return oom(e, n);
    }
    if (is_str)
        *out = json_stringn_nocheck(b.p, b.n);
    else
        *out = arr;
    free(b.p);
    return *out ? 0 : oom(e, n);
}

static int contains(jinja_ev *e, const jinja_node *at, json_t *x, json_t *in, int *yes)
{
    *yes = 0;
    if (in && json_is_string(in)) {
        if (!x || !json_is_string(x))
            return jinja_fail(e, at, "'in <string>' needs a string on the left, not a %s",
                              jv_type(x));
        size_t n = json_string_length(x), m = json_string_length(in);
        const char *hay = json_string_value(in), *needle = json_string_value(x);
        if (n == 0) {
            *yes = 1;
            return 0;
        }
        for (size_t i = 0; i + n <= m; i++)
            if (memcmp(hay + i, needle, n) == 0) {
                *yes = 1;
                break;
            }
        return 0;
    }
    if (in && json_is_array(in)) {
        for (size_t i = 0; i < json_array_size(in) && !*yes; i++)
            *yes = jv_equal(x, json_array_get(in, i));
        return 0;
    }
    if (in && json_is_object(in)) {
        *yes = x && json_is_string(x) && json_object_get(in, json_string_value(x)) != NULL;
        return 0;
    }
    return jinja_fail(e, at, "'in' needs a string, list or dict on the right, not %s",
                      jv_type(in));
}

/* * of a list or string by a count, within the output limit */
static int repeat(jinja_ev *e, const jinja_node *at, json_t *seq, long long times, json_t **out)
{
    if (times < 0)
        times = 0;
    if (json_is_string(seq)) {
        size_t n = json_string_length(seq);
        if (n && (unsigned long long)times > e->lim.max_output / n)
            return jinja_fail(e, at, "the repeated string would exceed %zu bytes",
                              e->lim.max_output);
        tern_text_buf b = {0};
        tern_text_puts(&b, "");
        for (long long i = 0; i < times; i++)
            tern_text_put(&b, json_string_value(seq), n);
        *out = b.oom ? NULL : json_stringn_nocheck(b.p, b.n);
        free(b.p);
        return *out ? 0 : oom(e, at);
    }
    size_t n = json_array_size(seq);
    if (n && (unsigned long long)times > e->lim.max_iterations / n)
        return jinja_fail(e, at, "the repeated list would exceed %zu items",
                          e->lim.max_iterations);
    json_t *arr = json_array();
    if (!arr)
        return oom(e, at);
    for (long long i = 0; i < times; i++)
        if (json_array_extend(arr, seq)) {
            json_decref(arr);
            return oom(e, at);
        }
    *out = arr;
    return 0;
}

static int arith(jinja_ev *e, const jinja_node *n, json_t *x, json_t *y, json_t **out)
{
    int op = n->op;
    if (op == OP_ADD && x && y && json_is_string(x) && json_is_string(y)) {
        size_t a = json_string_length(x), b = json_string_length(y);
        if (a + b > e->lim.max_output)
            return jinja_fail(e, n, "the string would exceed %zu bytes", e->lim.max_output);
        char *s = malloc(a + b + 1);
        if (!s)
            return oom(e, n);
        memcpy(s, json_string_value(x), a);
        memcpy(s + a, json_string_value(y), b);
        *out = json_stringn_nocheck(s, a + b);
        free(s);
        return *out ? 0 : oom(e, n);
    }
    if (op == OP_ADD && x && y && json_is_array(x) && json_is_array(y)) {
        *out = json_array();
        if (!*out || json_array_extend(*out, x) || json_array_extend(*out, y))
            return oom(e, n);
        return 0;
    }
    if (op == OP_MUL && x && y && (json_is_string(x) || json_is_array(x)) && json_is_integer(y))
        return repeat(e, n, x, json_integer_value(y), out);
    if (op == OP_MUL && x && y && (json_is_string(y) || json_is_array(y)) && json_is_integer(x))
        return repeat(e, n, y, json_integer_value(x), out);
    static const char *names[] = {[OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/",
                                  [OP_FLOORDIV] = "//", [OP_MOD] = "%", [OP_POW] = "**"};
    if (!jv_is_number(x) || !jv_is_number(y))
        return jinja_fail(e, n, "cannot apply '%s' to %s and %s", names[op], jv_type(x),
                          jv_type(y));
    int ints = !json_is_real(x) && !json_is_real(y);
    if (ints && op != OP_DIV) {
        long long a = json_is_integer(x) ? json_integer_value(x) : json_is_true(x);
        long long b = json_is_integer(y) ? json_integer_value(y) : json_is_true(y);
        long long r = 0;
        int bad = 0;
        switch (op) {
        case OP_ADD: bad = __builtin_add_overflow(a, b, &r); break;
        case OP_SUB: bad = __builtin_sub_overflow(a, b, &r); break;
        case OP_MUL: bad = __builtin_mul_overflow(a, b, &r); break;
        case OP_FLOORDIV:
        case OP_MOD:
            if (b == 0)
                return jinja_fail(e, n, "integer division or modulo by zero");
            if (a == LLONG_MIN && b == -1) {
                bad = 1;
                break;
            }
            r = op == OP_FLOORDIV ? a / b : a % b;
            if (op == OP_FLOORDIV && (a % b != 0) && ((a < 0) != (b < 0)))
                r--;
            if (op == OP_MOD && r != 0 && ((r < 0) != (b < 0)))
                r += b;
            break;
        case OP_POW:
            if (b < 0)
                goto floats;
            r = 1;
            for (long long k = 0; k < b && !bad; k++)
                bad = __builtin_mul_overflow(r, a, &r);
            if (a == 0 || a == 1)
                bad = 0, r = b == 0 ? 1 : a;
            break;
        }
        if (bad)
            return jinja_fail(e, n, "integer overflow in '%s'", names[op]);
        *out = json_integer(r);
        return *out ? 0 : oom(e, n);
    }
floats:;
    double a = jv_number(x), b = jv_number(y), r = 0;
    switch (op) {
    case OP_ADD: r = a + b; break;
    case OP_SUB: r = a - b; break;
    case OP_MUL: r = a * b; break;
    case OP_DIV:
    case OP_FLOORDIV:
    case OP_MOD:
        if (b == 0)
            return jinja_fail(e, n, "division by zero");
        r = op == OP_DIV ? a / b : op == OP_FLOORDIV ? floor(a / b) : a - b * floor(a / b);
        break;
    case OP_POW: r = pow(a, b); break;
    }
    if (!isfinite(r)) /* jansson holds finite numbers only */
        return jinja_fail(e, n, "'%s' gives %s, which tern's values cannot hold", names[op],
                          isnan(r) ? "nan" : "an infinity");
    *out = json_real(r);
    return *out ? 0 : oom(e, n);
}

static int eval_binary(jinja_ev *e, const jinja_node *n, json_t **out)
{
    json_t *x = NULL, *y = NULL;
    if (n->op == OP_AND || n->op == OP_OR) {
        if (eval(e, n->a, &x))
            return -1;
        if (jv_truthy(x) == (n->op == OP_OR)) {
            *out = x;
            return 0;
        }
        json_decref(x);
        return eval(e, n->b, out);
    }
    if (eval(e, n->a, &x))
        return -1;
    if (eval(e, n->b, &y)) {
        json_decref(x);
        return -1;
    }
    int rc = 0, yes = 0, cmp = 0;
    switch (n->op) {
    case OP_EQ: yes = jv_equal(x, y); break;
    case OP_NE: yes = !jv_equal(x, y); break;
    case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        if (jv_order(x, y, &cmp))
            rc = jinja_fail(e, n, "cannot compare %s with %s", jv_type(x), jv_type(y));
        yes = n->op == OP_LT ? cmp < 0 : n->op == OP_LE ? cmp <= 0 : n->op == OP_GT ? cmp > 0
                                                                               : cmp >= 0;
        break;
    case OP_IN: case OP_NOT_IN:
        rc = contains(e, n, x, y, &yes);
        if (n->op == OP_NOT_IN)
            yes = !yes;
        break;
    case OP_CONCAT: {
        tern_text_buf b = {0};
        tern_text_puts(&b, "");
        jv_str(&b, x);
        jv_str(&b, y);
        if (b.oom)
            rc = oom(e, n);
        else if (b.n > e->lim.max_output)
            rc = jinja_fail(e, n, "the string would exceed %zu bytes", e->lim.max_output);
        else if (!(*out = json_stringn_nocheck(b.p, b.n)))
            rc = oom(e, n);
        free(b.p);
        json_decref(x);
        json_decref(y);
        return rc;
    }
    default:
        rc = arith(e, n, x, y, out);
        json_decref(x);
        json_decref(y);
        return rc;
    }
    json_decref(x);
    json_decref(y);
    if (rc)
        return -1;
    *out = json_boolean(yes);
    return 0;
}

static int call_macro(jinja_ev *e, const jinja_node *at, const jinja_node *m, jinja_args *a,
                      json_t **out)
{
    if (a->npos > m->nkids)
        return jinja_fail(e, at, "macro %s takes %zu arguments, %zu given", m->s, m->nkids,
                          a->npos);
    if (push_frame(e, at))
        return -1;
    int rc = 0;
    for (size_t i = 0; i < m->nkids && rc == 0; i++) {
        const jinja_node *p = m->kids[i];
        json_t *v = jinja_arg(a, i, p->s), *dflt = NULL;
        if (i >= a->npos && !v && p->kind == E_KWARG) {
            rc = eval(e, p->a, &dflt);
            v = dflt;
        }
        if (rc == 0)
            rc = assign(e, at, p->s, v);
        json_decref(dflt);
    }
    tern_text_buf buf = {0}, *saved = e->out;
    tern_text_puts(&buf, "");
    e->out = &buf;
    if (rc == 0 && exec(e, m->c) < 0)
        rc = -1;
    e->out = saved;
    pop_frame(e);
    if (rc == 0 && buf.oom)
        rc = oom(e, at);
    if (rc == 0 && !(*out = json_stringn_nocheck(buf.p, buf.n)))
        rc = oom(e, at);
    free(buf.p);
    return rc;
}

static int eval_call(jinja_ev *e, const jinja_node *n, json_t **out)
{
    const jinja_node *callee = n->a;
    jinja_args a;
    if (callee->kind != E_ATTR && callee->kind != E_NAME)
        return jinja_fail(e, n, "only functions, macros and methods can be called");
    if (eval_args(e, n, n->kids, n->nkids, &a))
        return -1;
    int rc;
    if (callee->kind == E_ATTR) {
        json_t *obj = NULL;
        rc = eval(e, callee->a, &obj);
        if (rc == 0)
            rc = jinja_method(e, n, obj, callee->s, &a, out);
        json_decref(obj);
    } else {
        const jinja_node *m = find_macro(e, callee->s);
        if (m) {
            rc = call_macro(e, n, m, &a, out);
        } else {
            rc = jinja_call_global(e, n, callee->s, &a, out);
            if (rc == 1)
                rc = jinja_fail(e, n, "'%s' is not a function tern knows; the functions are "
                                      "raise_exception, strftime_now, namespace, range, dict "
                                      "and the template's macros", callee->s);
        }
    }
    free_args(&a);
    return rc;
}

static int eval_container(jinja_ev *e, const jinja_node *n, json_t **out)
{
    json_t *c = n->kind == E_DICT ? json_object() : json_array();
    if (!c)
        return oom(e, n);
    for (size_t i = 0; i < n->nkids; i++) {
        json_t *v = NULL;
        if (eval(e, n->kids[i], &v)) {
            json_decref(c);
            return -1;
        }
        if (n->kind == E_DICT) {
            json_t *k = v, *val = NULL;
            if (!k || !json_is_string(k)) {
                int rc2 = jinja_fail(e, n->kids[i], "dict keys must be strings here, not %s",
                                     jv_type(k)); /* before k is let go */
                json_decref(k);
                json_decref(c);
                return rc2;
            }
            if (eval(e, n->kids[++i], &val)) {
                json_decref(k);
                json_decref(c);
                return -1;
            }
            int bad = val ? json_object_set_new(c, json_string_value(k), val) : 0;
            json_decref(k);
            if (bad) {
                json_decref(c);
                return oom(e, n);
            }
            continue;
        }
        if (!v) {
            json_decref(c);
            return jinja_fail(e, n->kids[i], "an undefined value cannot go in a list");
        }
        if (json_array_append_new(c, v)) {
            json_decref(c);
            return oom(e, n);
        }
    }
    if (jinja_check_nesting(e, n, c)) {
        json_decref(c);
        return -1;
    }
    *out = c;
    return 0;
}

static int eval_test(jinja_ev *e, const jinja_node *n, json_t **out)
{
    json_t *x = NULL;
    int yes = 0, rc;
    if ((strcmp(n->s, "defined") == 0 || strcmp(n->s, "undefined") == 0) &&
        n->a->kind == E_NAME && (jinja_is_global(n->a->s) || find_macro(e, n->a->s))) {
        yes = strcmp(n->s, "defined") == 0;
    } else {
        jinja_args a;
        if (eval(e, n->a, &x))
            return -1;
        if (eval_args(e, n, n->kids, n->nkids, &a)) {
            json_decref(x);
            return -1;
        }
        rc = jinja_test(e, n, n->s, x, &a, &yes);
        free_args(&a);
        json_decref(x);
        if (rc)
            return -1;
    }
    *out = json_boolean(n->op ? !yes : yes);
    return 0;
}

static int eval_node(jinja_ev *e, const jinja_node *n, json_t **out)
{
    json_t *x = NULL, *y = NULL;
    int rc;
    switch (n->kind) {
    case E_LITERAL:
        *out = json_incref(n->lit);
        return 0;
    case E_NAME:
        *out = lookup(e, n->s);
        return 0;
    case E_ATTR:
        if (eval(e, n->a, &x))
            return -1;
        if (!x)
            return jinja_fail(e, n, "'.%s' of an undefined value; check it is defined first",
                              n->s);
        if (json_is_object(x))
            *out = json_incref(json_object_get(x, n->s));
        json_decref(x);
        return 0;
    case E_ITEM:
        if (eval(e, n->a, &x))
            return -1;
        if (eval(e, n->b, &y)) {
            json_decref(x);
            return -1;
        }
        rc = eval_item(e, n, x, y, out);
        json_decref(x);
        json_decref(y);
        return rc;
    case E_SLICE:
        if (eval(e, n->a, &x))
            return -1;
        rc = eval_slice(e, n, x, out);
        json_decref(x);
        return rc;
    case E_CALL:
        return eval_call(e, n, out);
    case E_FILTER: {
        jinja_args a;
        if (eval(e, n->a, &x))
            return -1;
        if (eval_args(e, n, n->kids, n->nkids, &a)) {
            json_decref(x);
            return -1;
        }
        rc = jinja_filter(e, n, n->s, x, &a, out);
        free_args(&a);
        json_decref(x);
        return rc;
    }
    case E_TEST:
        return eval_test(e, n, out);
    case E_UNARY:
        if (eval(e, n->a, &x))
            return -1;
        if (n->op == 'n') {
            *out = json_boolean(!jv_truthy(x));
        } else if (!jv_is_number(x)) {
            /* the message names x's type: read before x is let go */
            int rc2 = jinja_fail(e, n, "cannot apply unary '%c' to %s", n->op, jv_type(x));
            json_decref(x);
            return rc2;
        } else if (n->op == '+') {
            *out = json_is_boolean(x) ? json_integer(json_is_true(x)) : json_incref(x);
        } else if (json_is_real(x)) {
            *out = json_real(-json_real_value(x));
        } else {
            long long v = json_is_integer(x) ? json_integer_value(x) : json_is_true(x);
            if (v == LLONG_MIN) {
                json_decref(x);
                return jinja_fail(e, n, "integer overflow in unary '-'");
            }
            *out = json_integer(-v);
        }
        json_decref(x);
        return *out ? 0 : oom(e, n);
    case E_BINARY:
        return eval_binary(e, n, out);
    case E_COND:
        if (eval(e, n->a, &x))
            return -1;
        rc = jv_truthy(x);
        json_decref(x);
        if (rc)
            return eval(e, n->b, out);
        return n->c ? eval(e, n->c, out) : 0;
    case E_LIST:
    case E_TUPLE:
    case E_DICT:
        return eval_container(e, n, out);
    default:
        return jinja_fail(e, n, "internal: not an expression");
    }
}

static int eval(jinja_ev *e, const jinja_node *n, json_t **out)
{
    *out = NULL;
    if (enter(e, n))
        return -1;
    int rc = eval_node(e, n, out);
    e->depth--;
    if (rc) {
        json_decref(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* ---- statements -------------------------------------------------------------- */

/* The items a for loop walks: a list's, a dict's keys, a string's characters. */
static int iteration_items(jinja_ev *e, const jinja_node *at, json_t *v, json_t **items)
{
    *items = NULL;
    if (!v || json_is_array(v)) {
        *items = v ? json_incref(v) : json_array();
        return *items ? 0 : oom(e, at);
    }
    json_t *arr = json_array();
    if (!arr)
        return oom(e, at);
    int bad = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) bad |= json_array_append_new(arr, json_string(k));
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v), i = 0;
        while (i < n && !bad) {
            size_t k = i + 1;
            while (k < n && ((unsigned char)s[k] & 0xc0) == 0x80)
                k++;
            bad |= json_array_append_new(arr, json_stringn_nocheck(s + i, k - i));
            i = k;
        }
    } else {
        json_decref(arr);
        return jinja_fail(e, at, "cannot loop over a %s", jv_type(v));
    }
    if (bad) {
        json_decref(arr);
        return oom(e, at);
    }
    *items = arr;
    return 0;
}

static int bind_targets(jinja_ev *e, const jinja_node *n, json_t *item)
{
    if (!n->s2)
        return assign(e, n, n->s, item);
    if (!json_is_array(item) || json_array_size(item) != 2)
        return jinja_fail(e, n, "'for %s, %s in ...' needs pairs, found a %s", n->s, n->s2,
                          jv_type(item));
    if (assign(e, n, n->s, json_array_get(item, 0)))
        return -1;
    return assign(e, n, n->s2, json_array_get(item, 1));
}

static int exec_for(jinja_ev *e, const jinja_node *n)
{
    json_t *v = NULL, *all = NULL, *items = NULL;
    if (eval(e, n->a, &v))
        return -1;
    int rc = iteration_items(e, n, v, &all);
    json_decref(v);
    if (rc)
        return -1;
    if (n->b) { /* for x in xs if cond: the loop sees only the items that pass */
        items = json_array();
        if (!items) {
            json_decref(all);
            return oom(e, n);
        }
        for (size_t i = 0; i < json_array_size(all) && rc == 0; i++) {
            json_t *c = NULL;
            rc = push_frame(e, n);
            if (rc)
                break;
            rc = bind_targets(e, n, json_array_get(all, i));
            if (rc == 0)
                rc = eval(e, n->b, &c);
            pop_frame(e);
            if (rc == 0 && jv_truthy(c) && json_array_append(items, json_array_get(all, i)))
                rc = oom(e, n);
            json_decref(c);
            if (rc == 0)
                rc = jinja_count_iteration(e, n);
        }
        json_decref(all);
        if (rc) {
            json_decref(items);
            return -1;
        }
    } else {
        items = all;
    }
    size_t len = json_array_size(items);
    for (size_t i = 0; i < len; i++) {
        if (jinja_count_iteration(e, n) || push_frame(e, n)) {
            rc = -1;
            break;
        }
        json_t *loop = json_pack("{sIsIsIsIsbsbsI}", "index", (json_int_t)i + 1, "index0",
                                 (json_int_t)i, "revindex", (json_int_t)(len - i), "revindex0",
                                 (json_int_t)(len - i - 1), "first", i == 0, "last", i + 1 == len,
                                 "length", (json_int_t)len);
        if (!loop ||
            (i > 0 && json_object_set(loop, "previtem", json_array_get(items, i - 1))) ||
            (i + 1 < len && json_object_set(loop, "nextitem", json_array_get(items, i + 1))) ||
            json_object_set_new(e->frames[e->nframes - 1], "loop", loop)) {
            if (loop && !json_object_get(e->frames[e->nframes - 1], "loop"))
                json_decref(loop);
            pop_frame(e);
            rc = oom(e, n);
            break;
        }
        rc = bind_targets(e, n, json_array_get(items, i));
        for (size_t k = 0; k < n->nkids && rc == 0; k++)
            rc = exec(e, n->kids[k]);
        pop_frame(e);
        if (rc == EXEC_CONTINUE)
            rc = 0;
        if (rc == EXEC_BREAK) {
            rc = 0;
            break;
        }
        if (rc)
            break;
    }
    json_decref(items);
    if (rc)
        return -1;
    if (len == 0 && n->c)
        return exec(e, n->c);
    return 0;
}

/* Whether target is reachable from v, within the step budget. */
static int reaches(jinja_ev *e, const json_t *v, const json_t *target)
{
    size_t budget = e->lim.max_steps > e->steps ? e->lim.max_steps - e->steps : 0;
    size_t before = budget;
    int yes = jv_reaches(v, target, &budget);
    e->steps += before - budget;
    return yes;
}

static int exec_set(jinja_ev *e, const jinja_node *n)
{
    json_t *v = NULL;
    int rc;
    if (n->kind == N_SET && !n->a) { /* {% set x %}...{% endset %} */
        tern_text_buf buf = {0}, *saved = e->out;
        tern_text_puts(&buf, "");
        e->out = &buf;
        rc = exec(e, n->c);
        e->out = saved;
        if (rc == 0 && buf.oom)
            rc = oom(e, n);
        if (rc == 0 && !(v = json_stringn_nocheck(buf.p, buf.n)))
            rc = oom(e, n);
        free(buf.p);
        if (rc)
            return rc < 0 ? -1 : jinja_fail(e, n, "break or continue outside a loop");
    } else if (eval(e, n->a, &v)) {
        return -1;
    }
    if (n->kind == N_SET) {
        rc = assign(e, n, n->s, v);
    } else {
        json_t *ns = lookup(e, n->s);
        if (!is_namespace(e, ns))
            rc = jinja_fail(e, n, "'set %s.%s': %s is not a namespace(); make it with "
                                  "{%% set %s = namespace() %%}", n->s, n->s2, n->s, n->s);
        else if (!v)
            rc = (json_object_del(ns, n->s2), 0);
        else if (jinja_check_nesting(e, n, v))
            rc = -1;
        else if (reaches(e, v, ns))
            rc = jinja_fail(e, n, "'set %s.%s': the value holds %s itself (or is too big to "
                                  "check), which would make a cycle", n->s, n->s2, n->s);
        else
            rc = json_object_set(ns, n->s2, v) ? oom(e, n) : 0;
        json_decref(ns);
    }
    json_decref(v);
    return rc;
}

static int exec_node(jinja_ev *e, const jinja_node *n)
{
    json_t *v = NULL;
    int rc;
    switch (n->kind) {
    case N_BODY:
        for (size_t i = 0; i < n->nkids; i++)
            if ((rc = exec(e, n->kids[i])) != 0)
                return rc;
        return 0;
    case N_TEXT:
        return write_out(e, n, n->s, n->n);
    case N_OUTPUT: {
        if (eval(e, n->a, &v))
            return -1;
        if (v && json_is_string(v)) {
            rc = write_out(e, n, json_string_value(v), json_string_length(v));
        } else {
            tern_text_buf b = {0};
            tern_text_puts(&b, "");
            jv_str(&b, v);
            rc = b.oom ? oom(e, n) : write_out(e, n, b.p, b.n);
            free(b.p);
        }
        json_decref(v);
        return rc;
    }
    case N_IF:
        if (eval(e, n->a, &v))
            return -1;
        rc = jv_truthy(v);
        json_decref(v);
        if (rc)
            return exec(e, n->b);
        return n->c ? exec(e, n->c) : 0;
    case N_FOR:
        return exec_for(e, n);
    case N_SET:
    case N_SET_ATTR:
        return exec_set(e, n);
    case N_MACRO:
        if (e->nmacros == e->capmacros) {
            size_t cap = e->capmacros ? e->capmacros * 2 : 8;
            const jinja_node **p = realloc(e->macros, cap * sizeof *p);
            if (!p)
                return oom(e, n);
            e->macros = p;
            e->capmacros = cap;
        }
        e->macros[e->nmacros++] = n;
        return 0;
    case N_BREAK:
        return EXEC_BREAK;
    case N_CONTINUE:
        return EXEC_CONTINUE;
    default:
        return jinja_fail(e, n, "internal: not a statement");
    }
}

static int exec(jinja_ev *e, const jinja_node *n)
{
    if (enter(e, n))
        return -1;
    int rc = exec_node(e, n);
    e->depth--;
    return rc;
}

int jinja_exec_body(jinja_ev *e, const jinja_node *body)
{
    int rc = exec(e, body);
    if (rc > 0)
        return jinja_fail(e, NULL, "break or continue outside a loop");
    return rc;
}

int jinja_str_value(jinja_ev *e, const jinja_node *at, const json_t *v, json_t **out)
{
    return str_of(e, at, v, out);
}
