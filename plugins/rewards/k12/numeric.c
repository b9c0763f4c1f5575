/* numeric.c: numbers with units (see numeric.h). */
#include "numeric.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "units.h"

/* Significant digits kept of a numeral: far more than a double holds, so
 * the value is the correctly rounded one; the rest only shifts the point. */
#define SIG_MAX 40
/* Exponents are saturated here: anything larger is inf or 0 anyway. */
#define EXP_MAX 100000L

/* A decimal numeral as 0.<digits> x 10^point. */
typedef struct numeral {
    char digits[SIG_MAX + 1];
    size_t n;
    long point;
} numeral;

static void put_digit(numeral *m, char d, int integer_part)
{
    if (m->n == 0 && d == '0') { /* a leading zero */
        if (!integer_part)
            m->point--;
        return;
    }
    if (m->n < SIG_MAX)
        m->digits[m->n++] = d;
    if (integer_part && m->point < EXP_MAX)
        m->point++;
}

static double numeral_value(const numeral *m, int neg, long exp10)
{
    if (m->n == 0)
        return 0.0;
    long e = m->point + exp10;
    e = e > EXP_MAX ? EXP_MAX : e < -EXP_MAX ? -EXP_MAX : e;
    char buf[SIG_MAX + 32];
    snprintf(buf, sizeof buf, "%s0.%.*se%ld", neg ? "-" : "", (int)m->n, m->digits, e);
    return strtod(buf, NULL);
}

static size_t digit_run(const char *t, size_t len, size_t i)
{
    size_t j = i;
    while (j < len && k12_is_digit(t[j]))
        j++;
    return j - i;
}

/* A numeral at t[i] (no sign): its bytes, 0 if none. */
static size_t scan_decimal(const char *t, size_t len, size_t i, numeral *m)
{
    memset(m, 0, sizeof *m);
    size_t p = i, run = digit_run(t, len, p);
    /* 1,234,567: one to three digits, then groups of exactly three. */
    int grouped = run >= 1 && run <= 3 && p + run + 4 <= len && t[p + run] == ',' &&
                  digit_run(t, len, p + run + 1) == 3;
    for (size_t k = 0; k < run; k++)
        put_digit(m, t[p + k], 1);
    p += run;
    while (grouped && p + 4 <= len && t[p] == ',' && digit_run(t, len, p + 1) == 3) {
        for (size_t k = 1; k <= 3; k++)
            put_digit(m, t[p + k], 1);
        p += 4;
    }
    if (p + 1 < len && t[p] == '.' && k12_is_digit(t[p + 1])) {
        size_t f = digit_run(t, len, p + 1);
        for (size_t k = 1; k <= f; k++)
            put_digit(m, t[p + k], 0);
        p += 1 + f;
    }
    return p > i && (run || p > i + 1) ? p - i : 0;
}

/* An integer exponent at t[i] ([sign] digits, saturated): its bytes, 0 if none. */
static size_t scan_exponent(const char *t, size_t len, size_t i, long *e)
{
    size_t p = i;
    int neg = 0;
    if (p < len && (t[p] == '-' || t[p] == '+'))
        neg = t[p++] == '-';
    size_t run = digit_run(t, len, p);
    if (!run)
        return 0;
    long v = 0;
    for (size_t k = 0; k < run; k++)
        if (v < EXP_MAX)
            v = v * 10 + (t[p + k] - '0');
    *e = neg ? -v : v;
    return p + run - i;
}

/* "×10^n" and its spellings after a mantissa at t[i]: bytes, 0 if none. */
static size_t scan_times_ten(const char *t, size_t len, size_t i, long *e)
{
    static const char *const times[] = {"\xc3\x97" /* × */, "\xc2\xb7" /* · */, "x", "X", "*",
                                        NULL};
    size_t p = i;
    if (p < len && t[p] == ' ')
        p++;
    size_t k = 0;
    for (; times[k]; k++)
        if (k12_starts(t, len, p, times[k]))
            break;
    if (!times[k])
        return 0;
    p += strlen(times[k]);
    if (p < len && t[p] == ' ')
        p++;
    if (!k12_starts(t, len, p, "10^"))
        return 0;
    p += 3;
    int brace = p < len && t[p] == '{';
    size_t n = scan_exponent(t, len, p + brace, e);
    if (!n)
        return 0;
    p += brace + n;
    if (brace) {
        if (p >= len || t[p] != '}')
            return 0;
        p++;
    }
    return p - i;
}

