/* expr.h: answers as trees, parsed from tokens (latex.h), and their values,
 * exact (rational.h) or in floating point (private to the math plugin).
 *
 * Grammar, loosest first:
 *   answers   item ((',' | ';' | or | and) item)*        a bare list: N_LIST
 *   item      union (relop union (relop union)?)?        = < > \le \ge \ne \in
 *   union     expr (\cup expr)*                          N_UNION
 *   expr      term (('+' | '-' | \pm | \mp) term)*
 *   term      unary (('*' | '/') unary | power)*         juxtaposition multiplies
 *   unary     ('-' | '+' | \pm | \mp) unary | power
 *   power     postfix ('^' (group | unary))?             right-associative
 *   postfix   primary ('!' | '%')*
 *   primary   number | variable | \pi | e | \infty | function | \frac A B
 *           | \sqrt[n]{A} | \binom A B | (...) | [...] | {...} | \{...\} | |A|
 * A bracket with one item groups; with two or more it is a tuple, which
 * with two items is also an interval: `(0, 1]`. Matrices written as
 * matrices add, subtract and multiply (`A + B`, `A B`, `2 A`, `A \cdot B`)
 * entry by entry, when their shapes allow. An item `x = A` whose other
 * side does not hold x is A, and so is `f(x) = A`, and names given values,
 * `(a, b) = (1, 4)` and `PQ = 3`, are their values; `x > 2`, `-x > -3`,
 * `2x \le 6`, `1 < x \le 3` become intervals. `!=` is \ne.
 *
 * Numbers: digits with an optional strict thousands form (1,234,567: one to
 * three digits, then groups of exactly three), a fraction part, and an
 * exponent written right after them (1.5e3, 2E-4). An integer followed by
 * \frac{int}{int} or by " int/int" is a mixed number (3\frac12 = 3.5).
 * Two numbers side by side otherwise are refused ("1 000", "2 3").
 *
 * Everything is bounded: trees deeper than MATH_MAX_DEPTH, brackets nested
 * past MATH_MAX_NEST, more than MATH_MAX_VARS variable names or more nodes
 * than the workspace holds are refused, so parsing is linear in the tokens
 * and evaluation linear in the nodes, with bounded recursion. */
#ifndef MATH_EXPR_H
#define MATH_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "latex.h"
#include "rational.h"

#define MATH_MAX_VARS 16
#define MATH_VAR_NAME 24
#define MATH_MAX_POINTS 16
#define MATH_MAX_NEST 64
#define MATH_MAX_DEPTH 256
#define MATH_MAX_ASSIGN 8

typedef enum math_op {
    N_NUM = 1, /* a: index into num[] */
    N_VAR, /* a: index into var_name[] */
    N_PI,
    N_E,
    N_INF,
    N_NEG,
    N_ADD,
    N_SUB,
    N_MUL,
    N_DIV,
    N_POW,
    N_PM, /* a \pm b */
    N_MP, /* a \mp b */
    N_PMU, /* \pm a */
    N_MPU, /* \mp a */
    N_FUNC, /* sub: math_fn */
    N_LOGB, /* log base a of b */
    N_SQRT,
    N_ROOT, /* the a-th root of b */
    N_FACT,
    N_PCT, /* a percent: a / 100 */
    N_ABS,
    N_BINOM,
    /* Collections; children linked through `next` from `a`, `count` of them. */
    N_TUPLE, /* sub: bit 0 opens with '[', bit 1 closes with ']' */
    N_SET,
    N_LIST,
    N_UNION,
    N_REL, /* a sub b, sub one of = < > l (<=) g (>=) n (!=) */
    N_CHAIN /* a < x < b: a and b are the two N_RELs */
} math_op;

/* math_node.flags */
#define F_VAR 1u /* holds a variable */
#define F_PM 2u /* holds \pm or \mp */
#define F_COLL 4u /* a collection or relation: no arithmetic on it */
#define F_CALL 8u /* a letter right before parentheses: f(x), read as a product */
#define F_MATRIX 16u /* a tuple written as a matrix, of two or more rows */

typedef struct math_node {
    uint8_t op, sub;
    uint16_t depth;
    uint16_t flags;
    uint16_t count;
    int32_t a, b, next;
} math_node;

typedef struct math_numlit {
    math_rat q;
    int exact; /* q holds the value (it fits 128 bits) */
    double v;
} math_numlit;

/* The nodes of both answers of one comparison, and their variables. */
typedef struct math_ws {
    math_node *node;
    size_t nnode, node_cap;
    math_numlit *num;
    size_t nnum, num_cap;
    char var_name[MATH_MAX_VARS][MATH_VAR_NAME];
    size_t nvars;
    /* `x = A` read as A: assign_val[k] is A's node, assign_var[k] x's (an
     * equation can then still be compared with it as x = A) */
    int32_t assign_val[MATH_MAX_ASSIGN], assign_var[MATH_MAX_ASSIGN];
    size_t nassign;
    double var_val[MATH_MAX_VARS][MATH_MAX_POINTS];
} math_ws;

/* Parse t[0..n) into ws; the root's index, or -1 with *why saying what
 * stopped it ("words", "unknown command", "too deep", ...). */
int math_parse(math_ws *ws, const math_tok *t, size_t n, const char **why);

/* The exact value of scalar node `id`, with \pm read as the sign `pm` (+1 or
 * -1; 0 when there is none): RAT_OK, RAT_OVERFLOW when it is not rational or
 * does not fit (then use math_eval_num), RAT_UNDEFINED when it has no value. */
int math_eval_exact(const math_ws *ws, int id, int pm, math_rat *out);

/* The value of scalar node `id` at variable point `point`; NaN when it has
 * none (division by zero, 0^0, outside a function's domain). */
double math_eval_num(const math_ws *ws, int id, int pm, int point);

/* Whether the subtree `id` mentions variable `var`. */
int math_mentions(const math_ws *ws, int id, int var);

#endif
