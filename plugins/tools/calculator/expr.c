/* expr.c: the calculator's expression evaluator, recursive descent over
 * GMP rationals with every step's size bounded (see expr.h). */
#include "expr.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parse in progress: the text, where it is, and what it has spent. */
typedef struct parser {
    const char *s;
    size_t n, pos;
    int depth;       /* levels entered (expr.h: CALC_MAX_DEPTH) */
    int64_t work;    /* bits produced so far (CALC_MAX_WORK) */
    calc_error *err;
} parser;

/* The binary operators of term and expr. */
typedef enum calc_op { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD } calc_op;

static const char *const op_text[] = {"+", "-", "*", "/", "//", "%"};

size_t calc_column(const char *s, size_t n, size_t at)
{
    size_t col = 1;
    for (size_t i = 0; i < at && i < n; i++)
        col += ((unsigned char)s[i] & 0xC0) != 0x80; /* continuation bytes are not characters */
    return col;
}

static size_t col(const parser *p, size_t at) { return calc_column(p->s, p->n, at); }

/* Fill the error and return -1, for `return fail(...)`. */
static int fail(parser *p, calc_status st, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(parser *p, calc_status st, size_t at, const char *fmt, ...)
{
    p->err->status = st;
    p->err->at = at;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err->message, sizeof p->err->message, fmt, ap);
    va_end(ap);
    return -1;
}

