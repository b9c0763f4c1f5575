/* equiv.c: the comparison pipeline of two answers (see equiv.h). */
#include "equiv.h"

#include <stdlib.h>
#include <string.h>

#include <tern/rng.h>

#include "ascii.h"
#include "compare.h"
#include "expr.h"
#include "latex.h"
#include "number.h"

/* Structural comparisons one verdict may make: enough for sets of hundreds of
 * elements, and a bound on the quadratic matching of hostile ones. */
#define MATH_BUDGET 200000

/* Text equality with each run of whitespace read as one space (both trimmed). */
static int same_text(const char *a, size_t al, const char *b, size_t bl)
{
    size_t i = 0, j = 0;
    while (i < al && j < bl) {
        if (math_is_space(a[i]) && math_is_space(b[j])) {
            while (i < al && math_is_space(a[i]))
                i++;
            while (j < bl && math_is_space(b[j]))
                j++;
            continue;
        }
        if (a[i++] != b[j++])
            return 0;
    }
    return i == al && j == bl;
}

/* Text answers ("Yes", "\text{no solution}") match ignoring case and braces. */
static int same_words(const math_tok *a, size_t na, const char *sa, const math_tok *b, size_t nb,
                      const char *sb)
{
    size_t i = 0, j = 0;
    for (;;) {
        while (i < na && a[i].kind == TK_CHAR && (a[i].c == '{' || a[i].c == '}'))
            i++;
        while (j < nb && b[j].kind == TK_CHAR && (b[j].c == '{' || b[j].c == '}'))
            j++;
        if (i == na || j == nb)
            return i == na && j == nb;
        const math_tok *x = &a[i++], *y = &b[j++];
        if (x->kind == TK_CHAR && y->kind == TK_CHAR) {
            if (math_lower((char)x->c) != math_lower((char)y->c))
                return 0;
        } else if (!math_tokens_equal(x, 1, sa, y, 1, sb)) {
            return 0;
        }
    }
}

/* Values of each variable at each point: a deterministic function of the
 * variable's name, so both answers (and every call) see the same values and
 * the plugin needs no state. Magnitudes spread over [0.1, 30) so that a
 * domain like ln(x - 5) has points in it; the first `positive` points are
 * positive, the next one negative, the rest have random signs (|x| and x
 * differ there). */
