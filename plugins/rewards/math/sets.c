/* sets.c: the structure of answers: lists and sets of answers in any order,
 * tuples and intervals in order, unions, equations and inequalities (see
 * compare.h and expr.h). Scalars are left to scalar.c. */
#include <math.h>

#include "compare.h"

static int eq(math_cmp *c, int a, int pa, int b, int pb);

static int is_scalar(const math_node *nd) { return nd->op < N_TUPLE; }

/* Whether a value is a collection of answers matched in any order: a set, a
 * bare list, a union, or a scalar with \pm in it read with no sign yet
 * ("1 \pm 2" is the two answers 3 and -1). */
static int order_free(const math_cmp *c, int id, int pm)
{
    const math_node *nd = &c->ws->node[id];
    return nd->op == N_SET || nd->op == N_LIST || nd->op == N_UNION ||
           (is_scalar(nd) && (nd->flags & F_PM) && pm == 0);
}

/* The elements of a value seen as a collection; anything else is a
 * collection of itself. */
typedef struct iter {
    const math_ws *ws;
    int children; /* walk the linked children */
    int cur; /* the node at hand, -1 when done */
    int phase; /* for a \pm scalar: 0 gives +1, 1 gives -1 */
    int pm; /* the sign a single element keeps */
} iter;

static void iter_init(iter *it, const math_cmp *c, int id, int pm)
{
    const math_node *nd = &c->ws->node[id];
    it->ws = c->ws;
    it->children = nd->op == N_SET || nd->op == N_LIST || nd->op == N_UNION;
    it->cur = it->children ? nd->a : id;
    it->phase = 0;
    it->pm = pm;
}

static int iter_next(iter *it, int *id, int *pm)
{
    while (it->cur >= 0) {
        const math_node *nd = &it->ws->node[it->cur];
        int expand = is_scalar(nd) && (nd->flags & F_PM) && (it->children || it->pm == 0);
        *id = it->cur;
        if (expand && it->phase == 0) {
            it->phase = 1;
            *pm = 1;
            return 1;
        }
        *pm = expand ? -1 : it->children ? 0 : it->pm;
        it->phase = 0;
        it->cur = it->children ? nd->next : -1;
        return 1;
    }
    return 0;
}

/* Every element of a has an equal in b. */
static int covered(math_cmp *c, int a, int pa, int b, int pb)
{
    iter x;
    int xi, xp;
    iter_init(&x, c, a, pa);
    while (iter_next(&x, &xi, &xp)) {
        iter y;
        int yi, yp, found = 0;
        iter_init(&y, c, b, pb);
        while (!found && iter_next(&y, &yi, &yp))
            found = eq(c, xi, xp, yi, yp);
        if (!found)
            return 0;
    }
    return 1;
}

/* Children of a and b equal one by one, in order. */
static int in_order(math_cmp *c, int a, int b)
{
    const math_ws *ws = c->ws;
    if (ws->node[a].count != ws->node[b].count)
        return 0;
    for (int x = ws->node[a].a, y = ws->node[b].a; x >= 0 && y >= 0;
         x = ws->node[x].next, y = ws->node[y].next)
        if (!eq(c, x, 0, y, 0))
            return 0;
    return 1;
}

/* The value of an equation's lhs - rhs at point k. */
static double side_gap(const math_fp *l, const math_fp *r, int k)
{
    return (l->var ? l->v[k] : l->v[0]) - (r->var ? r->v[k] : r->v[0]);
}

static int near_zero(double d, const math_fp *l, const math_fp *r, int k)
{
    double scale = fabs(l->var ? l->v[k] : l->v[0]) + fabs(r->var ? r->v[k] : r->v[0]);
    return fabs(d) <= 1e-9 * scale || fabs(d) <= 1e-12;
}

/* Two equations with variables are the same when lhs - rhs of one is a
 * constant non-zero multiple of the other's at every point: "2x + 2y = 6"
 * is "x + y = 3" is "3 = y + x". */
static int equations_equal(math_cmp *c, const math_node *na, const math_node *nb)
{
    int idx[4] = {math_fingerprint(c, na->a, 1), math_fingerprint(c, na->b, 1),
                  math_fingerprint(c, nb->a, 1), math_fingerprint(c, nb->b, 1)};
    for (int k = 0; k < 4; k++)
        if (idx[k] < 0)
            return 0;
    const math_fp *al = &c->fp[idx[0]], *ar = &c->fp[idx[1]];
    const math_fp *bl = &c->fp[idx[2]], *br = &c->fp[idx[3]];
    const math_fp *all[4] = {al, ar, bl, br};
    int vars = 0;
    for (int k = 0; k < 4; k++) {
        if (all[k]->kind == FP_UNDEF || all[k]->kind == FP_INF)
            return 0;
        if (all[k]->kind == FP_EXACT) /* exact values are in v[0] too */
            continue;
        vars |= all[k]->var;
    }
    if (!vars)
        return 0;
    double ratio = 0;
    int counted = 0;
    for (int k = 0; k < c->points; k++) {
        double da = side_gap(al, ar, k), db = side_gap(bl, br, k);
        if (!isfinite(da) || !isfinite(db)) {
            if (isfinite(da) != isfinite(db) && k < c->positive)
                return 0;
            continue;
        }
        int za = near_zero(da, al, ar, k), zb = near_zero(db, bl, br, k);
        if (za || zb) {
            if (za != zb)
                return 0;
            continue; /* the point lies on both curves */
        }
        double r = da / db;
        if (counted++ == 0)
            ratio = r;
        else if (!math_close(r, ratio, c->tol))
            return 0;
    }
    return counted >= 2;
}