/* \frac{[sign]a}{b} at t[i]: bytes, 0 if none. */
static size_t scan_frac(const char *t, size_t len, size_t i, double *v)
{
    if (!k12_starts(t, len, i, "\\frac{"))
        return 0;
    size_t p = i + 6;
    int neg = 0;
    if (p < len && (t[p] == '-' || t[p] == '+'))
        neg = t[p++] == '-';
    numeral a, b;
    size_t n = scan_decimal(t, len, p, &a);
    if (!n || !k12_starts(t, len, p + n, "}{"))
        return 0;
    p += n + 2;
    n = scan_decimal(t, len, p, &b);
    if (!n || p + n >= len || t[p + n] != '}')
        return 0;
    double d = numeral_value(&b, 0, 0);
    *v = d != 0 ? numeral_value(&a, neg, 0) / d : NAN;
    return p + n + 1 - i;
}

/* A number at t[i], the sign included: bytes, 0 if none. */
static size_t scan_number(const char *t, size_t len, size_t i, double *v)
{
    size_t p = i;
    int neg = 0;
    if (p < len && (t[p] == '-' || t[p] == '+'))
        neg = t[p++] == '-';
    size_t n = scan_frac(t, len, p, v);
    if (n) {
        if (neg)
            *v = -*v;
        return p + n - i;
    }
    numeral m;
    n = scan_decimal(t, len, p, &m);
    if (!n)
        return 0;
    p += n;
    numeral den;
    size_t d;
    long e = 0;
    if (p + 1 < len && t[p] == '/' && (d = scan_decimal(t, len, p + 1, &den))) {
        double q = numeral_value(&den, 0, 0);
        *v = q != 0 ? numeral_value(&m, neg, 0) / q : NAN;
        return p + 1 + d - i;
    }
    if (p < len && (t[p] == 'e' || t[p] == 'E') && (d = scan_exponent(t, len, p + 1, &e)))
        p += 1 + d;
    else if ((d = scan_times_ten(t, len, p, &e)))
        p += d;
    *v = numeral_value(&m, neg, e);
    return p - i;
}

/* ---- units -------------------------------------------------------------- */

/* A character that may be part of a unit at t[i]: its bytes, 0 if none.
 * `first`: digits and the joiners '/', '^', '{', '}', '·' cannot start one. */
static size_t unit_char(const char *t, size_t len, size_t i, int first)
{
    unsigned char c = (unsigned char)t[i];
    if (k12_is_alpha((char)c) || c == '%')
        return 1;
    if (!first && (k12_is_digit((char)c) || c == '/' || c == '^' || c == '{' || c == '}'))
        return 1;
    if (len - i >= 2 && ((c == 0xC2 && (unsigned char)t[i + 1] == 0xB0) ||      /* ° */
                         (c == 0xCE && (unsigned char)t[i + 1] == 0xBC) ||      /* μ */
                         (c == 0xCE && (unsigned char)t[i + 1] == 0xA9) ||      /* Ω */
                         (!first && c == 0xC2 && (unsigned char)t[i + 1] == 0xB7))) /* · */
        return 2;
    /* CJK ideographs, U+3400..U+9FFF, not the CJK punctuation before them */
    if (len - i >= 3 &&
        ((c >= 0xE4 && c <= 0xE9) || (c == 0xE3 && (unsigned char)t[i + 1] >= 0x90)))
        return 3;
    return 0;
}

/* The unit right after a number ending at t[i] (one space allowed between). */
static void scan_unit(const char *t, size_t len, size_t i, k12_quantity *q)
{
    size_t p = i < len && t[i] == ' ' ? i + 1 : i;
    size_t e = p, n;
    if (p >= len || !unit_char(t, len, p, 1))
        return;
    while (e < len && (n = unit_char(t, len, e, e == p)))
        e += n;
    while (e > p && (t[e - 1] == '/' || t[e - 1] == '^' || t[e - 1] == '{'))
        e--;
    q->unit = t + p;
    q->unit_len = e - p;
    q->text_len = e - (size_t)(q->text - t);
}

/* ---- the quantity of an answer ------------------------------------------ */

static size_t skip_lead(const char *t, size_t len, size_t i)
{
    static const char *const leads[] = {"=",
                                        "\xe2\x89\x88" /* ≈ */,
                                        "\xe5\xa4\xa7\xe7\xba\xa6" /* 大约 */,
                                        "\xe7\xba\xa6" /* 约 */,
                                        "approximately",
                                        "about",
                                        "$",
                                        "\xc2\xa5" /* ¥ */,
                                        "\xe2\x82\xac" /* € */,
                                        "\xc2\xa3" /* £ */,
                                        NULL};
    for (int again = 1; again;) {
        again = 0;
        while (i < len && (t[i] == ' ' || t[i] == '*'))
            i++;
        for (size_t k = 0; leads[k]; k++)
            if (k12_starts_ci(t, len, i, leads[k])) {
                i += strlen(leads[k]);
                again = 1;
                break;
            }
    }
    return i;
}

