/* numeric.h: numbers with units, and their comparison within a tolerance
 * (private to the k12 plugin).
 *
 * Read from normalised text (normalize.h), a number is
 *   [sign] digits [. digits]         42  -3  2.50  .5   (thousands only in
 *                                     the strict form 1,234,567)
 *   ... / digits                     3/4  (a fraction)
 *   \frac{[sign]a}{b}                also \dfrac \tfrac
 *   ... e[sign]digits                1.5e3
 *   ... ×10^n   x10^n  *10^n  ·10^n  3×10^8, 3 \times 10^{8}, 3×10⁸
 * optionally after '=', '≈', 约, 大约, "about", "approximately", or a
 * currency sign ($ ¥ € £). Its unit is the word right after it, with or
 * without a space: letters, CJK characters, digits, '/', '^', '°', '%', 'μ',
 * 'Ω' ("cm", "cm^2", "m/s", "平方厘米", "°C", "%", "个").
 *
 * The quantity of an answer is the number it starts with (with its unit),
 * unless an operator or relation (+ - * / = < > × ÷ ≈ ^) follows that
 * number; else the last number in the answer, with its unit. */
#ifndef K12_NUMERIC_H
#define K12_NUMERIC_H

#include <stddef.h>

typedef struct k12_quantity {
    double value;     /* NaN when it has no value (a zero denominator) */
    const char *text; /* the number and its unit as written, into the text read */
    size_t text_len;
    const char *unit; /* into the text read; unit_len 0: no unit */
    size_t unit_len;
} k12_quantity;

/* The quantity of the answer t[0..len): 1, or 0 when it holds no number. */
int k12_quantity_find(const char *t, size_t len, k12_quantity *q);

/* 1 when all of t[0..len) is one quantity (trailing punctuation aside). */
int k12_quantity_whole(const char *t, size_t len, k12_quantity *q);

typedef enum k12_compare {
    K12_EQUAL = 0,
    K12_DIFFERENT = 1,     /* the numbers differ beyond the tolerance */
    K12_UNIT_MISMATCH = 2, /* two units that are not the same and do not convert */
    K12_UNIT_MISSING = 3   /* no unit, the gold has one, and units are required */
} k12_compare;

/* Compare `got` with `gold`: the values in the gold's base unit are equal
 * when |got - gold| <= max(abs_tol, rel_tol * |gold|). A unit missing on
 * either side is not checked (unless require_unit and the gold has one). */
k12_compare k12_quantity_compare(const k12_quantity *got, const k12_quantity *gold,
                                 double rel_tol, double abs_tol, int require_unit);

#endif
