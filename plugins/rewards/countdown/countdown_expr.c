/* countdown_expr.c: a recursive-descent parser over the grammar of
 * countdown_expr.h that evaluates as it goes, in exact fractions.
 *
 * Fractions are int64 num/den kept in lowest terms; each operation is done
 * in 128 bits and reduced, and a result that does not fit 64 bits stops the
 * evaluation (COUNTDOWN_EXPR_TOO_LARGE) rather than wrapping. */
#include "countdown_expr.h"

#include <string.h>

typedef struct frac {
    int64_t num, den;
} frac;

typedef struct parser {
    const char *s;
    size_t n, pos;
    int depth;
    countdown_expr *out;
} parser;

static __int128 gcd128(__int128 a, __int128 b)
{
    if (a < 0)
        a = -a;
    if (b < 0)
        b = -b;
    while (b) {
        __int128 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* num/den (den != 0) reduced into *f: 0, or -1 when it does not fit. */
static int make_frac(__int128 num, __int128 den, frac *f)
{
    if (den < 0) {
        num = -num;
        den = -den;
    }
    __int128 g = gcd128(num, den);
    if (g > 1) {
        num /= g;
        den /= g;
    }
    if (num > INT64_MAX || num < -INT64_MAX || den > INT64_MAX)
        return -1;
    f->num = (int64_t)num;
    f->den = (int64_t)den;
    return 0;
}

/* a op b into *r: the status. 128-bit products of 63-bit values cannot
 * overflow; the sum of two of them cannot either. */
static countdown_expr_status apply(char op, frac a, frac b, frac *r)
{
    __int128 an = a.num, ad = a.den, bn = b.num, bd = b.den, num, den;
    switch (op) {
    case '+': num = an * bd + bn * ad; den = ad * bd; break;
    case '-': num = an * bd - bn * ad; den = ad * bd; break;
    case '*': num = an * bn; den = ad * bd; break;
    default: /* '/' */
        if (bn == 0)
            return COUNTDOWN_EXPR_DIV_ZERO;
        num = an * bd;
        den = ad * bn;
        break;
    }
    return make_frac(num, den, r) == 0 ? COUNTDOWN_EXPR_OK : COUNTDOWN_EXPR_TOO_LARGE;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void skip_space(parser *p)
{
    while (p->pos < p->n && is_space(p->s[p->pos]))
        p->pos++;
}

static countdown_expr_status syntax(parser *p)
{
    p->out->at = p->pos;
    return COUNTDOWN_EXPR_SYNTAX;
}

static countdown_expr_status parse_expr(parser *p, frac *v);

static countdown_expr_status parse_factor(parser *p, frac *v)
{
    skip_space(p);
    if (p->pos >= p->n)
        return syntax(p);
    char c = p->s[p->pos];
    if (c == '(') {
        if (++p->depth > COUNTDOWN_MAX_DEPTH)
            return COUNTDOWN_EXPR_TOO_DEEP;
        p->pos++;
        countdown_expr_status st = parse_expr(p, v);
        if (st != COUNTDOWN_EXPR_OK)
            return st;
        skip_space(p);
        if (p->pos >= p->n || p->s[p->pos] != ')')
            return syntax(p);
        p->pos++;
        p->depth--;
        return COUNTDOWN_EXPR_OK;
    }
    if (c < '0' || c > '9')
        return syntax(p);
    int64_t x = 0;
    int digits = 0;
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        if (++digits > 18)
            return COUNTDOWN_EXPR_TOO_LARGE; /* 10^18 - 1 still fits */
        x = x * 10 + (p->s[p->pos++] - '0');
    }
    countdown_expr *o = p->out;
    if (o->n_numbers == COUNTDOWN_MAX_NUMBERS)
        return COUNTDOWN_EXPR_TOO_MANY;
    o->numbers[o->n_numbers++] = x;
    *v = (frac){x, 1};
    return COUNTDOWN_EXPR_OK;
}

static countdown_expr_status parse_term(parser *p, frac *v)
{
    countdown_expr_status st = parse_factor(p, v);
    for (;;) {
        if (st != COUNTDOWN_EXPR_OK)
            return st;
        skip_space(p);
        if (p->pos >= p->n || (p->s[p->pos] != '*' && p->s[p->pos] != '/'))
            return COUNTDOWN_EXPR_OK;
        char op = p->s[p->pos++];
        frac rhs;
        st = parse_factor(p, &rhs);
        if (st == COUNTDOWN_EXPR_OK)
            st = apply(op, *v, rhs, v);
    }
}

static countdown_expr_status parse_expr(parser *p, frac *v)
{
    countdown_expr_status st = parse_term(p, v);
    for (;;) {
        if (st != COUNTDOWN_EXPR_OK)
            return st;
        skip_space(p);
        if (p->pos >= p->n || (p->s[p->pos] != '+' && p->s[p->pos] != '-'))
            return COUNTDOWN_EXPR_OK;
        char op = p->s[p->pos++];
        frac rhs;
        st = parse_term(p, &rhs);
        if (st == COUNTDOWN_EXPR_OK)
            st = apply(op, *v, rhs, v);
    }
}

countdown_expr_status countdown_expr_eval(const char *s, size_t n, countdown_expr *out)
{
    memset(out, 0, sizeof *out);
    parser p = {.s = s, .n = s ? n : 0, .out = out};
    skip_space(&p);
    if (p.pos == p.n)
        return out->status = COUNTDOWN_EXPR_EMPTY;
    frac v = {0, 1};
    countdown_expr_status st = parse_expr(&p, &v);
    if (st == COUNTDOWN_EXPR_OK) {
        skip_space(&p);
        if (p.pos < p.n)
            st = syntax(&p); /* text after a whole expression, or an unmatched ')' */
    }
    if (st == COUNTDOWN_EXPR_OK) {
        out->num = v.num;
        out->den = v.den;
    }
    return out->status = st;
}

const char *countdown_expr_status_text(countdown_expr_status st)
{
    switch (st) {
    case COUNTDOWN_EXPR_OK: return "an expression";
    case COUNTDOWN_EXPR_EMPTY: return "empty";
    case COUNTDOWN_EXPR_SYNTAX: return "not an expression";
    case COUNTDOWN_EXPR_TOO_MANY: return "more than 32 numbers";
    case COUNTDOWN_EXPR_TOO_DEEP: return "parentheses nested more than 32 deep";
    case COUNTDOWN_EXPR_DIV_ZERO: return "a division by zero";
    case COUNTDOWN_EXPR_TOO_LARGE: return "a number past 64 bits";
    }
    return "unknown";
}
