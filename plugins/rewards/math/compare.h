/* compare.h: comparing parsed answers by value (private to the math plugin):
 * scalars in scalar.c, the structures around them in sets.c. */
#ifndef MATH_COMPARE_H
#define MATH_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "expr.h"

/* What is known of one scalar: its exact value, or its floating-point
 * values at the comparison's points (one when it has no variables). */
typedef enum math_fp_kind { FP_EXACT = 1, FP_NUM, FP_INF, FP_UNDEF } math_fp_kind;

typedef struct math_fp {
    uint8_t kind;
    int8_t inf_sign;
    uint8_t pct; /* written with a percent sign */
    uint8_t var; /* depends on variables: v[0..points) */
    uint8_t huge; /* FP_UNDEF because it overflows a double, not for want of a value */
    math_rat q;
    double v[MATH_MAX_POINTS];
} math_fp;

/* math_cmp.seen: how a match was made, for the reason */
#define SEEN_NUMERIC 1u
#define SEEN_POINTS 2u
#define SEEN_SETS 4u
#define SEEN_PERCENT 8u
#define SEEN_UNDEFINED 16u
#define SEEN_EQUATION 32u
#define SEEN_HUGE 64u

typedef struct math_cmp {
    const math_ws *ws;
    double tol;
    int points; /* points in use: 1 when neither answer has variables */
    int positive; /* the first `positive` points give every variable a positive value */
    int percent_either;
    int32_t *slot; /* 3 per node (\pm read as none, -, +): index into fp or -1 */
    math_fp *fp;
    size_t nfp, fp_cap;
    long budget; /* structural comparisons left */
    int over; /* the budget ran out */
    int oom;
    unsigned seen;
} math_cmp;

/* Relative closeness with an absolute floor of 1e-12 for round-off. */
int math_close(double x, double y, double tol);

/* The fingerprint of scalar node `id` with \pm read as `pm`, as an index into
 * c->fp (which may move as it grows: take pointers only once all the
 * fingerprints at hand are made); -1 when out of memory (c->oom is set). */
int math_fingerprint(math_cmp *c, int id, int pm);

/* Scalar equality: exact, numeric, at points, with the percent rule. */
int math_scalars_equal(math_cmp *c, int a, int pa, int b, int pb);

/* Equality of two parsed answers (sets.c). */
int math_values_equal(math_cmp *c, int a, int b);

/* An equation against an answer that is none (sets.c): the equation, when
 * its left side computes ("3 + 3 = 6") or names ("a + b = 7") a value,
 * stands for its last right side (x(x + 1) = 6 does not), whichever of a
 * and b it is. Updates *a or *b. */
void math_follow_gold_form(const math_ws *ws, int *a, int *b);

#endif
