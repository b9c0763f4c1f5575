/* value_text.h: a calculator result as the text the model reads.
 *
 *   an integer                         its digits: "56088", "-7"
 *   a fraction with an exact decimal   the decimal: "3.5", "-0.125"
 *     (a denominator of only 2s and 5s)
 *   any other fraction                 "p/q ~ d", d rounded to `digits`
 *                                      significant digits: "1/3 ~ 0.333333333333",
 *                                      "-2/3 ~ -0.666666666667", "1/3000000 ~ 3.33333333333e-07"
 *
 * The approximation is marked with an ASCII "~", not "≈": a small model's
 * tokenizer knows "~" as one common token and may copy it back; the exact
 * fraction comes first so nothing exact is lost. d is written as C's %g
 * writes it (fixed unless its exponent is below -4 or at least `digits`),
 * but rounded exactly from the fraction, never through a double. */
#ifndef TERN_CALCULATOR_VALUE_TEXT_H
#define TERN_CALCULATOR_VALUE_TEXT_H

#include <stddef.h>

#include <gmp.h>

/* v (canonical) as above into *text, NUL-terminated, malloc'd (free()), and
 * its length into *len. digits >= 1. Returns 0, or -1 when out of memory. */
int calc_value_text(const mpq_t v, int digits, char **text, size_t *len);

#endif
