/* parser.c: tokens to the tree of ast.h, by recursive descent in Jinja2's
 * precedence (lowest first): `x if c else y`, or, and, not, comparisons and
 * `in`, + -, ~, * / // %, **, unary - +, then a primary with its postfixes
 * (.attr, [key], [a:b:c], (args)), filters (|f) and tests (is t). Nesting
 * deeper than JINJA_MAX_DEPTH is refused so the C stack stays bounded. */
#include <stdio.h>
#include <string.h>

#include "fail.h"
#include "jinja/ast.h"
#include "jinja/jinja.h"

typedef struct parser {
    jinja_arena *a;
    const jinja_token *t;
    size_t n, i;
    size_t depth;
    char *err;
    size_t errn;
} parser;

static const jinja_token *cur(const parser *P)
{
    return &P->t[P->i < P->n ? P->i : P->n - 1];
}

static int oom(parser *P)
{
    return tf_fail(P->err, P->errn, "template: out of memory");
}

/* A description of the current token, for messages. */
static void describe(const jinja_token *t, char *out, size_t n)
{
    switch (t->kind) {
    case TK_EOF: snprintf(out, n, "the end of the template"); break;
    case TK_TEXT: snprintf(out, n, "text"); break;
    case TK_VAR_BEGIN: snprintf(out, n, "'{{'"); break;
    case TK_VAR_END: snprintf(out, n, "'}}'"); break;
    case TK_BLOCK_BEGIN: snprintf(out, n, "'{%%'"); break;
    case TK_BLOCK_END: snprintf(out, n, "'%%}'"); break;
    case TK_STRING: snprintf(out, n, "a string"); break;
    case TK_INT: case TK_FLOAT: snprintf(out, n, "a number"); break;
    default: snprintf(out, n, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
    }
}

static int syntax(parser *P, const char *expected)
{
    char got[64];
    const jinja_token *t = cur(P);
    describe(t, got, sizeof got);
    return tf_fail(P->err, P->errn, "template %d:%d: expected %s, found %s", t->line, t->col,
                   expected, got);
}

static int is_op(const parser *P, const char *op)
{
    const jinja_token *t = cur(P);
    return t->kind == TK_OP && t->n == strlen(op) && memcmp(t->s, op, t->n) == 0;
}

static int is_name(const parser *P, const char *name)
{
    const jinja_token *t = cur(P);
    return t->kind == TK_NAME && t->n == strlen(name) && memcmp(t->s, name, t->n) == 0;
}

static int accept_op(parser *P, const char *op)
{
    if (!is_op(P, op))
        return 0;
    P->i++;
    return 1;
}

static int accept_name(parser *P, const char *name)
{
    if (!is_name(P, name))
        return 0;
    P->i++;
    return 1;
}

static int expect_op(parser *P, const char *op)
{
    if (accept_op(P, op))
        return 0;
    char what[16];
    snprintf(what, sizeof what, "'%s'", op);
    return syntax(P, what);
}

static jinja_node *node(parser *P, jinja_kind kind)
{
    jinja_node *n = jinja_arena_alloc(P->a, sizeof *n);
    if (!n)
        return NULL;
    n->kind = kind;
    n->line = cur(P)->line;
    n->col = cur(P)->col;
    return n;
}

/* A NUL-terminated copy of the current token's text. */
static const char *take_name(parser *P)
{
    const jinja_token *t = cur(P);
    char *s = jinja_arena_alloc(P->a, t->n + 1);
    if (!s)
        return NULL;
    memcpy(s, t->s, t->n);
    s[t->n] = '\0';
    P->i++;
    return s;
}

/* A growing list of children, in arena memory. */
typedef struct kids {
    jinja_node **p;
    size_t n, cap;
} kids;

static int add_kid(parser *P, kids *k, jinja_node *x)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 4;
        jinja_node **p = jinja_arena_alloc(P->a, cap * sizeof *p);
        if (!p)
            return oom(P);
        if (k->n)
            memcpy(p, k->p, k->n * sizeof *p);
        k->p = p;
        k->cap = cap;
    }
    k->p[k->n++] = x;
    return 0;
}

