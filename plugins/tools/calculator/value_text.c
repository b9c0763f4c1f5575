/* value_text.c: a rational as the calculator's answer text (see value_text.h). */
#include "value_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* z's decimal digits (a '-' first when negative), malloc'd; NULL when out
 * of memory. GMP's own allocation is not used, so free() frees it. */
static char *z_text(const mpz_t z)
{
    char *buf = malloc(mpz_sizeinbase(z, 10) + 2);
    if (buf)
        mpz_get_str(buf, 10, z);
    return buf;
}

/* a/b (both > 0) against 10^e: <0, 0 or >0, with t as scratch. */
static int cmp_pow10(const mpz_t a, const mpz_t b, long e, mpz_t t)
{
    mpz_ui_pow_ui(t, 10, (unsigned long)(e < 0 ? -e : e));
    if (e >= 0) {
        mpz_mul(t, t, b);
        return mpz_cmp(a, t);
    }
    mpz_mul(t, t, a);
    return mpz_cmp(t, b);
}

/* a/b (both > 0, a/b without an exact decimal) rounded to `digits`
 * significant digits, as %g writes it, malloc'd into *out: 0, or -1. */
static int approx_text(const mpz_t a, const mpz_t b, int digits, char **out)
{
    mpz_t t, x, y;
    mpz_inits(t, x, y, NULL);
    /* 10^e <= a/b < 10^(e+1); sizeinbase is exact or one over, so start near */
    long e = (long)mpz_sizeinbase(a, 10) - (long)mpz_sizeinbase(b, 10);
    while (cmp_pow10(a, b, e, t) < 0)
        e--;
    while (cmp_pow10(a, b, e + 1, t) >= 0)
        e++;
    /* round(a/b * 10^(digits-1-e)) = floor((2x + y) / 2y); never a tie, since a
     * value halfway between two decimals would have an exact decimal itself */
    long s = digits - 1 - e;
    mpz_ui_pow_ui(t, 10, (unsigned long)(s < 0 ? -s : s));
    if (s >= 0) {
        mpz_mul(x, a, t);
        mpz_set(y, b);
    } else {
        mpz_set(x, a);
        mpz_mul(y, b, t);
    }
    mpz_mul_2exp(x, x, 1);
    mpz_add(x, x, y);
    mpz_mul_2exp(y, y, 1);
    mpz_fdiv_q(x, x, y);
    mpz_ui_pow_ui(t, 10, (unsigned long)digits);
    if (mpz_cmp(x, t) == 0) { /* 9.999... rounded up to 10.00... */
        mpz_divexact_ui(x, x, 10);
        e++;
    }
    char *d = z_text(x);
    mpz_clears(t, x, y, NULL);
    if (!d)
        return -1;
    size_t len = strlen(d); /* `digits` digits */
    while (len > 1 && d[len - 1] == '0')
        len--;
    size_t cap = len + (size_t)digits + 32;
    char *buf = malloc(cap);
    if (!buf) {
        free(d);
        return -1;
    }
    if (e < -4 || e >= digits) {
        snprintf(buf, cap, "%c%s%.*se%c%02ld", d[0], len > 1 ? "." : "", (int)(len - 1), d + 1,
                 e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (e >= 0) {
        size_t whole = (size_t)e + 1; /* <= digits: d holds them, less stripped zeros */
        size_t w = 0;
        for (size_t i = 0; i < whole; i++)
            buf[w++] = i < len ? d[i] : '0';
        if (len > whole) {
            buf[w++] = '.';
            memcpy(buf + w, d + whole, len - whole);
            w += len - whole;
        }
        buf[w] = '\0';
    } else {
        snprintf(buf, cap, "0.%.*s%.*s", (int)(-e - 1), "0000", (int)len, d);
    }
    free(d);
    *out = buf;
    return 0;
}

/* v (not an integer, denominator 2^twos 5^fives) as its exact decimal. */
static char *decimal_text(const mpq_t v, unsigned long twos, unsigned long fives)
{
    /* v * 10^k is the integer n = |num| 2^(k - twos) 5^(k - fives); its last
     * k digits are the fraction, the last of them not 0 (k is the least) */
    unsigned long k = twos > fives ? twos : fives;
    mpz_t n, t;
    mpz_init(n);
    mpz_init(t);
    mpz_abs(n, mpq_numref(v));
    mpz_mul_2exp(n, n, k - twos);
    mpz_ui_pow_ui(t, 5, k - fives);
    mpz_mul(n, n, t);
    char *d = z_text(n);
    mpz_clear(n);
    mpz_clear(t);
    if (!d)
        return NULL;
    size_t len = strlen(d);
    char *buf = malloc(len + k + 4);
    if (buf) {
        char *w = buf;
        if (mpq_sgn(v) < 0)
            *w++ = '-';
        if (len <= k) {
            *w++ = '0';
            *w++ = '.';
            memset(w, '0', k - len);
            w += k - len;
            memcpy(w, d, len + 1);
        } else {
            memcpy(w, d, len - k);
            w += len - k;
            *w++ = '.';
            memcpy(w, d + len - k, k + 1);
        }
    }
    free(d);
    return buf;
}

int calc_value_text(const mpq_t v, int digits, char **text, size_t *len)
{
    char *out = NULL;
    if (mpz_cmp_ui(mpq_denref(v), 1) == 0) {
        out = z_text(mpq_numref(v));
    } else {
        mpz_t rest, five;
        mpz_init_set(rest, mpq_denref(v));
        mpz_init_set_ui(five, 5);
        unsigned long twos = mpz_scan1(rest, 0);
        mpz_tdiv_q_2exp(rest, rest, twos);
        unsigned long fives = mpz_remove(rest, rest, five);
        int exact = mpz_cmp_ui(rest, 1) == 0;
        mpz_clear(rest);
        mpz_clear(five);
        if (exact) {
            out = decimal_text(v, twos, fives);
        } else {
            mpz_t a;
            mpz_init(a);
            mpz_abs(a, mpq_numref(v));
            char *num = z_text(mpq_numref(v)), *den = z_text(mpq_denref(v)), *d = NULL;
            if (num && den && approx_text(a, mpq_denref(v), digits, &d) == 0) {
                size_t cap = strlen(num) + strlen(den) + strlen(d) + 8;
                out = malloc(cap);
                if (out)
                    snprintf(out, cap, "%s/%s ~ %s%s", num, den, mpq_sgn(v) < 0 ? "-" : "", d);
            }
            mpz_clear(a);
            free(num);
            free(den);
            free(d);
        }
    }
    if (!out)
        return -1;
    *text = out;
    *len = strlen(out);
    return 0;
}