static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_letter(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

/* The next token's first byte after whitespace (p->pos moves to it), or -1
 * at the end. A NUL byte is a byte like any other here. */
static int peek(parser *p)
{
    while (p->pos < p->n && is_space((unsigned char)p->s[p->pos]))
        p->pos++;
    return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1;
}

/* The bytes of a well-formed UTF-8 character at s[0..n) (2 to 4), or 0:
 * only whole, valid characters are quoted back, so the output stays UTF-8. */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        len = 2;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        len = 3;
        if (s[0] == 0xE0)
            lo = 0xA0; /* overlong below */
        if (s[0] == 0xED)
            hi = 0x9F; /* surrogates above */
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        len = 4;
        if (s[0] == 0xF0)
            lo = 0x90;
        if (s[0] == 0xF4)
            hi = 0x8F; /* past U+10FFFF above */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* What is at byte `at`, as the model should read it: the end, a quoted
 * word or character, or a byte that cannot be quoted. */
static void describe_found(const parser *p, size_t at, char *buf, size_t cap)
{
    if (at >= p->n) {
        snprintf(buf, cap, "the end");
        return;
    }
    const unsigned char *u = (const unsigned char *)p->s + at;
    size_t left = p->n - at;
    if (is_letter(u[0])) {
        size_t len = 0;
        while (len < left && len < 24 && is_letter(u[len]))
            len++;
        snprintf(buf, cap, "\"%.*s\"", (int)len, (const char *)u);
    } else if (u[0] == '"') {
        snprintf(buf, cap, "a quote mark");
    } else if (u[0] > 0x20 && u[0] < 0x7F) {
        snprintf(buf, cap, "\"%c\"", u[0]);
    } else {
        size_t len = u[0] >= 0x80 ? utf8_length(u, left) : 0;
        if (len)
            snprintf(buf, cap, "\"%.*s\"", (int)len, (const char *)u);
        else
            snprintf(buf, cap, "the byte 0x%02X", u[0]);
    }
}

/* A syntax error at `at`: what was expected, and what was found. A word
 * (sqrt, x, pi) or a comma gets its own hint, whatever was expected: they
 * are what a model most often writes that this grammar lacks. */
static int syntax_error(parser *p, size_t at, const char *expected)
{
    int c = at < p->n ? (unsigned char)p->s[at] : -1;
    char found[64];
    describe_found(p, at, found, sizeof found);
    if (c >= 0 && is_letter(c))
        return fail(p, CALC_SYNTAX, at,
                    "syntax error at column %zu: %s is not a number or an operator; only "
                    "numbers, + - * / // %% ** ^ and parentheses are allowed",
                    col(p, at), found);
    if (c == ',')
        return fail(p, CALC_SYNTAX, at,
                    "syntax error at column %zu: \",\" is not allowed; write numbers without "
                    "separators (1000, not 1,000)", col(p, at));
    return fail(p, CALC_SYNTAX, at, "syntax error at column %zu: expected %s, found %s",
                col(p, at), expected, found);
}

/* Enter one level of nesting at `at`; -1 past CALC_MAX_DEPTH, so the
 * recursion stays bounded whatever the input. */
static int enter(parser *p, size_t at)
{
    if (++p->depth > CALC_MAX_DEPTH)
        return fail(p, CALC_TOO_DEEP, at,
                    "too deeply nested at column %zu: more than %d levels of parentheses, "
                    "signs or powers", col(p, at), CALC_MAX_DEPTH);
    return 0;
}

static int64_t bits(const mpz_t z) { return (int64_t)mpz_sizeinbase(z, 2); }

/* Account for a step of `what` at `at` whose result has at most `est`
 * bits, before it is computed: -1 past CALC_MAX_BITS or CALC_MAX_WORK. */
static int check_size(parser *p, int64_t est, size_t at, const char *what)
{
    if (est > CALC_MAX_BITS)
        return fail(p, CALC_TOO_LARGE, at,
                    "too large: %s at column %zu would have about %lld bits; the limit is %ld "
                    "bits (about %ld digits)", what, col(p, at), (long long)est,
                    CALC_MAX_BITS, (long)(CALC_MAX_BITS * 0.30103));
    if (p->work + est > CALC_MAX_WORK)
        return fail(p, CALC_TOO_LARGE, at,
                    "too large: the expression's steps up to column %zu would produce more "
                    "than %ld bits in all; split it into smaller calculations",
                    col(p, at), CALC_MAX_WORK);
    p->work += est;
    return 0;
}

static int parse_expr(parser *p, mpq_t out);
static int parse_unary(parser *p, mpq_t out);

/* NUMBER at p->pos (a digit, or a '.' before a digit) into out, exactly:
 * its digits over 10 to the power of its fraction digits less its exponent. */
static int parse_number(parser *p, mpq_t out)
{
    size_t start = p->pos, i = start;
    while (i < p->n && is_digit((unsigned char)p->s[i]))
        i++;
    size_t int_end = i, frac_start = i;
    if (i < p->n && p->s[i] == '.') {
        frac_start = ++i;
        while (i < p->n && is_digit((unsigned char)p->s[i]))
            i++;
    }
    size_t n_int = int_end - start, n_frac = i - frac_start;
    long exp10 = 0;
    /* e notation only when digits follow: "2e" is 2 then a word */
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        size_t j = i + 1;
        int negative = 0;
        if (j < p->n && (p->s[j] == '+' || p->s[j] == '-'))
            negative = p->s[j++] == '-';
        if (j < p->n && is_digit((unsigned char)p->s[j])) {
            long e = 0;
            for (; j < p->n && is_digit((unsigned char)p->s[j]); j++)
                if (e <= CALC_MAX_EXPONENT) /* past it the value no longer matters */
                    e = e * 10 + (p->s[j] - '0');
            if (e > CALC_MAX_EXPONENT)
                return fail(p, CALC_TOO_LARGE, start,
                            "too large: the number at column %zu has an exponent past the "
                            "limit of %d", col(p, start), CALC_MAX_EXPONENT);
            exp10 = negative ? -e : e;
            i = j;
        }
    }
    long scale = exp10 - (long)n_frac;
    /* a digit is under 4 bits, and so is each power of ten */
    if (check_size(p, 4 * ((int64_t)(n_int + n_frac) + (scale < 0 ? -scale : scale)) + 1, start,
                   "the number"))
        return -1;
    char digits[CALC_MAX_LENGTH + 1]; /* a leaf of the recursion: one such frame at a time */
    memcpy(digits, p->s + start, n_int);
    memcpy(digits + n_int, p->s + frac_start, n_frac);
    digits[n_int + n_frac] = '\0';
    mpz_set_str(mpq_numref(out), digits, 10); /* only digits: it cannot fail */
    mpz_set_ui(mpq_denref(out), 1);
    if (scale > 0) {
        mpz_t ten;
        mpz_init(ten);
        mpz_ui_pow_ui(ten, 10, (unsigned long)scale);
        mpz_mul(mpq_numref(out), mpq_numref(out), ten);
        mpz_clear(ten);
    } else if (scale < 0) {
        mpz_ui_pow_ui(mpq_denref(out), 10, (unsigned long)-scale);
        mpq_canonicalize(out);
    }
    p->pos = i;
    return 0;
}