static void set_kids(jinja_node *n, const kids *k)
{
    n->kids = k->p;
    n->nkids = k->n;
}

static int enter(parser *P)
{
    if (++P->depth > JINJA_MAX_DEPTH)
        return tf_fail(P->err, P->errn, "template %d:%d: nested more than %d deep; simplify it",
                       cur(P)->line, cur(P)->col, JINJA_MAX_DEPTH);
    return 0;
}

static int expr(parser *P, jinja_node **out);
static int expr_noternary(parser *P, jinja_node **out);
static int unary(parser *P, jinja_node **out, int with_filters);

static int is_keyword(const jinja_token *t)
{
    static const char *kw[] = {"and", "or", "not", "in", "is", "if", "else", "elif", "for",
                               "endif", "endfor", NULL};
    if (t->kind != TK_NAME)
        return 0;
    for (int i = 0; kw[i]; i++)
        if (t->n == strlen(kw[i]) && memcmp(t->s, kw[i], t->n) == 0)
            return 1;
    return 0;
}

/* (args) after a callee, a filter or a test: positional then name=value. */
static int call_args(parser *P, kids *k)
{
    if (expect_op(P, "("))
        return -1;
    while (!is_op(P, ")")) {
        jinja_node *v;
        if (cur(P)->kind == TK_NAME && P->i + 1 < P->n && P->t[P->i + 1].kind == TK_OP &&
            P->t[P->i + 1].n == 1 && P->t[P->i + 1].s[0] == '=') {
            jinja_node *kw = node(P, E_KWARG);
            if (!kw || !(kw->s = take_name(P)))
                return oom(P);
            P->i++; /* = */
            if (expr(P, &kw->a) || add_kid(P, k, kw))
                return -1;
        } else {
            if (expr(P, &v) || add_kid(P, k, v))
                return -1;
        }
        if (!accept_op(P, ",")) {
            if (!is_op(P, ")"))
                return syntax(P, "',' or ')' in the arguments");
        }
    }
    P->i++;
    return 0;
}

/* A dotted filter or test name: `name` */
static int filter_name(parser *P, const char **s)
{
    if (cur(P)->kind != TK_NAME)
        return syntax(P, "a filter or test name");
    if (!(*s = take_name(P)))
        return oom(P);
    return 0;
}

