/* expr.h: the calculator's arithmetic expressions ("123 * 456", "2**-3",
 * "(1 + 2) / 3"), parsed by recursive descent and evaluated exactly in GMP
 * rationals, the size of every step checked before it is computed.
 *
 * Grammar (Python's precedence; whitespace between tokens is ignored):
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '//' | '%') unary)*
 *   unary   := ('+' | '-') unary | power
 *   power   := primary (('**' | '^') unary)?
 *   primary := NUMBER | '(' expr ')'
 *   NUMBER  := DIGITS ('.' DIGITS?)? EXP? | '.' DIGITS EXP?
 *   EXP     := ('e' | 'E') ('+' | '-')? DIGITS
 * So -2**2 is -4, 2**3**2 is 512 and 2**-1 is 1/2. A decimal is the exact
 * fraction it writes (0.1 is 1/10, 1.5e3 is 1500). `/` is exact division,
 * `//` floors (7 // -2 is -4) and `%` is the matching remainder, with the
 * divisor's sign (-7 % 3 is 2), for fractions too, as Python's Fraction.
 * `^` is a power, not Python's exclusive or: models write 2^10.
 *
 * Limits, so that no input takes much memory, time or stack: the text's
 * length, the nesting of parentheses, signs and powers (the parser recurses
 * once per level), a power's exponent, and the bits of any value, each
 * checked before the step that would pass it. */
#ifndef TERN_CALCULATOR_EXPR_H
#define TERN_CALCULATOR_EXPR_H

#include <stddef.h>

#include <gmp.h>

/* The longest expression, in bytes. */
#define CALC_MAX_LENGTH 4096
/* The deepest nesting: parentheses, unary signs and the right operands of
 * powers each count a level. */
#define CALC_MAX_DEPTH 100
/* The largest |exponent| of a power or of a number's e notation. */
#define CALC_MAX_EXPONENT 10000
/* The most bits (numerator's plus denominator's) of any value, some 315000
 * decimal digits: past the longest output a tool may give. */
#define CALC_MAX_BITS (1L << 20)
/* The most bits all the steps of one expression may produce together: a
 * thousand steps on values near CALC_MAX_BITS would take seconds. */
#define CALC_MAX_WORK (1L << 26)
/* Bytes of an error message, NUL included. */
#define CALC_MESSAGE_MAX 256

typedef enum calc_status {
    CALC_OK = 0,
    CALC_EMPTY,     /* nothing but whitespace */
    CALC_SYNTAX,    /* not the grammar above; `at` is the offending byte */
    CALC_TOO_LONG,  /* more than CALC_MAX_LENGTH bytes */
    CALC_TOO_DEEP,  /* nested deeper than CALC_MAX_DEPTH */
    CALC_DIV_ZERO,  /* a division, floor division, remainder or negative power of 0 */
    CALC_NOT_EXACT, /* a power whose exponent is not a whole number */
    CALC_TOO_LARGE  /* an exponent past CALC_MAX_EXPONENT, a value past CALC_MAX_BITS,
                       or all the steps past CALC_MAX_WORK */
} calc_status;

/* Why an evaluation failed. */
typedef struct calc_error {
    calc_status status;
    size_t at;                      /* the byte offset of the token concerned (for
                                       CALC_TOO_LONG, the limit) */
    char message[CALC_MESSAGE_MAX]; /* one line saying what and where, for the model */
} calc_error;

/* Evaluate s[0..n) (no NUL needed; a NUL byte is a syntax error) into value,
 * which the caller has initialised. Returns CALC_OK, or another status with
 * *err filled (value is then unspecified). Thread-safe: it touches no global
 * state. */
calc_status calc_eval(const char *s, size_t n, mpq_t value, calc_error *err);

/* The 1-based column of byte `at` of s: UTF-8 characters, not bytes, so that
 * a column counts what the model wrote. */
size_t calc_column(const char *s, size_t n, size_t at);

#endif
