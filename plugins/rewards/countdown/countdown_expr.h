/* countdown_expr.h: the arithmetic expression of a Countdown answer
 * ("8-5+3", "(7+1)*3"): parsed, evaluated exactly, and the numbers it uses
 * listed, so the reward can check them against the puzzle's.
 *
 * Grammar (whitespace between tokens is ignored):
 *   expr   := term (('+' | '-') term)*
 *   term   := factor (('*' | '/') factor)*
 *   factor := NUMBER | '(' expr ')'
 *   NUMBER := [0-9]{1,18}
 * There is no unary minus: a puzzle's numbers are used as given. The value is
 * an exact fraction (num/den, den > 0, in lowest terms), so 8/3*3 is 8.
 * Nesting is limited to COUNTDOWN_MAX_DEPTH parentheses and the literals to
 * COUNTDOWN_MAX_NUMBERS, which bounds the work on any input. */
#ifndef TERN_COUNTDOWN_EXPR_H
#define TERN_COUNTDOWN_EXPR_H

#include <stddef.h>
#include <stdint.h>

#define COUNTDOWN_MAX_NUMBERS 32
#define COUNTDOWN_MAX_DEPTH 32

typedef enum countdown_expr_status {
    COUNTDOWN_EXPR_OK = 0,
    COUNTDOWN_EXPR_EMPTY,       /* nothing but whitespace */
    COUNTDOWN_EXPR_SYNTAX,      /* not the grammar above; `at` is the byte */
    COUNTDOWN_EXPR_TOO_MANY,    /* more than COUNTDOWN_MAX_NUMBERS literals */
    COUNTDOWN_EXPR_TOO_DEEP,    /* more than COUNTDOWN_MAX_DEPTH nested parentheses */
    COUNTDOWN_EXPR_DIV_ZERO,    /* a division by a part worth 0 */
    COUNTDOWN_EXPR_TOO_LARGE    /* a literal or a value past 64 bits */
} countdown_expr_status;

typedef struct countdown_expr {
    countdown_expr_status status;
    size_t at;                   /* SYNTAX: the offending byte's offset in the text */
    int64_t num, den;            /* OK: the value num/den, den > 0, lowest terms */
    size_t n_numbers;            /* the literals, in the order written (also on errors
                                    after parsing them: DIV_ZERO, TOO_LARGE) */
    int64_t numbers[COUNTDOWN_MAX_NUMBERS];
} countdown_expr;

/* Parse and evaluate s[0..n) (no NUL needed; NUL bytes are syntax errors)
 * into *out. Returns out->status. Never allocates. */
countdown_expr_status countdown_expr_eval(const char *s, size_t n, countdown_expr *out);

/* A short English phrase for a status ("a syntax error", ...). */
const char *countdown_expr_status_text(countdown_expr_status st);

#endif