static int primary(parser *P, jinja_node **out)
{
    const jinja_token *t = cur(P);
    jinja_node *n;
    if (t->kind == TK_STRING || t->kind == TK_INT || t->kind == TK_FLOAT) {
        if (!(n = node(P, E_LITERAL)))
            return oom(P);
        json_t *v;
        if (t->kind == TK_STRING) {
            /* adjacent literals join, as in Python */
            size_t total = 0;
            size_t j = P->i;
            while (j < P->n && P->t[j].kind == TK_STRING)
                total += P->t[j++].n;
            char *s = jinja_arena_alloc(P->a, total + 1);
            if (!s)
                return oom(P);
            size_t at = 0;
            for (; P->i < j; P->i++) {
                memcpy(s + at, P->t[P->i].s, P->t[P->i].n);
                at += P->t[P->i].n;
            }
            v = json_stringn_nocheck(s, total);
        } else {
            v = t->kind == TK_INT ? json_integer(t->i) : json_real(t->f);
            P->i++;
        }
        if (!(n->lit = jinja_arena_keep(P->a, v)))
            return oom(P);
        *out = n;
        return 0;
    }
    if (t->kind == TK_NAME) {
        if (is_name(P, "true") || is_name(P, "True") || is_name(P, "false") ||
            is_name(P, "False") || is_name(P, "none") || is_name(P, "None")) {
            if (!(n = node(P, E_LITERAL)))
                return oom(P);
            char c = t->s[0];
            json_t *v = c == 't' || c == 'T' ? json_true() : c == 'f' || c == 'F' ? json_false()
                                                                                : json_null();
            if (!(n->lit = jinja_arena_keep(P->a, v)))
                return oom(P);
            P->i++;
            *out = n;
            return 0;
        }
        if (is_keyword(t))
            return syntax(P, "an expression");
        if (!(n = node(P, E_NAME)) || !(n->s = take_name(P)))
            return oom(P);
        *out = n;
        return 0;
    }
    if (is_op(P, "(")) {
        if (!(n = node(P, E_TUPLE)))
            return oom(P);
        P->i++;
        kids k = {0};
        int comma = 0;
        while (!is_op(P, ")")) {
            jinja_node *v;
            if (expr(P, &v) || add_kid(P, &k, v))
                return -1;
            if (accept_op(P, ","))
                comma = 1;
            else if (!is_op(P, ")"))
                return syntax(P, "',' or ')'");
        }
        P->i++;
        if (k.n == 1 && !comma) { /* parentheses, not a tuple */
            *out = k.p[0];
            return 0;
        }
        set_kids(n, &k);
        *out = n;
        return 0;
    }
    if (is_op(P, "[")) {
        if (!(n = node(P, E_LIST)))
            return oom(P);
        P->i++;
        kids k = {0};
        while (!is_op(P, "]")) {
            jinja_node *v;
            if (expr(P, &v) || add_kid(P, &k, v))
                return -1;
            if (!accept_op(P, ",") && !is_op(P, "]"))
                return syntax(P, "',' or ']'");
        }
        P->i++;
        set_kids(n, &k);
        *out = n;
        return 0;
    }
    if (is_op(P, "{")) {
        if (!(n = node(P, E_DICT)))
            return oom(P);
        P->i++;
        kids k = {0};
        while (!is_op(P, "}")) {
            jinja_node *key, *v;
            if (expr(P, &key) || expect_op(P, ":") || expr(P, &v) || add_kid(P, &k, key) ||
                add_kid(P, &k, v))
                return -1;
            if (!accept_op(P, ",") && !is_op(P, "}"))
                return syntax(P, "',' or '}'");
        }
        P->i++;
        set_kids(n, &k);
        *out = n;
        return 0;
    }
    return syntax(P, "an expression");
}

/* [key] or [a:b:c] after an object */
static int subscript(parser *P, jinja_node *obj, jinja_node **out)
{
    jinja_node *n = node(P, E_ITEM);
    if (!n)
        return oom(P);
    P->i++; /* [ */
    jinja_node *part[3] = {NULL, NULL, NULL};
    int colons = 0;
    for (;;) {
        if (is_op(P, "]"))
            break;
        if (accept_op(P, ":")) {
            if (++colons > 2)
                return syntax(P, "']' (a slice has at most two ':')");
            continue;
        }
        if (part[colons])
            return syntax(P, "':' or ']'");
        if (expr(P, &part[colons]))
            return -1;
    }
    P->i++;
    n->a = obj;
    if (colons == 0) {
        if (!part[0])
            return syntax(P, "an index inside []");
        n->b = part[0];
    } else {
        n->kind = E_SLICE;
        jinja_node **k = jinja_arena_alloc(P->a, 3 * sizeof *k);
        if (!k)
            return oom(P);
        memcpy(k, part, sizeof part);
        n->kids = k;
        n->nkids = 3;
    }
    *out = n;
    return 0;
}

