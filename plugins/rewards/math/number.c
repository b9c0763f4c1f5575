/* number.c: number scanning, answer cleaning and exact comparison (see number.h). */
#include "number.h"

#include <stdint.h>
#include <string.h>

#include "ascii.h"

/* ---- Scanning ------------------------------------------------------------ */

/* Length of the run of digits at s[p..len). */
static size_t digit_run(const char *s, size_t len, size_t p)
{
    size_t q = p;
    while (q < len && math_is_digit(s[q]))
        q++;
    return q - p;
}

/* An unsigned integer at s[p]: plain digits, or one to three digits followed
 * by groups ",ddd" of exactly three digits. A comma that does not start such a
 * group ends the integer, so "1,00" is 1 and "(1, 0)" holds two integers:
 * only the strict form reads as thousands. */
static size_t scan_uint(const char *s, size_t len, size_t p)
{
    size_t n = digit_run(s, len, p);
    if (n == 0 || n > 3 || (n == 1 && s[p] == '0')) /* "0,125" groups nothing */
        return n;
    size_t q = p + n;
    /* Look at exactly four bytes per group, so a long digit run after a comma
     * is not read twice. */
    while (q + 4 <= len && s[q] == ',' && math_is_digit(s[q + 1]) && math_is_digit(s[q + 2]) &&
           math_is_digit(s[q + 3]) && (q + 4 == len || !math_is_digit(s[q + 4])))
        q += 4;
    return q - p;
}

/* An unsigned decimal at s[p]: integer, integer.digits or .digits. A '.' not
 * followed by a digit is left alone (it ends a sentence: "it is 42."). */
static size_t scan_decimal(const char *s, size_t len, size_t p, math_decimal *d)
{
    size_t q = p;
    size_t n = scan_uint(s, len, q);
    d->int_part = s + q;
    d->int_len = n;
    q += n;
    d->frac_part = s + q;
    d->frac_len = 0;
    if (q + 1 < len && s[q] == '.' && math_is_digit(s[q + 1])) {
        size_t f = digit_run(s, len, q + 1);
        d->frac_part = s + q + 1;
        d->frac_len = f;
        q += 1 + f;
    }
    if (d->int_len == 0 && d->frac_len == 0)
        return 0;
    return q - p;
}

static size_t skip_space(const char *s, size_t len, size_t p)
{
    while (p < len && math_is_space(s[p]))
        p++;
    return p;
}

/* `\frac{a}{b}` (or \dfrac, \tfrac) at s[p] with integer a (maybe signed) and
 * b, whitespace allowed inside the braces. Anything richer (\frac{a+1}{2},
 * \frac12) is not a number here; it then compares as text. */
static size_t scan_frac_command(const char *s, size_t len, size_t p, math_number *out)
{
    static const char *const names[] = {"\\frac", "\\dfrac", "\\tfrac"};
    size_t q = p, name_len = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (len - p >= n && memcmp(s + p, names[i], n) == 0) {
            name_len = n;
            break;
        }
    }
    if (!name_len)
        return 0;
    q = skip_space(s, len, q + name_len);
    if (q >= len || s[q] != '{')
        return 0;
    q = skip_space(s, len, q + 1);
    int neg = 0;
    if (q < len && (s[q] == '-' || s[q] == '+'))
        neg = s[q++] == '-';
    size_t n = scan_uint(s, len, q);
    if (!n)
        return 0;
    out->num = (math_decimal){.neg = neg, .int_part = s + q, .int_len = n, .frac_part = s + q + n};
    q = skip_space(s, len, q + n);
    if (q >= len || s[q] != '}')
        return 0;
    q = skip_space(s, len, q + 1);
    if (q >= len || s[q] != '{')
        return 0;
    q = skip_space(s, len, q + 1);
    n = scan_uint(s, len, q);
    if (!n)
        return 0;
    out->den = (math_decimal){.int_part = s + q, .int_len = n, .frac_part = s + q + n};
    q = skip_space(s, len, q + n);
    if (q >= len || s[q] != '}')
        return 0;
    out->is_fraction = 1;
    return q + 1 - p;
}

size_t math_number_scan(const char *s, size_t len, size_t pos, math_number *out)
{
    memset(out, 0, sizeof *out);
    if (pos >= len)
        return 0;
    size_t q = pos;
    int neg = 0;
    if (s[q] == '-' || s[q] == '+')
        neg = s[q++] == '-';
    if (q < len && s[q] == '\\') {
        size_t n = scan_frac_command(s, len, q, out);
        if (!n)
            return 0;
        out->num.neg ^= neg;
        return q + n - pos;
    }
    size_t n = scan_decimal(s, len, q, &out->num);
    if (!n)
        return 0;
    out->num.neg = neg;
    q += n;
    /* a/b only between integers: "1.5/2" is not a simple fraction. */
    if (out->num.frac_len == 0 && out->num.int_len > 0 && q + 1 < len && s[q] == '/' &&
        math_is_digit(s[q + 1])) {
        size_t m = scan_uint(s, len, q + 1);
        out->den = (math_decimal){.int_part = s + q + 1, .int_len = m, .frac_part = s + q + 1 + m};
        out->is_fraction = 1;
        q += 1 + m;
    }
    return q - pos;
}

