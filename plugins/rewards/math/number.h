/* number.h: numbers as answers write them, and the exact comparison of two
 * answers (private to the math plugin).
 *
 * Accepted number forms (one grammar for gold answers and responses):
 *   [sign] integer [ "." digits ]        42  -3  +3  2.50  .5  007
 *   [sign] "." digits                    .5
 *   [sign] integer "/" integer           3/4  -1/2
 *   [sign] \frac{[sign]int}{int}         \frac{1}{2}  -\dfrac{3}{4}  (also \dfrac, \tfrac)
 * where an integer is plain digits or the strict thousands form 1,234,567
 * (one to three digits, then groups of exactly three). Answers are first
 * cleaned of surrounding whitespace, `$` (and a leading `\$`) and one trailing
 * period, so "$5", "$5$" and "42." are numbers too.
 *
 * A whole answer of digits, one comma and digits where the comma cannot group
 * thousands ("3,75", "0,125") is a decimal with a decimal comma, and one of
 * one to three digits and groups of " ddd" is an integer grouped by spaces
 * ("1 000").
 *
 * Comparison is exact: two decimals compare by their significant digits (any
 * length, so a megabyte of digits is judged exactly); when either side is a
 * fraction both become reduced 64-bit rationals, and a decimal of at least
 * MATH_DECIMAL_DIGITS fraction digits equals a fraction that never ends as a
 * decimal (1/7) when it is that fraction rounded at its last digit
 * ("0.142857" and "0.666667" are 1/7 and 2/3; "0.14" is not 1/7, nor
 * "0.666666" 2/3).
 * Everything else goes to the fuller comparison of equiv.h. */
#ifndef MATH_NUMBER_H
#define MATH_NUMBER_H

#include <stddef.h>

/* The fraction digits a decimal needs to stand for a fraction that never
 * ends (the peer verifier math-verify rounds to 6 as well). */
#define MATH_DECIMAL_DIGITS 6

/* A decimal numeral as written, not evaluated: spans into the scanned text. */
typedef struct math_decimal {
    int neg; /* a '-' sign was written */
    const char *int_part; /* digits, with ',' between thousands groups; may be empty (".5") */
    size_t int_len;
    const char *frac_part; /* digits after the '.', as written (trailing zeros kept) */
    size_t frac_len;
} math_decimal;

/* A number: `num`, or `num` / `den` when is_fraction (both then integers,
 * the sign on num). */
typedef struct math_number {
    math_decimal num;
    math_decimal den;
    int is_fraction;
} math_number;

/* Scan one number starting exactly at s[pos] (a sign, a digit, a '.' or a
 * '\frac'); returns the bytes it spans, 0 if none starts there. Reads only
 * s[pos..len). */
size_t math_number_scan(const char *s, size_t len, size_t pos, math_number *out);

/* 1 when all of s[0..len) is one number (already cleaned), else 0. */
int math_number_parse(const char *s, size_t len, math_number *out);

/* Narrow the text (s, len) to the answer proper: trims whitespace, one trailing
 * period, surrounding `$` signs (and a leading `\$`), and `**`, `\[ \]` or
 * `\( \)` around the whole answer. */
void math_answer_clean(const char **s, size_t *len);

/* When a and b (cleaned) are both numbers by the grammar above: 1 if equal, 0
 * if not, compared exactly. -1 when either is not such a number, or a
 * fraction does not fit 64 bits: then the parser (expr.h) decides. */
int math_numbers_compare(const char *a, size_t alen, const char *b, size_t blen);

#endif