static int postfix(parser *P, jinja_node **io)
{
    for (;;) {
        if (is_op(P, ".")) {
            jinja_node *n = node(P, E_ATTR);
            if (!n)
                return oom(P);
            P->i++;
            if (cur(P)->kind == TK_INT) { /* x.0 is x[0] */
                n->kind = E_ITEM;
                if (!(n->b = node(P, E_LITERAL)) ||
                    !(n->b->lit = jinja_arena_keep(P->a, json_integer(cur(P)->i))))
                    return oom(P);
                P->i++;
            } else if (cur(P)->kind != TK_NAME) {
                return syntax(P, "an attribute name after '.'");
            } else if (!(n->s = take_name(P))) {
                return oom(P);
            }
            n->a = *io;
            *io = n;
        } else if (is_op(P, "[")) {
            if (subscript(P, *io, io))
                return -1;
        } else if (is_op(P, "(")) {
            jinja_node *n = node(P, E_CALL);
            kids k = {0};
            if (!n)
                return oom(P);
            if (call_args(P, &k))
                return -1;
            set_kids(n, &k);
            n->a = *io;
            *io = n;
        } else {
            return 0;
        }
    }
}

/* |filter(args) and `is [not] test [arg]` after an operand */
static int filters_and_tests(parser *P, jinja_node **io)
{
    for (;;) {
        if (is_op(P, "|")) {
            jinja_node *n = node(P, E_FILTER);
            if (!n)
                return oom(P);
            P->i++;
            if (filter_name(P, &n->s))
                return -1;
            if (is_op(P, "(")) {
                kids k = {0};
                if (call_args(P, &k))
                    return -1;
                set_kids(n, &k);
            }
            n->a = *io;
            *io = n;
        } else if (is_name(P, "is")) {
            jinja_node *n = node(P, E_TEST);
            if (!n)
                return oom(P);
            P->i++;
            if (accept_name(P, "not"))
                n->op = 1;
            if (is_name(P, "none") || is_name(P, "true") || is_name(P, "false")) {
                if (!(n->s = take_name(P)))
                    return oom(P);
            } else if (filter_name(P, &n->s)) {
                return -1;
            }
            const jinja_token *t = cur(P);
            kids k = {0};
            if (is_op(P, "(")) {
                if (call_args(P, &k))
                    return -1;
            } else if ((t->kind == TK_STRING || t->kind == TK_INT || t->kind == TK_FLOAT ||
                        (t->kind == TK_NAME && !is_keyword(t))) ) {
                jinja_node *arg;
                if (unary(P, &arg, 0) || add_kid(P, &k, arg))
                    return -1;
            }
            set_kids(n, &k);
            n->a = *io;
            *io = n;
        } else {
            return 0;
        }
    }
}

static int unary(parser *P, jinja_node **out, int with_filters)
{
    if (enter(P))
        return -1;
    int rc;
    if (is_op(P, "-") || is_op(P, "+")) {
        jinja_node *n = node(P, E_UNARY);
        if (!n)
            return oom(P);
        n->op = cur(P)->s[0];
        P->i++;
        rc = unary(P, &n->a, 0);
        *out = n;
    } else {
        rc = primary(P, out);
        if (rc == 0)
            rc = postfix(P, out);
    }
    if (rc == 0 && with_filters)
        rc = filters_and_tests(P, out);
    P->depth--;
    return rc;
}

static int binary(parser *P, jinja_node **out, int level);

/* Binary levels, lowest first; each is left-associative but ** */
static const struct {
    const char *ops[4];
    int codes[4];
} levels[] = {
    {{"+", "-"}, {OP_ADD, OP_SUB}},
    {{"~"}, {OP_CONCAT}},
    {{"*", "/", "//", "%"}, {OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD}},
    {{"**"}, {OP_POW}},
};
#define NLEVELS 4

static int binary(parser *P, jinja_node **out, int level)
{
    if (level == NLEVELS)
        return unary(P, out, 1);
    if (enter(P) || binary(P, out, level + 1))
        return -1;
    for (;;) {
        int code = 0;
        for (int k = 0; k < 4 && levels[level].ops[k]; k++)
            if (is_op(P, levels[level].ops[k]))
                code = levels[level].codes[k];
        if (!code)
            break;
        jinja_node *n = node(P, E_BINARY);
        if (!n)
            return oom(P);
        P->i++;
        n->op = code;
        n->a = *out;
        if (binary(P, &n->b, level + 1))
            return -1;
        *out = n;
    }
    P->depth--;
    return 0;
}