int math_number_parse(const char *s, size_t len, math_number *out)
{
    if (len == 0)
        return 0;
    size_t n = math_number_scan(s, len, 0, out);
    if (n == len)
        return 1;
    /* Thousands grouped by spaces, the whole answer: "1 000", "12 345 678". */
    if (n > 0 && n <= 3 && s[n] == ' ' && !out->is_fraction && out->num.frac_len == 0 &&
        out->num.int_len == n - (size_t)(s[0] == '-' || s[0] == '+')) {
        size_t q = n;
        while (q + 4 <= len && s[q] == ' ' && math_is_digit(s[q + 1]) &&
               math_is_digit(s[q + 2]) && math_is_digit(s[q + 3]) &&
               (q + 4 == len || s[q + 4] == ' '))
            q += 4;
        if (q == len) {
            out->num.int_len = len - (size_t)(out->num.int_part - s);
            out->num.frac_part = s + len;
            return 1;
        }
    }
    /* A decimal comma: digits, one comma, digits, where the comma cannot
     * group thousands ("3,75", "0,125", "1234,5"; "10,300" is 10300). */
    if (n > 0 && s[n] == ',' && !out->is_fraction && out->num.frac_len == 0 &&
        out->num.int_len > 0 && !memchr(out->num.int_part, ',', out->num.int_len)) {
        size_t f = digit_run(s, len, n + 1);
        int zero_lead = out->num.int_len == 1 && out->num.int_part[0] == '0';
        if (f > 0 && n + 1 + f == len && (f != 3 || zero_lead || out->num.int_len > 3)) {
            out->num.frac_part = s + n + 1;
            out->num.frac_len = f;
            return 1;
        }
    }
    return 0;
}

/* ---- Cleaning -------------------------------------------------------------- */

static void trim(const char **s, size_t *len)
{
    while (*len && math_is_space(**s)) {
        (*s)++;
        (*len)--;
    }
    while (*len && math_is_space((*s)[*len - 1]))
        (*len)--;
}

static void strip_period(const char **s, size_t *len)
{
    if (*len && (*s)[*len - 1] == '.') {
        (*len)--;
        trim(s, len);
    }
}

/* Drops the delimiters `open` and `close` around the whole text. */
static int strip_pair(const char **s, size_t *len, const char *open, const char *close)
{
    size_t o = strlen(open), c = strlen(close);
    if (*len < o + c || memcmp(*s, open, o) != 0 || memcmp(*s + *len - c, close, c) != 0)
        return 0;
    *s += o;
    *len -= o + c;
    trim(s, len);
    return 1;
}

void math_answer_clean(const char **s, size_t *len)
{
    trim(s, len);
    /* The period may sit outside or inside the dollars: "$5$." and "$5.$". */
    strip_period(s, len);
    /* Markdown bold and display-maths delimiters around the whole answer;
     * a bounded number of rounds keeps this linear. */
    for (int round = 0; round < 4; round++)
        if (!strip_pair(s, len, "**", "**") && !strip_pair(s, len, "\\[", "\\]") &&
            !strip_pair(s, len, "\\(", "\\)"))
            break;
    if (*len >= 2 && (*s)[0] == '\\' && (*s)[1] == '$') {
        *s += 2;
        *len -= 2;
    }
    while (*len && **s == '$') {
        (*s)++;
        (*len)--;
    }
    while (*len && (*s)[*len - 1] == '$')
        (*len)--;
    trim(s, len);
    strip_period(s, len);
    /* "\approx 12", "≈ 12": an approximate answer is judged as its value */
    static const char *const approx[] = {"\\approx", "\xe2\x89\x88"};
    for (size_t k = 0; k < 2; k++) {
        size_t n = strlen(approx[k]);
        if (*len > n && memcmp(*s, approx[k], n) == 0 &&
            (k == 1 || !math_is_alpha((*s)[n]))) {
            *s += n;
            *len -= n;
            trim(s, len);
            break;
        }
    }
}

/* ---- Comparison ------------------------------------------------------------ */

/* The digits that carry the value: the integer part without leading zeros
 * (and their separators), the fraction without trailing zeros. */
typedef struct digits {
    const char *ip;
    size_t il;
    const char *fp;
    size_t fl;
} digits;

static digits significant(const math_decimal *d)
{
    digits g = {d->int_part, d->int_len, d->frac_part, d->frac_len};
    while (g.il && (g.ip[0] == '0' || g.ip[0] == ',' || g.ip[0] == ' ')) {
        g.ip++;
        g.il--;
    }
    while (g.fl && g.fp[g.fl - 1] == '0')
        g.fl--;
    return g;
}