/* An operator or relation at t[i]: the number before it is not the answer. */
static int operator_at(const char *t, size_t len, size_t i)
{
    static const char *const ops[] = {"+", "-", "*", "/", "=", "<", ">", "^",
                                      "\xc3\x97", "\xc3\xb7", "\xe2\x89\x88", NULL};
    if (i < len && t[i] == ' ')
        i++;
    for (size_t k = 0; ops[k]; k++)
        if (k12_starts(t, len, i, ops[k]))
            return 1;
    return 0;
}

/* A '+' or '-' is a sign unless it follows an operand: "x = -3" is minus
 * three, "5-3" a subtraction whose last number is 3. */
static int sign_allowed(const char *t, size_t i)
{
    if (i == 0)
        return 1;
    char p = t[i - 1];
    return !(k12_is_alnum(p) || p == ')' || p == ']' || p == '}');
}

/* Digits right after a letter, '^', '_' or "^{" belong to a unit or a name
 * ("cm2", "cm^2", "x_1", "v2"), not to a number of their own. */
static int attached(const char *t, size_t i)
{
    char p = i > 0 ? t[i - 1] : ' ';
    if (p == '{' && i > 1)
        p = t[i - 2] == '^' || t[i - 2] == '_' ? '^' : '{';
    return k12_is_alpha(p) || p == '^' || p == '_';
}

static int number_start(const char *t, size_t len, size_t i)
{
    char c = t[i];
    if (attached(t, i))
        return 0;
    if (k12_is_digit(c) || k12_starts(t, len, i, "\\frac{"))
        return 1;
    if (c == '.' && i + 1 < len && k12_is_digit(t[i + 1]))
        return 1;
    return (c == '-' || c == '+') && sign_allowed(t, i);
}

static int leading(const char *t, size_t len, k12_quantity *q)
{
    size_t i = skip_lead(t, len, 0), n;
    double v;
    if (i >= len || !number_start(t, len, i) || !(n = scan_number(t, len, i, &v)))
        return 0;
    *q = (k12_quantity){.value = v, .text = t + i, .text_len = n};
    scan_unit(t, len, i + n, q);
    return !operator_at(t, len, (size_t)(q->text - t) + q->text_len);
}

int k12_quantity_find(const char *t, size_t len, k12_quantity *q)
{
    memset(q, 0, sizeof *q);
    if (leading(t, len, q))
        return 1;
    /* The last number; its unit is read once at the end, so the scan stays
     * linear whatever follows each number. */
    size_t last = 0, last_n = 0;
    double last_v = 0;
    for (size_t i = 0; i < len;) {
        double v;
        size_t n = number_start(t, len, i) ? scan_number(t, len, i, &v) : 0;
        if (n) {
            last = i;
            last_n = n;
            last_v = v;
            i += n; /* a number is never rescanned from inside */
        } else
            i++;
    }
    memset(q, 0, sizeof *q);
    if (!last_n)
        return 0;
    *q = (k12_quantity){.value = last_v, .text = t + last, .text_len = last_n};
    scan_unit(t, len, last + last_n, q);
    return 1;
}

int k12_quantity_whole(const char *t, size_t len, k12_quantity *q)
{
    memset(q, 0, sizeof *q);
    if (!leading(t, len, q))
        return 0;
    for (size_t i = (size_t)(q->text - t) + q->text_len; i < len; i++)
        if (!strchr(" .,;!", t[i]) || !t[i])
            return 0;
    return 1;
}

k12_compare k12_quantity_compare(const k12_quantity *got, const k12_quantity *gold,
                                 double rel_tol, double abs_tol, int require_unit)
{
    double r = got->value, g = gold->value;
    if (got->unit_len && gold->unit_len) {
        const k12_unit *ur = k12_unit_find(got->unit, got->unit_len);
        const k12_unit *ug = k12_unit_find(gold->unit, gold->unit_len);
        if (ur && ug) {
            if (strcmp(ur->quantity, ug->quantity) != 0)
                return K12_UNIT_MISMATCH;
            r *= ur->factor;
            g *= ug->factor;
            /* the tolerance is in the gold's unit, not the base unit */
            abs_tol *= ug->factor;
        } else if (!k12_unit_same(got->unit, got->unit_len, gold->unit, gold->unit_len))
            return K12_UNIT_MISMATCH;
    } else if (gold->unit_len && require_unit)
        return K12_UNIT_MISSING;
    if (!isfinite(r) || !isfinite(g))
        return K12_DIFFERENT;
    return fabs(r - g) <= fmax(abs_tol, rel_tol * fabs(g)) ? K12_EQUAL : K12_DIFFERENT;
}