static int compare(parser *P, jinja_node **out)
{
    if (binary(P, out, 0))
        return -1;
    for (;;) {
        static const struct {
            const char *op;
            int code;
        } cmp[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"<=", OP_LE}, {">=", OP_GE},
                   {"<", OP_LT},  {">", OP_GT}};
        int code = 0;
        for (size_t k = 0; k < sizeof cmp / sizeof cmp[0]; k++)
            if (is_op(P, cmp[k].op))
                code = cmp[k].code;
        if (code) {
            P->i++;
        } else if (is_name(P, "in")) {
            P->i++;
            code = OP_IN;
        } else if (is_name(P, "not") && P->i + 1 < P->n && P->t[P->i + 1].kind == TK_NAME &&
                   P->t[P->i + 1].n == 2 && memcmp(P->t[P->i + 1].s, "in", 2) == 0) {
            P->i += 2;
            code = OP_NOT_IN;
        } else {
            return 0;
        }
        jinja_node *n = node(P, E_BINARY);
        if (!n)
            return oom(P);
        n->op = code;
        n->a = *out;
        if (binary(P, &n->b, 0))
            return -1;
        *out = n;
    }
}

static int not_expr(parser *P, jinja_node **out)
{
    if (is_name(P, "not")) {
        jinja_node *n = node(P, E_UNARY);
        if (!n)
            return oom(P);
        P->i++;
        n->op = 'n';
        if (enter(P) || not_expr(P, &n->a))
            return -1;
        P->depth--;
        *out = n;
        return 0;
    }
    return compare(P, out);
}

static int and_or(parser *P, jinja_node **out, int is_or)
{
    if (is_or ? and_or(P, out, 0) : not_expr(P, out))
        return -1;
    while (is_name(P, is_or ? "or" : "and")) {
        jinja_node *n = node(P, E_BINARY);
        if (!n)
            return oom(P);
        P->i++;
        n->op = is_or ? OP_OR : OP_AND;
        n->a = *out;
        if (is_or ? and_or(P, &n->b, 0) : not_expr(P, &n->b))
            return -1;
        *out = n;
    }
    return 0;
}

static int expr_noternary(parser *P, jinja_node **out)
{
    return and_or(P, out, 1);
}

static int expr(parser *P, jinja_node **out)
{
    if (enter(P) || expr_noternary(P, out))
        return -1;
    while (is_name(P, "if")) {
        jinja_node *n = node(P, E_COND);
        if (!n)
            return oom(P);
        P->i++;
        n->b = *out;
        if (expr_noternary(P, &n->a))
            return -1;
        if (accept_name(P, "else") && expr(P, &n->c))
            return -1;
        *out = n;
    }
    P->depth--;
    return 0;
}

/* ---- statements ------------------------------------------------------------ */

static int body(parser *P, jinja_node **out, const char *const *ends);

static int end_tag(parser *P)
{
    if (cur(P)->kind != TK_BLOCK_END)
        return syntax(P, "'%}'");
    P->i++;
    return 0;
}

static int name_target(parser *P, const char **s)
{
    if (cur(P)->kind != TK_NAME || is_keyword(cur(P)))
        return syntax(P, "a variable name");
    if (!(*s = take_name(P)))
        return oom(P);
    return 0;
}