/* primary := NUMBER | '(' expr ')' */
static int parse_primary(parser *p, mpq_t out)
{
    int c = peek(p);
    size_t at = p->pos;
    if (c == '(') {
        if (enter(p, at))
            return -1;
        p->pos++;
        if (parse_expr(p, out))
            return -1;
        if (peek(p) != ')') {
            char expected[64];
            snprintf(expected, sizeof expected, "\")\" to close the \"(\" at column %zu",
                     col(p, at));
            return syntax_error(p, p->pos, expected);
        }
        p->pos++;
        p->depth--;
        return 0;
    }
    if (c >= 0 && (is_digit(c) ||
                   (c == '.' && at + 1 < p->n && is_digit((unsigned char)p->s[at + 1]))))
        return parse_number(p, out);
    return syntax_error(p, at, "a number or \"(\"");
}

/* base **= e for the power operator `op` at `at`: only whole exponents give
 * exact results, and the result's size is known before it is computed. */
static int power(parser *p, mpq_t base, const mpq_t e, size_t at, const char *op)
{
    if (mpz_cmp_ui(mpq_denref(e), 1) != 0)
        return fail(p, CALC_NOT_EXACT, at,
                    "not exact: the exponent of \"%s\" at column %zu is not a whole number, "
                    "and this calculator gives only exact results", op, col(p, at));
    if (mpz_cmpabs_ui(mpq_numref(e), CALC_MAX_EXPONENT) > 0) {
        if (mpz_fits_slong_p(mpq_numref(e)))
            return fail(p, CALC_TOO_LARGE, at,
                        "too large: the exponent of \"%s\" at column %zu is %ld, past the "
                        "limit of %d", op, col(p, at), mpz_get_si(mpq_numref(e)),
                        CALC_MAX_EXPONENT);
        return fail(p, CALC_TOO_LARGE, at,
                    "too large: the exponent of \"%s\" at column %zu has %zu digits; the "
                    "limit is %d", op, col(p, at), mpz_sizeinbase(mpq_numref(e), 10),
                    CALC_MAX_EXPONENT);
    }
    long k = mpz_get_si(mpq_numref(e));
    unsigned long m = (unsigned long)(k < 0 ? -k : k);
    if (k < 0 && mpq_sgn(base) == 0)
        return fail(p, CALC_DIV_ZERO, at,
                    "division by zero: 0 to a negative power (the \"%s\" at column %zu)", op,
                    col(p, at));
    char what[48];
    snprintf(what, sizeof what, "the result of \"%s\"", op);
    int64_t est = (int64_t)m * (bits(mpq_numref(base)) + bits(mpq_denref(base)));
    if (check_size(p, est > 0 ? est : 1, at, what))
        return -1;
    /* a power of a fraction in lowest terms is in lowest terms */
    mpz_pow_ui(mpq_numref(base), mpq_numref(base), m);
    mpz_pow_ui(mpq_denref(base), mpq_denref(base), m);
    if (k < 0)
        mpq_inv(base, base);
    return 0;
}

/* power := primary (('**' | '^') unary)? */
static int parse_power(parser *p, mpq_t out)
{
    if (parse_primary(p, out))
        return -1;
    int c = peek(p);
    size_t at = p->pos, len = 0;
    if (c == '^')
        len = 1;
    else if (c == '*' && at + 1 < p->n && p->s[at + 1] == '*')
        len = 2;
    if (!len)
        return 0;
    if (enter(p, at))
        return -1;
    p->pos += len;
    mpq_t e;
    mpq_init(e);
    int rc = parse_unary(p, e);
    if (!rc)
        rc = power(p, out, e, at, len == 1 ? "^" : "**");
    mpq_clear(e);
    p->depth--;
    return rc;
}

/* unary := ('+' | '-') unary | power */
static int parse_unary(parser *p, mpq_t out)
{
    int c = peek(p);
    if (c != '+' && c != '-')
        return parse_power(p, out);
    if (enter(p, p->pos))
        return -1;
    p->pos++;
    if (parse_unary(p, out))
        return -1;
    p->depth--;
    if (c == '-')
        mpq_neg(out, out);
    return 0;
}

