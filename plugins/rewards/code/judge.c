/* judge.c: token-by-token comparison of a program's output (see judge.h). */
#include "judge.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/reward_text.h"

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* A walk over the tokens of s[0..n). */
typedef struct cursor {
    const char *s;
    size_t n, i;
    size_t line; /* of s[i], from 1 */
} cursor;

/* The next token: 1 with *t, *len and *line set, 0 at the end. */
static int next_token(cursor *c, const char **t, size_t *len, size_t *line)
{
    while (c->i < c->n && is_space(c->s[c->i]))
        if (c->s[c->i++] == '\n')
            c->line++;
    if (c->i >= c->n)
        return 0;
    size_t a = c->i;
    while (c->i < c->n && !is_space(c->s[c->i]))
        c->i++;
    *t = c->s + a;
    *len = c->i - a;
    *line = c->line;
    return 1;
}

/* Tokens left in c. */
static size_t count_rest(cursor *c)
{
    const char *t;
    size_t len, line, k = 0;
    while (next_token(c, &t, &len, &line))
        k++;
    return k;
}

/* ---- Numbers --------------------------------------------------------------------- */

#define SIG_MAX 40       /* significant digits kept: far more than a double holds */
#define EXP_MAX 1000000L /* past this scale a double is 0 or infinite many times over */

/* The value of t[0..len) as a double when it is a plain decimal number
 * (judge.h); 0 when it is not. */
static int number_value(const char *t, size_t len, double *out)
{
    size_t i = 0, int_digits = 0, frac_digits = 0;
    char sig[SIG_MAX + 1];
    size_t nsig = 0;
    long dropped = 0, frac_len = 0; /* digits past SIG_MAX, digits after the point */
    int neg = 0;
    if (i < len && (t[i] == '+' || t[i] == '-'))
        neg = t[i++] == '-';
    for (; i < len && is_digit(t[i]); i++, int_digits++) {
        if (nsig == 0 && t[i] == '0')
            continue; /* a leading zero */
        if (nsig < SIG_MAX)
            sig[nsig++] = t[i];
        else
            dropped++;
    }
    if (i < len && t[i] == '.') {
        for (i++; i < len && is_digit(t[i]); i++, frac_digits++) {
            frac_len++;
            if (nsig == 0 && t[i] == '0')
                continue;
            if (nsig < SIG_MAX)
                sig[nsig++] = t[i];
            else
                dropped++;
        }
    }
    if (int_digits + frac_digits == 0)
        return 0;
    long exp10 = 0;
    if (i < len && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < len && (t[i] == '+' || t[i] == '-'))
            eneg = t[i++] == '-';
        if (i >= len || !is_digit(t[i]))
            return 0;
        /* saturating at EXP_MAX + len keeps the verdict exact: frac_len
         * and dropped are at most len, so past it the value is 0 or
         * infinite either way */
        long cap = EXP_MAX + (long)len;
        for (; i < len && is_digit(t[i]); i++)
            if (exp10 < cap)
                exp10 = exp10 * 10 + (t[i] - '0');
        if (eneg)
            exp10 = -exp10;
    }
    if (i != len)
        return 0;
    if (nsig == 0) {
        *out = neg ? -0.0 : 0.0;
        return 1;
    }
    /* value = sig * 10^(exp10 - frac_len + dropped); a dropped fraction digit
     * is in both frac_len and dropped. Clamped, the scale still gives 0 or
     * infinity where it should: nsig <= 40 moves it by 40 at most. */
    long scale = exp10 - frac_len + dropped;
    scale = scale > 2 * EXP_MAX ? 2 * EXP_MAX : scale < -2 * EXP_MAX ? -2 * EXP_MAX : scale;
    /* digits and an exponent, no decimal point: strtod reads it the same in every locale */
    char buf[SIG_MAX + 32];
    sig[nsig] = '\0';
    snprintf(buf, sizeof buf, "%s%se%ld", neg ? "-" : "", sig, scale);
    *out = strtod(buf, NULL);
    return 1;
}

static int close_enough(const char *g, size_t gl, const char *w, size_t wl, const code_judge_opts *o)
{
    double x, y;
    if (!number_value(g, gl, &x) || !number_value(w, wl, &y))
        return 0;
    if (x == y)
        return 1;
    if (!isfinite(x) || !isfinite(y))
        return 0;
    double tol = o->abs_tol > 0 ? o->abs_tol : 0, rel = o->rel_tol > 0 ? o->rel_tol * fabs(y) : 0;
    if (rel > tol)
        tol = rel;
    return fabs(x - y) <= tol;
}

/* ---- Reasons --------------------------------------------------------------------- */

static void put_why(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void put_why(char *why, size_t cap, const char *fmt, ...)
{
    if (!why || !cap)
        return;
    char buf[256]; /* the longest reason: two excerpts, two numbers, ~60 bytes of words */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t n = strlen(buf);
    if (n >= cap) { /* cut before the character that would not fit whole */
        n = cap - 1;
        while (n > 0 && ((unsigned char)buf[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(why, buf, n);
    why[n] = '\0';
}

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

int code_output_matches(const char *got, size_t got_len, const char *want, size_t want_len,
                        const code_judge_opts *opts, char *why, size_t why_cap)
{
    int tolerant = opts && (opts->abs_tol > 0 || opts->rel_tol > 0);
    cursor g = {got, got_len, 0, 1}, w = {want, want_len, 0, 1};
    char eg[CODE_TOKEN_EXCERPT + 4], ew[CODE_TOKEN_EXCERPT + 4];
    put_why(why, why_cap, "%s", "");
    for (size_t k = 1;; k++) {
        const char *gt = NULL, *wt = NULL;
        size_t gl = 0, wl = 0, gline = 0, wline = 0;
        int has_g = next_token(&g, &gt, &gl, &gline), has_w = next_token(&w, &wt, &wl, &wline);
        if (!has_g && !has_w)
            return 1;
        if (has_g && has_w) {
            if ((gl == wl && memcmp(gt, wt, gl) == 0) ||
                (tolerant && close_enough(gt, gl, wt, wl, opts)))
                continue;
            reward_excerpt(ew, sizeof ew, wt, wl, CODE_TOKEN_EXCERPT);
            reward_excerpt(eg, sizeof eg, gt, gl, CODE_TOKEN_EXCERPT);
            put_why(why, why_cap, "token %zu (line %zu): expected '%s', got '%s'", k, gline, ew,
                    eg);
            return 0;
        }
        if (has_w) { /* the output stopped early */
            size_t total = k + count_rest(&w);
            reward_excerpt(ew, sizeof ew, wt, wl, CODE_TOKEN_EXCERPT);
            if (k == 1)
                put_why(why, why_cap, "no output, expected %zu token%s", total, plural(total));
            else
                put_why(why, why_cap, "output ends after %zu token%s, expected %zu (next '%s')",
                        k - 1, plural(k - 1), total, ew);
            return 0;
        }
        size_t extra = 1 + count_rest(&g);
        reward_excerpt(eg, sizeof eg, gt, gl, CODE_TOKEN_EXCERPT);
        if (k == 1)
            put_why(why, why_cap, "expected no output, got %zu token%s (line %zu: '%s')", extra,
                    plural(extra), gline, eg);
        else
            put_why(why, why_cap, "%zu extra token%s after the expected output (line %zu: '%s')",
                    extra, plural(extra), gline, eg);
        return 0;
    }
}