static int relations_equal(math_cmp *c, int a, int b)
{
    const math_node *na = &c->ws->node[a], *nb = &c->ws->node[b];
    char oa = (char)na->sub, ob = (char)nb->sub;
    char mirrored = ob == '<' ? '>' : ob == '>' ? '<' : ob == 'l' ? 'g' : ob == 'g' ? 'l' : ob;
    if (oa == ob && eq(c, na->a, 0, nb->a, 0) && eq(c, na->b, 0, nb->b, 0))
        return 1;
    if (oa == mirrored && eq(c, na->a, 0, nb->b, 0) && eq(c, na->b, 0, nb->a, 0))
        return 1;
    if (oa == '=' && ob == '=' && is_scalar(&c->ws->node[na->a]) &&
        is_scalar(&c->ws->node[na->b]) && is_scalar(&c->ws->node[nb->a]) &&
        is_scalar(&c->ws->node[nb->b]) && equations_equal(c, na, nb)) {
        c->seen |= SEEN_EQUATION;
        return 1;
    }
    return 0;
}

static int eq(math_cmp *c, int a, int pa, int b, int pb)
{
    if (--c->budget < 0) {
        c->over = 1;
        return 0;
    }
    if (c->oom)
        return 0;
    const math_ws *ws = c->ws;
    const math_node *na = &ws->node[a], *nb = &ws->node[b];
    /* A bare list against a tuple in parentheses: "1, 2" is "(1, 2)". */
    if ((na->op == N_LIST && nb->op == N_TUPLE && nb->sub == 0) ||
        (nb->op == N_LIST && na->op == N_TUPLE && na->sub == 0))
        return in_order(c, a, b);
    if (order_free(c, a, pa) || order_free(c, b, pb)) {
        int r = covered(c, a, pa, b, pb) && covered(c, b, pb, a, pa);
        if (r)
            c->seen |= SEEN_SETS;
        return r;
    }
    if (is_scalar(na) && is_scalar(nb))
        return math_scalars_equal(c, a, pa, b, pb);
    if (na->op != nb->op)
        return 0;
    switch (na->op) {
    case N_TUPLE: return na->sub == nb->sub && in_order(c, a, b);
    case N_REL: return relations_equal(c, a, b);
    case N_CHAIN: return relations_equal(c, na->a, nb->a) && relations_equal(c, na->b, nb->b);
    default: return 0;
    }
}

static int is_relation(const math_ws *ws, int id)
{
    return ws->node[id].op == N_REL || ws->node[id].op == N_CHAIN;
}

static int names_only(const math_ws *ws, int id);

/* The last right side of an equation (a = b, or a chain ending = c) whose
 * left side is a computation (no variable: 3 + 3 = 6) or names a value
 * (a + b = 7), or -1: x(x + 1) = 6 is an equation to solve, not 6. */
static int last_rhs(const math_ws *ws, int id)
{
    const math_node *n = &ws->node[id];
    if (n->op == N_CHAIN)
        n = &ws->node[n->b];
    if (n->op != N_REL || n->sub != '=')
        return -1;
    const math_node *l = &ws->node[n->a];
    int computes = !(l->flags & F_VAR) && l->op != N_NUM && l->op != N_NEG; /* 7 = 11a + c: no */
    return computes || names_only(ws, n->a) ? n->b : -1;
}

/* Names joined by + - * only: no number, no function. */
static int names_only(const math_ws *ws, int id)
{
    const math_node *n = &ws->node[id];
    switch (n->op) {
    case N_VAR: return 1;
    case N_ADD: case N_SUB: case N_MUL: return names_only(ws, n->a) && names_only(ws, n->b);
    case N_NEG: case N_ABS: return names_only(ws, n->a); /* |AB| = 1 */
    default: return 0;
    }
}

void math_follow_gold_form(const math_ws *ws, int *a, int *b)
{
    if (is_relation(ws, *b) == is_relation(ws, *a))
        return;
    int *eqn = is_relation(ws, *a) ? a : b, r = last_rhs(ws, *eqn);
    if (r >= 0)
        *eqn = r;
}

/* An equation against an answer read from `x = A` (math_ws.assign_val): the
 * same equation as x = A, "x + 2y - 4 = 0" against "y = 2 - x/2". */
static int equation_and_assignment(math_cmp *c, int rel, int val)
{
    const math_ws *ws = c->ws;
    const math_node *nr = &ws->node[rel];
    if (nr->op != N_REL || nr->sub != '=' || !is_scalar(&ws->node[nr->a]) ||
        !is_scalar(&ws->node[nr->b]) || !is_scalar(&ws->node[val]))
        return 0;
    for (size_t k = 0; k < ws->nassign; k++) {
        if (ws->assign_val[k] != val)
            continue;
        math_node as = {.op = N_REL, .sub = '=', .a = ws->assign_var[k], .b = val};
        if (equations_equal(c, nr, &as)) {
            c->seen |= SEEN_EQUATION;
            return 1;
        }
    }
    return 0;
}

int math_values_equal(math_cmp *c, int a, int b)
{
    if (eq(c, a, 0, b, 0))
        return 1;
    return !c->oom && !c->over &&
           (equation_and_assignment(c, a, b) || equation_and_assignment(c, b, a));
}
