/* judge.h: a program's output against the expected output (private to the
 * code plugin).
 *
 * Both are read as sequences of tokens: maximal runs of bytes that are not
 * ASCII whitespace (space, \t, \n, \r, \v, \f). They match when the
 * sequences do, token by token, so trailing spaces, blank lines, "\r\n"
 * against "\n" and a missing final newline never matter, while a space
 * inside a token ("1 2" against "12") does. Every other byte, NUL and
 * invalid UTF-8 included, is an ordinary byte of a token.
 *
 * Two tokens match when their bytes are equal. With a tolerance (abs_tol > 0
 * or rel_tol > 0), two tokens that are both plain decimal numbers also match
 * when their values are close:
 *   number     [+-]? (digits ("." digits?)? | "." digits) ([eE] [+-]? digits)?
 *              so "5", "-5", "+5", "5.", ".5", "2.5e-3", "1E9"; not "0x1f",
 *              "inf", "nan", "1,000", "1_000", "5f", "--5" (these compare
 *              byte for byte). A leading '+' is allowed: "%+d" is a way to
 *              print a number, not a different answer
 *   close      |got - want| <= max(abs_tol, rel_tol * |want|), the values
 *              as doubles (read in every locale alike, so "0.5" never
 *              depends on LC_NUMERIC). Equal values match whatever the
 *              tolerance ("-0" and "0", "1e999" and "2e999" both infinite);
 *              otherwise an infinite value matches nothing
 * A negative or NaN tolerance counts as 0; opts NULL means no tolerance.
 *
 * Linear time in got_len + want_len; reads only got[0..got_len) and
 * want[0..want_len). */
#ifndef CODE_JUDGE_H
#define CODE_JUDGE_H

#include <stddef.h>

typedef struct code_judge_opts {
    double abs_tol, rel_tol; /* 0, 0: tokens compare byte for byte */
} code_judge_opts;

/* Capacity `why` needs for every reason code_output_matches writes uncut. */
#define CODE_WHY_MAX 160

/* Bytes of a token quoted in a reason (reward_excerpt(), "..." after a cut). */
#define CODE_TOKEN_EXCERPT 24

/* 1 when got matches want, 0 when not. `why` (why_cap >= 96 keeps the
 * usual reasons whole, CODE_WHY_MAX every one; NULL or 0 for none) gets ""
 * on a match and on a mismatch the first difference:
 *   "token 3 (line 2): expected '5', got '6'"
 *   "output ends after 2 tokens, expected 3 (next '7')"
 *   "no output, expected 3 tokens"
 *   "2 extra tokens after the expected output (line 4: 'debug')"
 *   "expected no output, got 2 tokens (line 1: 'hello')"
 * Token numbers count from 1; the line is the line of the program's output
 * (got) the token is on, from 1, counting '\n's. Quoted tokens are printable,
 * valid UTF-8 excerpts of at most CODE_TOKEN_EXCERPT bytes plus "...", and a
 * reason cut to fit why_cap is cut between two characters. */
int code_output_matches(const char *got, size_t got_len, const char *want, size_t want_len,
                        const code_judge_opts *opts, char *why, size_t why_cap);

#endif