static void assign_points(math_ws *ws, int points, int positive)
{
    static const double lo[4] = {0.1, 1, 3, 10}, hi[4] = {1, 3, 10, 30};
    for (size_t v = 0; v < ws->nvars; v++) {
        uint64_t h = 1469598103934665603ull; /* FNV-1a of the name */
        for (const char *s = ws->var_name[v]; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
        tern_rng r;
        tern_rng_seed(&r, h ^ 0x6d6174685f726577ull);
        for (int k = 0; k < points; k++) {
            double u = tern_rng_uniform(&r), mag = lo[k % 4] + u * (hi[k % 4] - lo[k % 4]);
            /* the first mixed point makes every variable negative */
            int neg = k == positive || (k > positive && (tern_rng_u64(&r) & 1));
            ws->var_val[v][k] = neg ? -mag : mag;
        }
    }
}

static const char *note_of(unsigned seen)
{
    if (seen & SEEN_PERCENT)
        return "as percent";
    if (seen & SEEN_EQUATION)
        return "as equations";
    if (seen & SEEN_POINTS)
        return "at random points";
    if (seen & SEEN_SETS)
        return "in any order";
    if (seen & SEEN_NUMERIC)
        return "numerically";
    return "";
}

/* A number as written: a literal, a signed one, or a fraction of them. */
static int literal(const math_ws *ws, int32_t i)
{
    const math_node *n = &ws->node[i];
    if (n->op == N_NEG)
        n = &ws->node[n->a];
    if (n->op == N_DIV)
        return literal(ws, n->a) && literal(ws, n->b);
    return n->op == N_NUM;
}

/* A mixed number: an integer, then a fraction of literals (3\frac{1}{2}). */
static int mixed(const math_ws *ws, const math_node *n)
{
    const math_node *w = &ws->node[n->a], *f = &ws->node[n->b];
    if (w->op == N_NEG)
        w = &ws->node[w->a];
    return w->op == N_NUM && f->op == N_DIV && ws->node[f->a].op == N_NUM &&
           ws->node[f->b].op == N_NUM;
}

/* Whether the tree at i adds, subtracts or multiplies written numbers:
 * 37+45, 3*4, 2(3). A mixed number is a number; powers and roots (2^{10},
 * \sqrt{8}) are closed forms, compared by value. */
static int undone_arithmetic(const math_ws *ws, int32_t i)
{
    if (i < 0)
        return 0;
    const math_node *n = &ws->node[i];
    switch (n->op) {
    case N_NUM: case N_VAR: case N_PI: case N_E: case N_INF:
        return 0;
    case N_ADD: case N_SUB: case N_MUL:
        if (literal(ws, n->a) && literal(ws, n->b) && (n->op != N_ADD || !mixed(ws, n)))
            return 1;
        break;
    case N_TUPLE: case N_SET: case N_LIST: case N_UNION:
        for (int32_t c = n->a; c >= 0; c = ws->node[c].next)
            if (undone_arithmetic(ws, c))
                return 1;
        return 0;
    default:
        break;
    }
    return undone_arithmetic(ws, n->a) ||
           (n->op != N_FUNC && n->op != N_NEG && n->op != N_SQRT && n->op != N_PCT &&
            n->op != N_ABS && n->op != N_FACT && n->op != N_PMU && n->op != N_MPU &&
            undone_arithmetic(ws, n->b));
}

/* Steps 4 and 5 of equiv.h, on answers of at most MATH_EXPR_MAX bytes. */
static int compare_parsed(const char *a, size_t alen, const char *b, size_t blen,
                          const math_opts *o, math_verdict *v)
{
    size_t tcap = 2 * (alen + blen) + 4, ncap = 4 * tcap + 64;
    math_tok *tok = malloc(tcap * sizeof *tok);
    math_ws *ws = malloc(sizeof *ws);
    math_node *node = malloc(ncap * sizeof *node);
    math_numlit *num = malloc(tcap * sizeof *num);
    int32_t *slot = NULL;
    math_cmp c = {0};
    int rc = -1;
    if (!tok || !ws || !node || !num)
        goto out;
    size_t na = math_lex(a, alen, tok, 2 * alen + 2);
    math_tok *tb = tok + na;
    size_t nb = math_lex(b, blen, tb, 2 * blen + 2);
    rc = 0;
    if (math_tokens_equal(tok, na, a, tb, nb, b)) {
        v->equal = 1;
        v->note = "same text";
        goto out;
    }
    if (math_tokens_have_word(tok, na) || math_tokens_have_word(tb, nb)) {
        v->equal = same_words(tok, na, a, tb, nb, b);
        v->note = v->equal ? "same text" : "text answer";
        goto out;
    }
    *ws = (math_ws){.node = node, .node_cap = ncap, .num = num, .num_cap = tcap};
    const char *why_a = "", *why_b = "";
    int ra = math_parse(ws, tok, na, &why_a), rb = ra < 0 ? -1 : math_parse(ws, tb, nb, &why_b);
    if (ra < 0 || rb < 0) {
        v->note = "cannot parse";
        v->why = ra < 0 ? why_a : why_b;
        goto out;
    }
    math_follow_gold_form(ws, &ra, &rb); /* "3 + 3 = 6" against 6 */
    /* A gold that is a number wants a number: restating the question
     * ("37+45" for 82) must not earn the reward. */
    if (literal(ws, rb) && undone_arithmetic(ws, ra)) {
        v->note = "arithmetic left undone";
        goto out;
    }
    int points = ws->nvars ? o->points : 1;
    if (points < 1)
        points = 1;
    if (points > MATH_MAX_POINTS)
        points = MATH_MAX_POINTS;
    int positive = (points + 1) / 2;
    assign_points(ws, points, positive);
    slot = malloc(ws->nnode * 3 * sizeof *slot);
    if (!slot) {
        rc = -1;
        goto out;
    }
    memset(slot, 0xFF, ws->nnode * 3 * sizeof *slot); /* -1: no fingerprint yet */
    c = (math_cmp){.ws = ws,
                   .tol = o->tolerance,
                   .points = points,
                   .positive = positive,
                   .percent_either = o->percent_either,
                   .slot = slot,
                   .budget = MATH_BUDGET};
    v->equal = math_values_equal(&c, ra, rb);
    if (c.oom) {
        v->equal = 0;
        rc = -1;
    } else if (v->equal)
        v->note = note_of(c.seen);
    else if (c.over)
        v->note = "too complex";
    else if (c.seen & SEEN_UNDEFINED)
        v->note = "undefined value";
    else if (c.seen & SEEN_HUGE)
        v->note = "too large to evaluate";
out:
    free(c.fp);
    free(slot);
    free(num);
    free(node);
    free(ws);
    free(tok);
    return rc;
}

/* Where the text after s's last '=' outside braces starts (not one of <=,
 * >=, !=), or 0 when there is none. */
static size_t after_last_equals(const char *s, size_t n)
{
    size_t at = 0;
    long depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '{')
            depth++;
        else if (s[i] == '}')
            depth--;
        else if (s[i] == '=' && depth == 0 &&
                 !(i > 0 && (s[i - 1] == '<' || s[i - 1] == '>' || s[i - 1] == '!')))
            at = i + 1;
    }
    return at;
}

int math_equivalent(const char *a, size_t alen, const char *b, size_t blen, const math_opts *o,
                    math_verdict *v)
{
    *v = (math_verdict){.equal = 0, .note = "", .why = NULL};
    math_answer_clean(&a, &alen);
    math_answer_clean(&b, &blen);
    if (!alen || !blen) {
        v->note = "empty answer";
        return 0;
    }
    int r = math_numbers_compare(a, alen, b, blen);
    if (r >= 0) {
        v->equal = r;
        return 0;
    }
    if (same_text(a, alen, b, blen)) {
        v->equal = 1;
        v->note = "same text";
        return 0;
    }
    if (alen > MATH_EXPR_MAX || blen > MATH_EXPR_MAX) {
        v->note = "too long to parse";
        return 0;
    }
    int rc = compare_parsed(a, alen, b, blen, o, v);
    /* An equation whose left side does not parse ("\sum_{k=0}^{4} k = 10")
     * against an answer without one: its right side, as written. */
    size_t ea = after_last_equals(a, alen), eb = after_last_equals(b, blen);
    if (rc == 0 && !v->equal && v->why && (ea > 0) != (eb > 0)) {
        const char *t = ea ? a + ea : b + eb;
        size_t tn = ea ? alen - ea : blen - eb;
        math_verdict w;
        rc = ea ? math_equivalent(t, tn, b, blen, o, &w) : math_equivalent(a, alen, t, tn, o, &w);
        /* its verdict when it is equal, or refused as arithmetic left undone
         * (a policy that depends on which side is the gold) */
        if (rc == 0 && (w.equal || strcmp(w.note, "arithmetic left undone") == 0))
            *v = w;
    }
    if (rc < 0)
        *v = (math_verdict){.equal = 0, .note = "out of memory", .why = NULL};
    return rc;
}
