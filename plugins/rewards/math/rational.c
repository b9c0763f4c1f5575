/* rational.c: exact rationals with overflow detection (see rational.h). */
#include "rational.h"

#include <math.h>

#define U128_MAX (~(math_u128)0)

static math_u128 gcd(math_u128 a, math_u128 b)
{
    while (b) {
        math_u128 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* *out = a * b; 0 on overflow. */
static int mul_ok(math_u128 a, math_u128 b, math_u128 *out)
{
    if (a && b > U128_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

math_rat math_rat_make(int neg, math_u128 num, math_u128 den)
{
    math_rat r = {neg, num, den};
    if (num == 0) {
        r.neg = 0;
        r.den = 1;
        return r;
    }
    math_u128 g = gcd(num, den);
    r.num /= g;
    r.den /= g;
    return r;
}

math_rat math_rat_int(int64_t v)
{
    math_u128 m = v < 0 ? (math_u128)(-(v + 1)) + 1 : (math_u128)v;
    return math_rat_make(v < 0, m, 1);
}

int math_rat_is_zero(const math_rat *a) { return a->num == 0; }

int math_rat_equal(const math_rat *a, const math_rat *b)
{
    return a->neg == b->neg && a->num == b->num && a->den == b->den;
}

math_rat math_rat_neg(math_rat a)
{
    if (a.num)
        a.neg = !a.neg;
    return a;
}

int math_rat_add(const math_rat *a, const math_rat *b, math_rat *out)
{
    /* a/b + c/d over the least common denominator keeps the terms small. */
    math_u128 g = gcd(a->den, b->den), x, y, den;
    if (!mul_ok(a->num, b->den / g, &x) || !mul_ok(b->num, a->den / g, &y) ||
        !mul_ok(a->den, b->den / g, &den))
        return RAT_OVERFLOW;
    if (a->neg == b->neg) {
        if (x > U128_MAX - y)
            return RAT_OVERFLOW;
        *out = math_rat_make(a->neg, x + y, den);
    } else if (x >= y)
        *out = math_rat_make(a->neg, x - y, den);
    else
        *out = math_rat_make(b->neg, y - x, den);
    return RAT_OK;
}

int math_rat_sub(const math_rat *a, const math_rat *b, math_rat *out)
{
    math_rat nb = math_rat_neg(*b);
    return math_rat_add(a, &nb, out);
}

int math_rat_mul(const math_rat *a, const math_rat *b, math_rat *out)
{
    if (!a->num || !b->num) {
        *out = math_rat_int(0);
        return RAT_OK;
    }
    /* Cross-reduce first so that a product that fits is never refused. */
    math_u128 g1 = gcd(a->num, b->den), g2 = gcd(b->num, a->den), n, d;
    if (!mul_ok(a->num / g1, b->num / g2, &n) || !mul_ok(a->den / g2, b->den / g1, &d))
        return RAT_OVERFLOW;
    *out = math_rat_make(a->neg != b->neg, n, d);
    return RAT_OK;
}

int math_rat_div(const math_rat *a, const math_rat *b, math_rat *out)
{
    if (!b->num)
        return RAT_UNDEFINED;
    math_rat inv = {b->neg, b->den, b->num};
    return math_rat_mul(a, &inv, out);
}

int math_rat_pow(const math_rat *a, int64_t e, math_rat *out)
{
    if (a->num == 0) {
        if (e <= 0)
            return RAT_UNDEFINED; /* 0^0 and 0^-n: documented as undefined */
        *out = *a;
        return RAT_OK;
    }
    if (a->num == 1 && a->den == 1) { /* 1 and -1 stay small for any exponent */
        *out = math_rat_make(a->neg && (e & 1), 1, 1);
        return RAT_OK;
    }
    if (e < -1024 || e > 1024)
        return RAT_OVERFLOW; /* |base| != 1 and the result needs more than 128 bits */
    uint64_t k = (uint64_t)(e < 0 ? -e : e);
    math_u128 n = 1, d = 1, bn = a->num, bd = a->den;
    /* Square-and-multiply: at most 11 squarings, each checked. */
    for (;;) {
        if (k & 1) {
            if (!mul_ok(n, bn, &n) || !mul_ok(d, bd, &d))
                return RAT_OVERFLOW;
        }
        k >>= 1;
        if (!k)
            break;
        if (!mul_ok(bn, bn, &bn) || !mul_ok(bd, bd, &bd))
            return RAT_OVERFLOW;
    }
    int neg = a->neg && ((e < 0 ? -e : e) & 1);
    /* Powers of a reduced fraction stay reduced. */
    *out = e < 0 ? (math_rat){neg, d, n} : (math_rat){neg, n, d};
    return RAT_OK;
}

/* floor(sqrt(n)) by Newton's method from a floating-point guess. */
static math_u128 isqrt(math_u128 n)
{
    if (n < 2)
        return n;
    long double g = sqrtl((long double)n);
    math_u128 x = g < 1 ? 1 : g >= 18446744073709551616.0L ? ((math_u128)1 << 64) : (math_u128)g;
    /* One step from any positive guess lands at or above floor(sqrt(n))
     * (AM-GM); from there the iteration decreases to it. */
    x = (x + n / x) / 2;
    for (;;) {
        math_u128 y = (x + n / x) / 2;
        if (y >= x)
            return x;
        x = y;
    }
}

static int perfect_square(math_u128 n, math_u128 *root)
{
    math_u128 r = isqrt(n), sq;
    if (!mul_ok(r, r, &sq) || sq != n)
        return 0;
    *root = r;
    return 1;
}

int math_rat_sqrt(const math_rat *a, math_rat *out)
{
    if (a->neg)
        return RAT_UNDEFINED;
    math_u128 rn, rd;
    if (!perfect_square(a->num, &rn) || !perfect_square(a->den, &rd))
        return RAT_OVERFLOW;
    *out = math_rat_make(0, rn, rd);
    return RAT_OK;
}

int math_rat_factorial(const math_rat *a, math_rat *out)
{
    if (a->neg || a->den != 1)
        return RAT_UNDEFINED;
    if (a->num > 34)
        return RAT_OVERFLOW;
    math_u128 f = 1;
    for (unsigned i = 2; i <= (unsigned)a->num; i++)
        f *= i;
    *out = math_rat_make(0, f, 1);
    return RAT_OK;
}

int math_rat_binom(const math_rat *n, const math_rat *k, math_rat *out)
{
    if (n->neg || k->neg || n->den != 1 || k->den != 1)
        return RAT_OVERFLOW; /* generalised binomials: floating point */
    if (k->num > n->num) {
        *out = math_rat_int(0);
        return RAT_OK;
    }
    math_u128 kk = k->num < n->num - k->num ? k->num : n->num - k->num;
    if (kk > 200)
        return RAT_OVERFLOW;
    /* c * (n - i) / (i + 1) stays an integer at every step; divide by the
     * gcd first so that the product fits whenever the result does. */
    math_u128 c = 1;
    for (math_u128 i = 0; i < kk; i++) {
        math_u128 m = n->num - i, d = i + 1, g = gcd(c, d);
        math_u128 c2 = c / g, d2 = d / g, m2 = m / d2, t;
        if (!mul_ok(c2, m2, &t))
            return RAT_OVERFLOW;
        c = t;
    }
    *out = math_rat_make(0, c, 1);
    return RAT_OK;
}

double math_rat_to_double(const math_rat *a)
{
    long double v = (long double)a->num / (long double)a->den;
    return (double)(a->neg ? -v : v);
}

math_u128 math_pow10_u128(unsigned e)
{
    if (e > 38)
        return 0;
    math_u128 p = 1;
    while (e--)
        p *= 10;
    return p;
}