static int stmt_if(parser *P, jinja_node **out)
{
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    jinja_node *n = node(P, N_IF);
    if (!n)
        return oom(P);
    if (enter(P)) /* an elif chain recurses */
        return -1;
    P->i++; /* if / elif */
    if (expr(P, &n->a) || end_tag(P) || body(P, &n->b, ends))
        return -1;
    /* body() stopped before `elif`, `else` or `endif`, after the '{%' */
    if (is_name(P, "elif")) {
        if (stmt_if(P, &n->c))
            return -1;
        *out = n;
        P->depth--;
        return 0; /* the innermost elif consumed endif */
    }
    if (accept_name(P, "else")) {
        static const char *const endif[] = {"endif", NULL};
        if (end_tag(P) || body(P, &n->c, endif))
            return -1;
    }
    if (!accept_name(P, "endif"))
        return syntax(P, "'endif'");
    if (end_tag(P))
        return -1;
    *out = n;
    P->depth--;
    return 0;
}

static int stmt_for(parser *P, jinja_node **out)
{
    static const char *const ends[] = {"else", "endfor", NULL};
    static const char *const endfor[] = {"endfor", NULL};
    jinja_node *n = node(P, N_FOR);
    if (!n)
        return oom(P);
    P->i++;
    int paren = accept_op(P, "(");
    if (name_target(P, &n->s))
        return -1;
    if (accept_op(P, ",") && name_target(P, &n->s2))
        return -1;
    if (paren && expect_op(P, ")"))
        return -1;
    if (!accept_name(P, "in"))
        return syntax(P, "'in'");
    if (expr_noternary(P, &n->a))
        return -1;
    if (accept_name(P, "if") && expr_noternary(P, &n->b))
        return -1;
    accept_name(P, "recursive"); /* accepted, not supported: loop(...) is not callable */
    jinja_node *b;
    if (end_tag(P) || body(P, &b, ends))
        return -1;
    n->kids = b->kids;
    n->nkids = b->nkids;
    if (accept_name(P, "else") && (end_tag(P) || body(P, &n->c, endfor)))
        return -1;
    if (!accept_name(P, "endfor"))
        return syntax(P, "'endfor'");
    if (end_tag(P))
        return -1;
    *out = n;
    return 0;
}

static int stmt_set(parser *P, jinja_node **out)
{
    static const char *const endset[] = {"endset", NULL};
    jinja_node *n = node(P, N_SET);
    if (!n)
        return oom(P);
    P->i++;
    if (name_target(P, &n->s))
        return -1;
    if (accept_op(P, ".")) {
        n->kind = N_SET_ATTR;
        if (name_target(P, &n->s2))
            return -1;
    }
    if (n->kind == N_SET && cur(P)->kind == TK_BLOCK_END) { /* {% set x %}...{% endset %} */
        if (end_tag(P) || body(P, &n->c, endset) || !accept_name(P, "endset"))
            return -1;
        if (end_tag(P))
            return -1;
        *out = n;
        return 0;
    }
    if (expect_op(P, "=") || expr(P, &n->a))
        return -1;
    if (is_op(P, ",")) { /* a = 1, 2 is a tuple */
        jinja_node *t = node(P, E_TUPLE);
        kids k = {0};
        if (!t || add_kid(P, &k, n->a))
            return oom(P);
        while (accept_op(P, ",")) {
            jinja_node *v;
            if (expr(P, &v) || add_kid(P, &k, v))
                return -1;
        }
        set_kids(t, &k);
        n->a = t;
    }
    if (end_tag(P))
        return -1;
    *out = n;
    return 0;
}

static int stmt_macro(parser *P, jinja_node **out)
{
    static const char *const endmacro[] = {"endmacro", NULL};
    jinja_node *n = node(P, N_MACRO);
    kids k = {0};
    if (!n)
        return oom(P);
    P->i++;
    if (name_target(P, &n->s) || expect_op(P, "("))
        return -1;
    while (!is_op(P, ")")) {
        jinja_node *p = node(P, E_NAME);
        if (!p || name_target(P, &p->s))
            return -1;
        if (accept_op(P, "=")) {
            p->kind = E_KWARG;
            if (expr(P, &p->a))
                return -1;
        }
        if (add_kid(P, &k, p))
            return -1;
        if (!accept_op(P, ",") && !is_op(P, ")"))
            return syntax(P, "',' or ')' in the macro's parameters");
    }
    P->i++;
    set_kids(n, &k);
    if (end_tag(P) || body(P, &n->c, endmacro) || !accept_name(P, "endmacro"))
        return -1;
    if (cur(P)->kind == TK_NAME) /* {% endmacro name %} */
        P->i++;
    if (end_tag(P))
        return -1;
    *out = n;
    return 0;
}