/* Digit strings equal when thousands separators are ignored. */
static int same_digits(const char *a, size_t al, const char *b, size_t bl)
{
    size_t i = 0, j = 0;
    for (;;) {
        while (i < al && (a[i] == ',' || a[i] == ' '))
            i++;
        while (j < bl && (b[j] == ',' || b[j] == ' '))
            j++;
        if (i == al || j == bl)
            return i == al && j == bl;
        if (a[i++] != b[j++])
            return 0;
    }
}

/* Decimals compare digit by digit, so any length is exact without arithmetic. */
static int decimals_equal(const math_decimal *a, const math_decimal *b)
{
    digits x = significant(a), y = significant(b);
    int x_zero = !x.il && !x.fl, y_zero = !y.il && !y.fl;
    if (x_zero || y_zero)
        return x_zero && y_zero; /* -0 is 0 */
    return a->neg == b->neg && same_digits(x.ip, x.il, y.ip, y.il) &&
           same_digits(x.fp, x.fl, y.fp, y.fl);
}

/* A rational sign * num / den, reduced, den > 0, zero with neg = 0. */
typedef struct rational {
    int neg;
    uint64_t num, den;
} rational;

/* v = v * 10 + digit for each digit of s[0..n) (commas skipped); 0 on overflow. */
static int accumulate(uint64_t *v, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ',' || s[i] == ' ')
            continue;
        unsigned d = (unsigned)(s[i] - '0');
        if (*v > (UINT64_MAX - d) / 10)
            return 0;
        *v = *v * 10 + d;
    }
    return 1;
}

static int decimal_to_rational(const math_decimal *d, rational *r)
{
    digits g = significant(d);
    r->neg = d->neg;
    r->num = 0;
    r->den = 1;
    if (!accumulate(&r->num, g.ip, g.il) || !accumulate(&r->num, g.fp, g.fl))
        return 0;
    for (size_t i = 0; i < g.fl; i++) {
        if (r->den > UINT64_MAX / 10)
            return 0;
        r->den *= 10;
    }
    return 1;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The reduced value of n, or 0 when it does not fit 64 bits (or divides by 0). */
static int to_rational(const math_number *n, rational *r)
{
    if (!decimal_to_rational(&n->num, r))
        return 0;
    if (n->is_fraction) {
        /* Both parts are integers, so r->den is 1 and the quotient is num/den. */
        rational d;
        if (!decimal_to_rational(&n->den, &d) || d.num == 0)
            return 0;
        r->den = d.num;
    }
    if (r->num == 0) {
        r->neg = 0;
        r->den = 1;
        return 1;
    }
    uint64_t g = gcd(r->num, r->den);
    r->num /= g;
    r->den /= g;
    return 1;
}

/* Whether den has a prime factor other than 2 and 5: its fraction never ends
 * as a decimal. */
static int recurring(uint64_t den)
{
    while (den % 2 == 0)
        den /= 2;
    while (den % 5 == 0)
        den /= 5;
    return den != 1;
}

/* A decimal with k >= MATH_DECIMAL_DIGITS fraction digits against a fraction
 * that never ends (1/7, 1/3): equal when the decimal is the fraction rounded
 * at its last digit, d = D / 10^k with D = round(p 10^k / q), exactly in 128
 * bits (0.666667 is 2/3, 0.666666 is not). -1 when it is no such pair or does
 * not fit. */
static int decimal_of_fraction(const math_number *dec, const rational *f)
{
    digits g = significant(&dec->num);
    size_t k = dec->num.frac_len;
    if (dec->is_fraction || k < MATH_DECIMAL_DIGITS || k > 18 || !recurring(f->den) ||
        f->den > (1u << 31) || f->num > UINT64_MAX / 10)
        return -1;
    uint64_t D = 0, ten = 1;
    if (!accumulate(&D, g.ip, g.il) || !accumulate(&D, dec->num.frac_part, k))
        return -1;
    for (size_t i = 0; i < k; i++)
        ten *= 10;
    if (D == 0 || (dec->num.neg != 0) != (f->neg != 0))
        return 0;
    /* p 10^k / q, cut and rounded */
    unsigned __int128 p10 = (unsigned __int128)f->num * ten;
    unsigned __int128 cut = p10 / f->den, rem = p10 % f->den; /* p 10^k = cut q + rem */
    unsigned __int128 rounded = cut + (2 * rem >= f->den);
    return D == rounded;
}

int math_numbers_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    math_number x, y;
    if (!math_number_parse(a, alen, &x) || !math_number_parse(b, blen, &y))
        return -1;
    if (!x.is_fraction && !y.is_fraction)
        return decimals_equal(&x.num, &y.num);
    rational rx, ry;
    if (to_rational(&x, &rx) && to_rational(&y, &ry)) {
        if (rx.neg == ry.neg && rx.num == ry.num && rx.den == ry.den)
            return 1;
        int r = x.is_fraction ? decimal_of_fraction(&y, &rx) : decimal_of_fraction(&x, &ry);
        return r > 0;
    }
    return -1; /* past 64 bits or over zero: the parser decides */
}
