/* equiv.h: whether two final answers are the same (private to the math
 * plugin). The pipeline, cheapest first; the first step that decides wins:
 *
 *   1. both cleaned answers are plain numbers (number.h): exact comparison of
 *      their digits or 64-bit fractions, any length;
 *   2. the texts are the same (runs of whitespace read as one space);
 *   3. longer than MATH_EXPR_MAX bytes: not parsed, so not equal;
 *   4. tokenised (latex.h) the same, or both text answers (words) that are
 *      the same ignoring case and braces;
 *   5. parsed (expr.h); an answer that restates arithmetic for a gold that
 *      is a number is not equal; then compared by value (compare.h): exact rationals
 *      when both are rational, floating point within `tolerance` otherwise,
 *      random points for variables, tuples in order, sets and lists of
 *      answers in any order, intervals with their ends, equations up to a
 *      constant factor. An answer that does not parse is not equal, but an
 *      equation whose left side does not parse, against an answer with no
 *      '=', is its right side ("\sum_{k=0}^{4} k = 10" is 10).
 * Work is linear in the lengths until step 5, which runs on at most
 * MATH_EXPR_MAX bytes a side with a budget of comparisons. */
#ifndef MATH_EQUIV_H
#define MATH_EQUIV_H

#include <stddef.h>

#define MATH_EXPR_MAX 2048

typedef struct math_opts {
    double tolerance; /* relative tolerance of floating-point comparisons */
    int points; /* random points for answers with variables (1..MATH_MAX_POINTS) */
    int percent_either; /* "10%" equals 10 as well as 0.1 */
} math_opts;

typedef struct math_verdict {
    int equal;
    /* How they were found equal or why not, for the reason: "" for plain
     * exact numbers, else "same text", "numerically", "undefined value", ...
     * Static strings. */
    const char *note;
    const char *why; /* why an answer did not parse, or NULL */
} math_verdict;

/* Judge answer a against the gold answer b (cleaned here). Symmetric but for
 * one rule: when b is a written number (a literal, signed, or a fraction of
 * literals), a may not do arithmetic on written numbers ("37+45" is not 82:
 * note "arithmetic left undone"). Returns 0, or
 * -1 when out of memory (v then says not equal). */
int math_equivalent(const char *a, size_t alen, const char *b, size_t blen, const math_opts *o,
                    math_verdict *v);

#endif
