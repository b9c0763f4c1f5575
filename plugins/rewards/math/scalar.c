/* scalar.c: one number or expression against another (see compare.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

int math_close(double x, double y, double tol)
{
    if (x == y)
        return 1;
    double d = fabs(x - y);
    return d <= tol * fmax(fabs(x), fabs(y)) || d <= 1e-12;
}

int math_fingerprint(math_cmp *c, int id, int pm)
{
    const math_ws *ws = c->ws;
    const math_node *nd = &ws->node[id];
    if (!(nd->flags & F_PM))
        pm = 0; /* one fingerprint whatever sign is asked */
    size_t k = (size_t)id * 3 + (size_t)(pm + 1);
    if (c->slot[k] >= 0)
        return c->slot[k];
    if (c->nfp == c->fp_cap) {
        size_t cap = c->fp_cap ? c->fp_cap * 2 : 16;
        math_fp *grown = realloc(c->fp, cap * sizeof *grown);
        if (!grown) {
            c->oom = 1;
            return -1;
        }
        c->fp = grown;
        c->fp_cap = cap;
    }
    math_fp *f = &c->fp[c->nfp];
    memset(f, 0, sizeof *f);
    int t = id, sign = 1;
    while (ws->node[t].op == N_NEG) {
        sign = -sign;
        t = ws->node[t].a;
    }
    f->pct = ws->node[t].op == N_PCT; /* "-5%" too */
    f->var = (nd->flags & F_VAR) != 0;
    if (ws->node[t].op == N_INF) {
        f->kind = FP_INF; /* written infinity, not an overflow */
        f->inf_sign = (int8_t)sign;
    } else if (!f->var) {
        int r = math_eval_exact(ws, id, pm, &f->q);
        if (r == RAT_OK) {
            f->kind = FP_EXACT;
            f->v[0] = math_rat_to_double(&f->q);
        } else if (r == RAT_UNDEFINED) {
            f->kind = FP_UNDEF;
        } else {
            f->v[0] = math_eval_num(ws, id, pm, 0);
            /* an overflow to infinity is no value we can compare */
            f->kind = isfinite(f->v[0]) ? FP_NUM : FP_UNDEF;
            f->huge = isinf(f->v[0]);
        }
    } else {
        f->kind = FP_NUM;
        for (int p = 0; p < c->points; p++)
            f->v[p] = math_eval_num(ws, id, pm, p);
    }
    c->slot[k] = (int32_t)c->nfp;
    return (int)c->nfp++;
}

/* Floating-point closeness, scaled by ka and kb (the percent rule), at every
 * point. A point where one side has a value and the other none (sqrt(x) at
 * x < 0) is skipped, unless all variables are positive there: then the two
 * differ. At least two points must be compared. */
static int values_close(const math_cmp *c, const math_fp *fa, const math_fp *fb, double ka,
                        double kb)
{
    if (!fa->var && !fb->var)
        return math_close(fa->v[0] * ka, fb->v[0] * kb, c->tol);
    int counted = 0;
    for (int k = 0; k < c->points; k++) {
        double x = (fa->var ? fa->v[k] : fa->v[0]) * ka, y = (fb->var ? fb->v[k] : fb->v[0]) * kb;
        int fx = isfinite(x), fy = isfinite(y);
        if (fx && fy) {
            if (!math_close(x, y, c->tol))
                return 0;
            counted++;
        } else if (fx != fy && k < c->positive) {
            return 0;
        }
    }
    return counted >= 2 || (counted == 1 && c->points == 1);
}

int math_scalars_equal(math_cmp *c, int a, int pa, int b, int pb)
{
    int ia = math_fingerprint(c, a, pa), ib = ia < 0 ? -1 : math_fingerprint(c, b, pb);
    if (ia < 0 || ib < 0)
        return 0;
    const math_fp *fa = &c->fp[ia], *fb = &c->fp[ib];
    if (fa->kind == FP_UNDEF || fb->kind == FP_UNDEF) {
        c->seen |= (fa->kind == FP_UNDEF && fa->huge) || (fb->kind == FP_UNDEF && fb->huge)
                       ? SEEN_HUGE
                       : SEEN_UNDEFINED;
        return 0;
    }
    if (fa->kind == FP_INF || fb->kind == FP_INF)
        return fa->kind == fb->kind && fa->inf_sign == fb->inf_sign;
    /* The percent rule: "10%" is 0.1, and also 10 when percent_either. */
    for (int variant = 0; variant < 3; variant++) {
        int ka = 1, kb = 1;
        if (variant == 1) {
            if (!(c->percent_either && fa->pct && !fb->pct))
                continue;
            ka = 100;
        } else if (variant == 2) {
            if (!(c->percent_either && fb->pct && !fa->pct))
                continue;
            kb = 100;
        }
        int eq = 0;
        unsigned how = fa->var || fb->var ? SEEN_POINTS : SEEN_NUMERIC;
        math_rat qa, qb, sa = math_rat_int(ka), sb = math_rat_int(kb);
        if (fa->kind == FP_EXACT && fb->kind == FP_EXACT &&
            math_rat_mul(&fa->q, &sa, &qa) == RAT_OK && math_rat_mul(&fb->q, &sb, &qb) == RAT_OK) {
            eq = math_rat_equal(&qa, &qb);
            how = 0;
        } else {
            eq = values_close(c, fa, fb, ka, kb);
        }
        if (eq) {
            c->seen |= how | (variant ? SEEN_PERCENT : 0u);
            return 1;
        }
    }
    return 0;
}
