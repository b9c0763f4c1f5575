/* latex.h: an answer's text as a stream of tokens, with the LaTeX, Unicode
 * and plain-text spellings of one thing made one token (private to the math
 * plugin). This is where normalisation happens:
 *
 *   \frac \dfrac \tfrac \cfrac       one FRAC token (arguments parsed in expr.c)
 *   \cdot \times \ast × ·            '*'          \div ÷         '/'
 *   \left \right \big.. \! \, \; \quad \displaystyle $ \$     dropped
 *   \text \mathrm \textbf \mbox ...  the command dropped, its braces kept
 *   \pi π pi                         PI           \infty ∞ inf   INF
 *   \{ \}  \lbrace \rbrace           set braces   \cup ∪         CUP
 *   \emptyset \varnothing ∅         {}           \mathbb{R} ℝ   (-\infty, \infty)
 *   \le \leq ≤ \ge \geq ≥ \ne ≠      relations    \in ∈          IN
 *   \% % percent                     PERCENT      \pm ± \mp      PM, MP
 *   ^\circ ^{\circ} \circ ° \degree  dropped (degrees)
 *   ² ³                              ^2 ^3        − –            '-'
 *   1{,}000  1\,000                  1,000 (the parser applies the strict
 *                                    thousands rule)
 *   or, and (as words)               OR, a separator of answers
 *   unit words after a number        dropped: "5 cm", "5\text{ cm}^2",
 *                                    "3 km/h", "2 hours"
 *   \sin sin \log ... \alpha ...     FUNC and GREEK tokens
 *
 * Other runs of three or more letters are WORD tokens (text answers), and
 * unknown commands and bytes that are not ASCII maths are BAD tokens: the
 * parser refuses both, and such answers compare as text. Whitespace is
 * dropped except between two digits, where it is a SPACE token ("3 1/2" is a
 * mixed number, "1 000" is not a number). Work is linear in the text. */
#ifndef MATH_LATEX_H
#define MATH_LATEX_H

#include <stddef.h>
#include <stdint.h>

typedef enum math_tok_kind {
    TK_CHAR = 1, /* c: one of 0-9 a-z A-Z + - * / ^ _ = < > ( ) [ ] { } , ; . | ! ' */
    TK_SPACE, /* whitespace between two digits */
    TK_CMD, /* c: a math_cmd; sub: the function or Greek letter */
    TK_WORD, /* a run of 3+ letters with no maths meaning; text at pos, len */
    TK_BAD /* an unknown command or byte; text at pos, len */
} math_tok_kind;

typedef enum math_cmd {
    CMD_FRAC = 1,
    CMD_SQRT,
    CMD_BINOM,
    CMD_PI,
    CMD_INF,
    CMD_PM,
    CMD_MP,
    CMD_SETL,
    CMD_SETR,
    CMD_CUP,
    CMD_LE,
    CMD_GE,
    CMD_NE,
    CMD_IN,
    CMD_OR,
    CMD_PERCENT,
    CMD_EMPTYSET,
    CMD_REALS, /* \mathbb{R}, ℝ: the interval (-\infty, \infty) */
    CMD_FUNC, /* sub: math_fn */
    CMD_GREEK, /* sub: index into math_greek_name */
    CMD_APPROX /* \approx, ≈ */
} math_cmd;

typedef enum math_fn {
    FN_SIN,
    FN_COS,
    FN_TAN,
    FN_COT,
    FN_SEC,
    FN_CSC,
    FN_ASIN,
    FN_ACOS,
    FN_ATAN,
    FN_SINH,
    FN_COSH,
    FN_TANH,
    FN_LN,
    FN_LOG, /* base 10 unless a base is written: \log_2 */
    FN_EXP,
    FN_ABS,
    FN_COUNT
} math_fn;

/* math_tok.sub of a TK_CHAR: whitespace came before it ("2e + 1" is not 2e+1). */
#define MATH_TOK_SPACED 0x8000u
/* math_tok.sub of a TK_CHAR '{': the group of a \text-like command. */
#define MATH_TOK_TEXT 0x1u
/* math_tok.sub of a TK_CHAR '(': the opening of a matrix (\begin{pmatrix}). */
#define MATH_TOK_MATRIX 0x2u

typedef struct math_tok {
    uint8_t kind;
    uint8_t c;
    uint16_t sub;
    uint32_t pos, len; /* the source bytes, for WORD and BAD */
} math_tok;

/* Tokenise s[0..len) into out[0..cap); cap >= 2 len + 2 always suffices (a
 * matrix's row break, two bytes, is three tokens). A matrix
 * (\begin{pmatrix} a & b \\ c & d \end{pmatrix}, or bmatrix, Bmatrix,
 * matrix, smallmatrix, array with its column spec) is the tuple of its
 * rows, ((a, b), (c, d)).
 * Returns the number of tokens. */
size_t math_lex(const char *s, size_t len, math_tok *out, size_t cap);

/* The name of Greek letter `sub` ("alpha"), for variable names. */
const char *math_greek_name(unsigned sub);

/* Whether two token streams spell the same answer: equal tokens, WORDs equal
 * ignoring case. sa and sb are the texts the tokens point into. */
int math_tokens_equal(const math_tok *a, size_t na, const char *sa, const math_tok *b, size_t nb,
                      const char *sb);

/* Whether a stream holds a WORD token (the answer is text). */
int math_tokens_have_word(const math_tok *t, size_t n);

#endif