/* a = a op b for the operator at `at`, its size checked first. */
static int apply(parser *p, calc_op op, mpq_t a, const mpq_t b, size_t at)
{
    if ((op == OP_DIV || op == OP_FLOORDIV || op == OP_MOD) && mpq_sgn(b) == 0)
        return fail(p, CALC_DIV_ZERO, at, "division by zero (the \"%s\" at column %zu)",
                    op_text[op], col(p, at));
    int64_t na = bits(mpq_numref(a)), da = bits(mpq_denref(a));
    int64_t nb = bits(mpq_numref(b)), db = bits(mpq_denref(b));
    int64_t est;
    if (op == OP_ADD || op == OP_SUB)
        est = (na + db > nb + da ? na + db : nb + da) + 1 + da + db;
    else if (op == OP_MOD)
        est = na + nb + 2 * (da + db); /* the remainder's parts and their common denominator */
    else
        est = na + nb + da + db;
    char what[48];
    snprintf(what, sizeof what, "the result of \"%s\"", op_text[op]);
    if (check_size(p, est, at, what))
        return -1;
    switch (op) {
    case OP_ADD: mpq_add(a, a, b); break;
    case OP_SUB: mpq_sub(a, a, b); break;
    case OP_MUL: mpq_mul(a, a, b); break;
    case OP_DIV: mpq_div(a, a, b); break;
    case OP_FLOORDIV:
    case OP_MOD: {
        /* a / b = (na db) / (da nb); floor and remainder as Python's Fraction */
        mpz_t x, y;
        mpz_init(x);
        mpz_init(y);
        mpz_mul(x, mpq_numref(a), mpq_denref(b));
        mpz_mul(y, mpq_denref(a), mpq_numref(b));
        if (op == OP_FLOORDIV) {
            mpz_fdiv_q(mpq_numref(a), x, y);
            mpz_set_ui(mpq_denref(a), 1);
        } else {
            /* a - b floor(a/b) = fdiv_r(x, y) / (da db), with the divisor's sign */
            mpz_fdiv_r(x, x, y);
            mpz_mul(mpq_denref(a), mpq_denref(a), mpq_denref(b));
            mpz_swap(mpq_numref(a), x);
            mpq_canonicalize(a);
        }
        mpz_clear(x);
        mpz_clear(y);
        break;
    }
    }
    return 0;
}

/* term := unary (('*' | '/' | '//' | '%') unary)* */
static int parse_term(parser *p, mpq_t out)
{
    if (parse_unary(p, out))
        return -1;
    for (;;) {
        int c = peek(p);
        size_t at = p->pos, len = 1;
        calc_op op;
        if (c == '*')
            op = OP_MUL; /* "**" never gets here: parse_power took it */
        else if (c == '/' && at + 1 < p->n && p->s[at + 1] == '/')
            op = OP_FLOORDIV, len = 2;
        else if (c == '/')
            op = OP_DIV;
        else if (c == '%')
            op = OP_MOD;
        else
            return 0;
        p->pos += len;
        mpq_t rhs;
        mpq_init(rhs);
        int rc = parse_unary(p, rhs);
        if (!rc)
            rc = apply(p, op, out, rhs, at);
        mpq_clear(rhs);
        if (rc)
            return -1;
    }
}

/* expr := term (('+' | '-') term)* */
static int parse_expr(parser *p, mpq_t out)
{
    if (parse_term(p, out))
        return -1;
    for (;;) {
        int c = peek(p);
        size_t at = p->pos;
        if (c != '+' && c != '-')
            return 0;
        p->pos++;
        mpq_t rhs;
        mpq_init(rhs);
        int rc = parse_term(p, rhs);
        if (!rc)
            rc = apply(p, c == '+' ? OP_ADD : OP_SUB, out, rhs, at);
        mpq_clear(rhs);
        if (rc)
            return -1;
    }
}

calc_status calc_eval(const char *s, size_t n, mpq_t value, calc_error *err)
{
    memset(err, 0, sizeof *err);
    parser p = {.s = s, .n = n, .err = err};
    if (n > CALC_MAX_LENGTH) {
        fail(&p, CALC_TOO_LONG, CALC_MAX_LENGTH,
             "the expression is %zu bytes long, past the limit of %d; split it into smaller "
             "calculations", n, CALC_MAX_LENGTH);
        return err->status;
    }
    if (peek(&p) < 0) {
        fail(&p, CALC_EMPTY, p.pos, "the expression is empty; give one such as \"123 * 456\"");
        return err->status;
    }
    if (parse_expr(&p, value))
        return err->status;
    int c = peek(&p);
    if (c == ')')
        fail(&p, CALC_SYNTAX, p.pos, "syntax error at column %zu: \")\" has no \"(\" to close",
             col(&p, p.pos));
    else if (c >= 0)
        syntax_error(&p, p.pos, "an operator or the end");
    return err->status;
}