/* {% generation %}...{% endgeneration %} (transformers' AssistantTracker)
 * renders its body. */
static int stmt_generation(parser *P, jinja_node **out)
{
    static const char *const end[] = {"endgeneration", NULL};
    P->i++;
    if (end_tag(P) || body(P, out, end) || !accept_name(P, "endgeneration"))
        return -1;
    return end_tag(P);
}

/* Statements up to the end of input (ends NULL) or up to a tag whose first
 * word is in ends, leaving that word current. */
static int body(parser *P, jinja_node **out, const char *const *ends)
{
    jinja_node *b = node(P, N_BODY);
    kids k = {0};
    if (!b)
        return oom(P);
    if (enter(P))
        return -1;
    for (;;) {
        const jinja_token *t = cur(P);
        jinja_node *s = NULL;
        if (t->kind == TK_EOF) {
            if (ends) {
                int last = 0;
                while (ends[last + 1])
                    last++;
                char what[64];
                snprintf(what, sizeof what, "'{%% %s %%}' to close the block", ends[last]);
                return syntax(P, what);
            }
            break;
        }
        if (t->kind == TK_TEXT) {
            if (!(s = node(P, N_TEXT)))
                return oom(P);
            s->s = t->s;
            s->n = t->n;
            P->i++;
        } else if (t->kind == TK_VAR_BEGIN) {
            if (!(s = node(P, N_OUTPUT)))
                return oom(P);
            P->i++;
            if (expr(P, &s->a))
                return -1;
            if (cur(P)->kind != TK_VAR_END)
                return syntax(P, "'}}'");
            P->i++;
        } else if (t->kind == TK_BLOCK_BEGIN) {
            P->i++;
            if (ends)
                for (int e = 0; ends[e]; e++)
                    if (is_name(P, ends[e])) {
                        set_kids(b, &k);
                        *out = b;
                        P->depth--;
                        return 0;
                    }
            int rc;
            if (is_name(P, "if")) {
                rc = stmt_if(P, &s);
            } else if (is_name(P, "for")) {
                rc = stmt_for(P, &s);
            } else if (is_name(P, "set")) {
                rc = stmt_set(P, &s);
            } else if (is_name(P, "macro")) {
                rc = stmt_macro(P, &s);
            } else if (is_name(P, "generation")) {
                rc = stmt_generation(P, &s);
            } else if (is_name(P, "break") || is_name(P, "continue")) {
                if (!(s = node(P, is_name(P, "break") ? N_BREAK : N_CONTINUE)))
                    return oom(P);
                P->i++;
                rc = end_tag(P);
            } else {
                char got[64];
                describe(cur(P), got, sizeof got);
                return tf_fail(P->err, P->errn,
                               "template %d:%d: unknown or misplaced tag %s; the tags are if, "
                               "elif, else, for, set, macro, generation, break and continue%s",
                               cur(P)->line, cur(P)->col, got,
                               ends ? "" : " (an end tag here closes no block)");
            }
            if (rc)
                return -1;
        } else {
            return syntax(P, "text or a tag");
        }
        if (add_kid(P, &k, s))
            return -1;
    }
    set_kids(b, &k);
    *out = b;
    P->depth--;
    return 0;
}

int jinja_parse_tokens(jinja_arena *a, const jinja_token *toks, size_t ntoks, jinja_node **root,
                       char *err, size_t errn)
{
    parser P = {.a = a, .t = toks, .n = ntoks, .err = err, .errn = errn};
    return body(&P, root, NULL);
}
